"""How much an offline analyzer's pattern match is worth (docs/analyzer-precision.md).

A rule that matched is evidence, not a judgement. These rules decide, without running anything:

- **test code**: test files and fixtures (by path, or a Python module that defines tests); rules
  that only make sense for production code do not report there, and a credential found there is
  at most P3 unless it has a live secret format;
- **high precision**: the short list of analyzer findings allowed to Block on their own — a
  live-format secret outside test code, and an injection (or unsafe deserialization) whose
  request input is visible in the change. Everything else an analyzer says can hold a change
  but needs a model reviewer, a verifier lens or a person to block it (`unconfirmed_pattern`);
- **defusing context**: a weak hash used as an HMAC/signing digest or for a cache key, and a
  shell command that is a constant string, are lowered with the reason shown;
- **one finding per rule per file**: repeated hits become one finding listing the lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import PurePosixPath

from reviews.domain.indexed_files import is_test_path, skip_reason_for_path

from .consensus import PERSON_PREFIX, peer_confirmers
from .severity_floors import REQUEST_INPUT_P0, DefectClass
from .types import NodeView, Priority

#: The offline analyzers' agent identities (reviews/pipeline/analyzer_runs.py registers them).
ANALYZER_AGENTS = frozenset({"ruff", "bandit", "secrets", "oxlint", "ast-grep"})
#: A tool's run uploaded as SARIF (reviews/services/sarif.py) is `sarif:<tool>`: a pattern
#: analyzer too, so it neither confirms nor is confirmed by another analyzer.
SARIF_AGENT_PREFIX = "sarif:"


def is_analyzer_agent(agent: str) -> bool:
    return agent in ANALYZER_AGENTS or agent.startswith(SARIF_AGENT_PREFIX)


# -- test code ---------------------------------------------------------------------------------

_FIXTURE_DIRS = frozenset({"fixtures", "fixture", "testdata", "test_data", "testutils", "mocks"})
_DEFINES_TESTS = re.compile(
    r"^\s*(?:async\s+)?def\s+test_\w*\s*\(|^\s*class\s+\w*Tests?\w*\s*\(.*TestCase", re.M
)


def is_test_code(path: str, text: str | None = None) -> bool:
    """Test files and fixtures: the index's path conventions, Django's `tests.py`, fixture
    directories, or a Python module that defines test functions or TestCase classes."""
    if is_test_path(path):
        return True
    pure = PurePosixPath(path)
    if pure.name in ("tests.py", "testing.py") or any(
        part.lower() in _FIXTURE_DIRS for part in pure.parts[:-1]
    ):
        return True
    return bool(text) and pure.suffix == ".py" and bool(_DEFINES_TESTS.search(text or ""))


#: A ruff finding in test code that is not code failing to run is at most this, and reported
#: only when the project asked for its rule (reviews/agents/tool_config.py).
TEST_RULE_PRIORITY = Priority.P3
_FAILS = re.compile(r"^(?:E9|F63|F7|F82[123]|PLE)")


def fails_in_tests(code: str) -> bool:
    """Ruff rules for code that cannot run (syntax and IO errors, undefined names, pylint
    errors) and pyflakes' findings: they matter in a test as anywhere; bugbear and style rules
    judge production habits tests break on purpose."""
    return bool(_FAILS.match(code)) or bool(re.fullmatch(r"F\d+", code))


def generated_code(path: str) -> bool:
    """Files nobody wrote by hand: built bundles (`dist/`, `build/`), vendored copies, minified
    scripts and source maps. Linters judge the source they come from, not these."""
    return skip_reason_for_path(path) is not None or path.lower().endswith(".map")


#: Bandit tests that only make sense for production code: silent in test code.
PRODUCTION_ONLY_RULES = frozenset(
    {
        "B101",  # assert: how tests are written
        "B104",  # binding every interface: test servers
        "B105",  # hard-coded password string
        "B106",  # hard-coded password argument
        "B107",  # hard-coded password default
        "B108",  # hard-coded temporary directory
        "B113",  # a request without a timeout
        "B311",  # `random`: test data, not keys
        "B404",  # importing subprocess
        "B603",  # subprocess without a shell
        "B607",  # a partial executable path
    }
)

# An `assert` that narrows a type for the checker (after an optional import, for a TypeGuard)
# states what the code already guarantees; bandit's B101 (asserts vanish under -O) is noise
# there. Only these shapes: a comparison with None, isinstance/issubclass/callable, and a call
# of a predicate named like a type guard (`is_x(…)`, `_is_prepared(…)`, `has_x(…)`).
_NARROWING_ASSERT = re.compile(
    r"^\s*assert\s+(?:not\s+)?(?:[\w.\[\]'\"]+\s+is\s+(?:not\s+)?None\b|"
    r"(?:isinstance|issubclass|callable)\(|[\w.]*\b_?(?:is|has)_\w+\()"
)


def narrowing_assert(lines: Sequence[str], start: int, end: int) -> bool:
    """Whether the assert statement on lines `start`..`end` (1-based) narrows a type."""
    text = " ".join(lines[start - 1 : end]) if 0 < start <= len(lines) else ""
    return bool(_NARROWING_ASSERT.match(text))


#: Secret scanner kinds with a format a provider issues (prefix or fixed shape): a match is a
#: real credential wherever it sits. Private keys are not listed: test suites carry test keys.
LIVE_SECRET_KINDS = frozenset(
    {"aws_access_key", "github_token", "api_key", "slack_token", "google_api_key", "stripe_key"}
)
# AWS documents its example keys with this suffix; Stripe test-mode keys charge nobody.
_NOT_LIVE = re.compile(r"(?:AKIA|ASIA)[A-Z0-9]{9}EXAMPLE\b|\b[sr]k_test_")


def live_secret(kind: str, text: str) -> bool:
    """Whether a secret of scanner `kind` found in line `text` has a live format."""
    return kind in LIVE_SECRET_KINDS and not _NOT_LIVE.search(text)


# -- documentation: examples are not credentials ---------------------------------------------

_DOC_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc", ".asciidoc"})
_DOC_NAMES = re.compile(r"^(?:change(?:s|log)|history|news|release[-_]?notes|authors)\b", re.I)
_DOC_DIRS = frozenset({"docs", "doc", "examples", "example", "samples"})
_CI_FILES = re.compile(
    r"^(?:\.github/workflows/[^/]+\.ya?ml|\.gitlab-ci\.ya?ml|\.circleci/config\.ya?ml|"
    r"azure-pipelines\.ya?ml|\.travis\.ya?ml|bitbucket-pipelines\.ya?ml|tox\.ini|noxfile\.py)$"
)
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--|;|>>>|\.\.\.)")
# Hosts and values that documentation uses precisely because they are not real.
_EXAMPLE_HOST = re.compile(
    r"@(?:[\w.-]+\.)?(?:example\.(?:com|org|net)|localhost|127\.0\.0\.1|[\w-]+\.(?:test|invalid|example|local))\b"
    r"|\b(?:example\.(?:com|org|net))\b",
    re.I,
)
_PLACEHOLDER = re.compile(
    r"(?:<[^>]+>|\$\{?[A-Z_]+\}?|\{\{[^}]+\}\}|\bx{4,}\b|\*{4,}|\bchangeme\b|\byour[-_]\w+|"
    r"\b(?:secret|password|passwd|token|dummy|placeholder|redacted)\b)",
    re.I,
)


def documentation_context(path: str, line: str, inside_string: bool = False) -> str:
    """Why a credential-like match here is an example, not a committed secret ("" when it is
    not). Documentation files and folders, changelogs, CI service definitions (a throw-away
    database's password), comments and doctests, docstrings (`inside_string`: the line sits
    in a triple-quoted string), example hosts and placeholders."""
    pure = PurePosixPath(path)
    if pure.suffix.lower() in _DOC_SUFFIXES or _DOC_NAMES.match(pure.name):
        return "documentation"
    if any(part.lower() in _DOC_DIRS for part in pure.parts[:-1]):
        return "documentation"
    if _CI_FILES.match(path):
        return "a CI service definition"
    if _COMMENT.match(line):
        return "a comment"
    if inside_string:
        return "a docstring or text block"
    if _EXAMPLE_HOST.search(line):
        return "an example host"
    if pure.name in LOCK_FILES:
        return "a lock file (checksums a package manager wrote)"
    if _CONTENT_HASH.search(line):
        return "a content checksum"
    return ""


#: Files package managers write: their long random-looking strings are checksums of packages.
LOCK_FILES = frozenset(
    {
        "package-lock.json",
        "npm-shrinkwrap.json",
        "yarn.lock",
        "pnpm-lock.yaml",
        "bun.lock",
        "Cargo.lock",
        "go.sum",
        "poetry.lock",
        "uv.lock",
        "pdm.lock",
        "Pipfile.lock",
        "composer.lock",
        "Gemfile.lock",
        "flake.lock",
        "gradle.lockfile",
    }
)
# Subresource-integrity values (`sha512-…`), Go module sums (`h1:…=`) and checksums under a
# key that says so (`"integrity": …`, `checksum = …`, `sha256: …`).
_CONTENT_HASH = re.compile(
    r"\b(?:sha(?:1|256|384|512)-[A-Za-z0-9+/]{20,}={0,2}|h1:[A-Za-z0-9+/]{20,}=)"
    r"|[\"']?\b(?:integrity|checksum|shasum|sha(?:1|256|384|512)|digest|hash)\b[\"']?\s*[:=]",
    re.IGNORECASE,
)


def placeholder_value(values: Iterable[str]) -> bool:
    """Every value found is an obvious placeholder (`<token>`, `${API_KEY}`, `xxxx`,
    `changeme`, `your-key`, or the word itself)."""
    found = [v for v in values if v.strip()]
    return bool(found) and all(_PLACEHOLDER.search(v) for v in found)


def inside_triple_quotes(lines: Sequence[str], index: int) -> bool:
    """Whether line `index` (0-based) is inside a triple-quoted Python string: an odd number
    of triple quotes opened before it. Approximate on purpose: a rare miscount costs one
    finding, never an exception."""
    count = 0
    for text in lines[:index]:
        count += text.count('"""') + text.count("'''")
    current = lines[index] if index < len(lines) else ""
    opens_here = current.lstrip().startswith(('"""', "'''", 'r"""', 'f"""'))
    return count % 2 == 1 or opens_here  # a docstring that opens (or is) this line


#: Languages whose comments open with `/*` and close with `*/`.
BLOCK_COMMENT_SUFFIXES = (
    *(".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".mts", ".cts"),
    *(".go", ".rs", ".java", ".kt", ".scala", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs"),
    *(".swift", ".php", ".css", ".scss"),
)
_BLOCK_MARK = re.compile(r"/\*|\*/")


def inside_block_comment(lines: Sequence[str], index: int) -> bool:
    """Whether line `index` (0-based) sits in a `/* … */` comment (a JSDoc example, a Javadoc
    or rustdoc block): the last comment mark before its end opens one. Approximate like
    `inside_triple_quotes`: a `/*` inside a string literal can miscount."""
    opened = False
    for text in lines[: index + 1]:
        for mark in _BLOCK_MARK.findall(text):
            opened = mark == "/*"
    current = lines[index] if index < len(lines) else ""
    return opened or current.lstrip().startswith("/*")


_WORDS = re.compile(r"[A-Za-z_][A-Za-z_ .:-]*")
_TEMPLATE = re.compile(r"%\(|%[sd]|\{|\}|\$")


def _alphabet(value: str) -> bool:
    """A run of six consecutive characters (`0123456789abc…`): a character set, not a key."""
    run = 1
    for a, b in pairwise(value):
        run = run + 1 if ord(b) == ord(a) + 1 else 1
        if run >= 6:
            return True
    return False


def plausible_secret(value: str) -> bool:
    """Whether a literal found under a credential-like name could be a secret: not empty or
    tiny, not a word or identifier (`"_auth_user_id"`, `"is not"`, `"password"`), not a
    template (`"... IDENTIFIED BY %(password)s"`), not a character set."""
    value = value.strip()
    if len(value) < 4 or _WORDS.fullmatch(value) or _TEMPLATE.search(value):
        return False
    return not _alphabet(value)


# -- the high-precision list -------------------------------------------------------------------


def high_precision(
    *,
    defect: DefectClass | None,
    request_input: bool = False,
    live_secret_format: bool = False,
    test_code: bool = False,
) -> bool:
    """Whether an analyzer finding may Block without anyone confirming it."""
    if live_secret_format and not test_code:
        return True
    return request_input and defect in REQUEST_INPUT_P0


def unconfirmed_pattern(node: NodeView) -> bool:
    """An analyzer-only finding off the high-precision list: no model reviewer, verifier lens
    or person confirmed it, and no such reviewer reported it too (consolidation credits)."""
    if node.analyzer_rule is None or node.high_precision:
        return False
    backers = {*peer_confirmers(node), *node.credited_agents}
    return not any(b.startswith(PERSON_PREFIX) or not is_analyzer_agent(b) for b in backers)


# -- defusing context --------------------------------------------------------------------------

# A digest whose collisions break nothing: signatures (HMAC), cache keys, ETags, identifiers
# derived from random data.
_NOT_FOR_SECRECY = re.compile(
    r"\bhmac\b|digestmod|digest_method|salted_hmac|\bsign(?:er|ing|ature)?s?\b|usedforsecurity"
    r"|\betag\b|cache_key|\bnonce\b|urandom",
    re.I,
)
_DEF = re.compile(r"^(?P<indent>\s*)(?:async\s+)?def\s+(?P<name>\w+)")
_CLASS = re.compile(r"^(?P<indent>\s*)class\s+(?P<name>\w+)")
_NAMED_IN_NAME = re.compile(r"md5|sha1", re.I)
_NAMED_LITERAL = re.compile(r"[\"'](?:md5|sha-?1)[\"']", re.I)
_QUOTED_IDENTIFIER = re.compile(
    r"quote_name|quote_ident|quote_identifier|\bqn\(|sql\.Identifier|escape_identifier"
)
_SERIALIZES = re.compile(r"\b(?:pickle|cPickle|dill|marshal)\.dumps?\(")
WEAK_HASH_RULES = frozenset({"B303", "B324"})
SHELL_RULES = frozenset({"B602", "B604", "B605"})
SQL_RULES = frozenset({"B608", "B610", "B611"})
DESERIALIZATION_RULES = frozenset({"B301", "B302"})


@dataclass(frozen=True, slots=True)
class Defused:
    """Why a rule's match is less than it looks, and the priority it is lowered to."""

    reason: str
    priority: Priority


def _function_around(lines: Sequence[str], start: int) -> tuple[str | None, int, int]:
    """(name, first line, last line) of the innermost `def` holding line `start` (1-based)."""
    indent = len(lines[start - 1]) - len(lines[start - 1].lstrip())
    for number in range(start - 1, 0, -1):
        match = _DEF.match(lines[number - 1])
        if match and len(match["indent"]) < indent:
            end = number
            for later in range(number + 1, len(lines) + 1):
                text = lines[later - 1]
                if text.strip() and len(text) - len(text.lstrip()) <= len(match["indent"]):
                    break
                end = later
            return match["name"], number, end
    return None, start, start


def _class_header(lines: Sequence[str], first: int) -> str:
    """The enclosing class's header and the lines before method `first` (its attributes)."""
    indent = len(lines[first - 1]) - len(lines[first - 1].lstrip())
    for number in range(first - 1, 0, -1):
        match = _CLASS.match(lines[number - 1])
        if match and len(match["indent"]) < indent:
            return "\n".join(lines[number - 1 : first - 1])
    return ""


def defusing_context(
    rule: str, lines: Sequence[str], start: int, end: int, *, tool_severity: str = ""
) -> Defused | None:
    """Context in the file that makes a rule's match harmless or minor, or None."""
    if not (1 <= start <= end <= len(lines)):
        return None
    statement = "\n".join(lines[start - 1 : end])
    if rule in WEAK_HASH_RULES:
        name, first, last = _function_around(lines, start)
        scope = "\n".join(lines[first - 1 : max(last, end)])
        users = [
            (text, _function_around(lines, number)[0] or "")
            for number, text in enumerate(lines, 1)
            if name and re.search(rf"\b{re.escape(name)}\b", text)
        ]
        if _NOT_FOR_SECRECY.search(scope) or any(
            _NOT_FOR_SECRECY.search(f"{text} {caller}") for text, caller in users
        ):
            return Defused(
                "the digest serves an HMAC/signature, a cache key or an identifier made from "
                "random data, where SHA-1 and MD5 collisions break nothing; a stronger hash is "
                "still better for new code",
                Priority.P3,
            )
        header = _class_header(lines, first) if name else ""
        if _NAMED_IN_NAME.search(f"{name or ''} {header.split(chr(10))[0]}") or (
            _NAMED_LITERAL.search(f"{header}\n{scope}")
        ):
            return Defused(
                "the code implements the algorithm it names (a legacy format or a protocol "
                "that requires it), so choosing a stronger hash is not the fix here",
                Priority.P2,
            )
    if rule in SHELL_RULES and tool_severity.upper() == "LOW":
        # Bandit rates shell=True LOW exactly when the command is a literal string.
        return Defused(
            "the command is a constant string: no outside input reaches the shell", Priority.P3
        )
    if rule in SQL_RULES and _QUOTED_IDENTIFIER.search(statement):
        return Defused(
            "the names formatted into the SQL are quoted identifiers; check that values go "
            "as query parameters",
            Priority.P2,
        )
    if rule in DESERIALIZATION_RULES and _SERIALIZES.search("\n".join(lines)):
        return Defused(
            "the module deserializes data it serializes itself (a cache or a store); it is "
            "unsafe only if someone else can write that data",
            Priority.P2,
        )
    return None


# -- one finding per rule per file -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hit:
    """One analyzer match before grouping. `key` groups hits: (tool, rule, path, priority) —
    hits of one rule the context rated differently stay apart."""

    key: tuple[str, ...]
    priority: Priority
    start: int
    end: int
    index: int  # position in the analyzer's output, to keep the first-found order stable


@dataclass(frozen=True, slots=True)
class Group:
    lead: int  # index of the hit the finding is anchored on
    members: tuple[int, ...]  # every hit's index, the lead first
    lines: tuple[int, ...]  # start lines of every hit, ascending


def group_hits(hits: Iterable[Hit]) -> list[Group]:
    """One group per key. The finding takes the strongest hit, the first in the file among
    equals, as its anchor; the others are listed by line."""
    by_key: dict[tuple[str, ...], list[Hit]] = {}
    for hit in hits:
        by_key.setdefault(hit.key, []).append(hit)
    groups = []
    for members in by_key.values():
        ordered = sorted(members, key=lambda h: (h.priority.rank, h.start, h.index))
        groups.append(
            Group(
                lead=ordered[0].index,
                members=tuple(h.index for h in ordered),
                lines=tuple(sorted({h.start for h in members})),
            )
        )
    return sorted(groups, key=lambda g: g.lead)


def also_on(lines: Sequence[int], anchored: int) -> str:
    """The sentence a grouped finding adds to its body."""
    others = [n for n in lines if n != anchored]
    if not others:
        return ""
    shown = ", ".join(str(n) for n in others[:30]) + (" …" if len(others) > 30 else "")
    plural = "s" if len(others) > 1 else ""
    return f"Also on line{plural} {shown} ({len(lines)} places in this file)."


__all__ = [
    "ANALYZER_AGENTS",
    "LIVE_SECRET_KINDS",
    "PRODUCTION_ONLY_RULES",
    "SARIF_AGENT_PREFIX",
    "SHELL_RULES",
    "WEAK_HASH_RULES",
    "Defused",
    "Group",
    "Hit",
    "also_on",
    "defusing_context",
    "group_hits",
    "high_precision",
    "is_analyzer_agent",
    "is_test_code",
    "live_secret",
    "narrowing_assert",
    "unconfirmed_pattern",
]
