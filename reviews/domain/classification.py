"""What kind of change is this? Input of adaptive reviewer selection.

From the changed files (with added/removed line counts) and the unified diff text:
- fast exits: an empty change, a docs-only change, or a formatting-only change (the removed and
  added code are identical once whitespace is removed; leading indentation still counts in
  Python/YAML, where it is syntax);
- size: trivial = 1-2 files and < 50 changed lines; normal = 3-10 files, *and* 1-2 files with
  ≥ 50 changed lines (too much to be trivial, too few files to be large); large = > 10 files;
- high-risk patterns, each match reported with its path and line so a brief can point at it;
- the signals that choose domain reviewers: data access, hot paths, new or moved modules,
  changed public interfaces.

Pattern detection is deliberately eager: a false alarm costs one extra reviewer, a miss costs an
unreviewed auth change. It reads paths and changed (+/-) lines only, never context lines. An
outbound call is flagged as "external call with user data" without proving the data flow.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum

from reviews.domain.line_needles import lines_with


class ChangeStatus(StrEnum):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str
    added: int = 0
    removed: int = 0
    status: ChangeStatus = ChangeStatus.MODIFIED
    old_path: str | None = None


class FastExit(StrEnum):
    EMPTY = "empty"
    DOCS_ONLY = "docs-only"
    FORMATTING_ONLY = "formatting-only"


class SizeClass(StrEnum):
    TRIVIAL = "trivial"
    NORMAL = "normal"
    LARGE = "large"


class RiskPattern(StrEnum):
    AUTH = "auth/sessions/tokens"
    SQL = "SQL/ORM queries"
    CRYPTO = "cryptography"
    PERMISSIONS = "permissions/access control"
    SECRETS = "secrets/credentials/API keys"
    EXTERNAL_CALLS = "external calls carrying user data"
    LLM = "LLM integration"


@dataclass(frozen=True, slots=True)
class RiskMatch:
    pattern: RiskPattern
    path: str
    line: int | None  # None: matched on the path itself
    evidence: str

    @property
    def where(self) -> str:
        return self.path if self.line is None else f"{self.path}:{self.line}"


@dataclass(frozen=True, slots=True)
class ChangeClassification:
    fast_exit: FastExit | None
    size: SizeClass
    file_count: int
    changed_lines: int
    risks: tuple[RiskMatch, ...]
    touches_data_access: bool
    touches_hot_path: bool
    adds_or_moves_modules: bool
    changes_public_interface: bool

    @property
    def high_risk(self) -> bool:
        return bool(self.risks)

    @property
    def risk_patterns(self) -> frozenset[RiskPattern]:
        return frozenset(match.pattern for match in self.risks)

    @property
    def risky_paths(self) -> tuple[str, ...]:
        return tuple(sorted({match.path for match in self.risks}))


TRIVIAL_MAX_FILES = 2
TRIVIAL_MAX_LINES = 49
NORMAL_MAX_FILES = 10

_DOC_SUFFIXES = (".md", ".rst", ".txt", ".adoc", ".markdown")
_DOC_NAMES = re.compile(r"(^|/)(LICEN[CS]E|CHANGELOG|CHANGES|AUTHORS|NOTICE|CONTRIBUTING)[^/]*$")
_INDENT_SENSITIVE = (".py", ".pyi", ".yaml", ".yml")
_CODE_SUFFIXES = (".py", ".js", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".rb", ".kt", ".cs")

_I = re.IGNORECASE
_CONTENT_PATTERNS: dict[RiskPattern, re.Pattern[str]] = {
    RiskPattern.AUTH: re.compile(
        r"\b(authenticat\w*|login|logout|sessions?|session_\w+|jwt|oauth\w*|bearer|"
        r"access_token|refresh_token|csrf\w*|set_cookie)\b",
        _I,
    ),
    RiskPattern.SQL: re.compile(
        r"(\bselect\b.+\bfrom\b|\binsert\s+into\b|\bupdate\s+\w+\s+set\b|\bdelete\s+from\b|"
        r"\.raw\(|\.extra\(|\bRawSQL\b|cursor\(\)|\.execute(many)?\(|"
        r"\.objects\.|\.(filter|exclude|annotate|aggregate|select_related|prefetch_related)\()",
        _I,
    ),
    RiskPattern.CRYPTO: re.compile(
        r"\b(hashlib|hmac|cryptography|Crypto|cipher\w*|encrypt\w*|decrypt\w*|aes|rsa|ecdsa|"
        r"md5|sha1|sha256|bcrypt|argon2|pbkdf2\w*|nonce|signing)\b",
        _I,
    ),
    RiskPattern.PERMISSIONS: re.compile(
        r"\b(permissions?|has_perm\w*|is_staff|is_superuser|authoriz\w*|acl|rbac|roles?|"
        r"access_control|PermissionDenied|Forbidden|login_required)\b",
        _I,
    ),
    RiskPattern.SECRETS: re.compile(
        r"(api[_-]?key|secret|passw(or)?d|credential|private[_-]?key|\btoken\s*=)", _I
    ),
    RiskPattern.EXTERNAL_CALLS: re.compile(
        r"\b(requests\.(get|post|put|patch|delete|request)|httpx\.|aiohttp|urlopen|urllib|"
        r"fetch\(|axios|send_mail|smtplib|webhook\w*)",
        _I,
    ),
    RiskPattern.LLM: re.compile(
        r"\b(openai|anthropic|llm\w*|prompts?|chat\.completions|messages\.create|langchain|"
        r"embeddings?)\b",
        _I,
    ),
}
# What each content pattern's every match contains (compared lower-cased): only the changed
# lines holding one of these are searched (line_needles), most changed lines hold none.
_CONTENT_NEEDLES: dict[RiskPattern, tuple[str, ...]] = {
    RiskPattern.AUTH: (
        *("authenticat", "login", "logout", "session", "jwt", "oauth", "bearer"),
        *("access_token", "refresh_token", "csrf", "set_cookie"),
    ),
    RiskPattern.SQL: (
        *("select", "insert", "update", "delete", ".raw(", ".extra(", "rawsql", "cursor()"),
        *(".execute", ".objects.", ".filter(", ".exclude(", ".annotate(", ".aggregate("),
        ".prefetch_related(",
    ),
    RiskPattern.CRYPTO: (
        *("hashlib", "hmac", "crypt", "cipher", "aes", "rsa", "ecdsa", "md5", "sha1", "sha256"),
        *("argon2", "pbkdf2", "nonce", "signing"),
    ),
    RiskPattern.PERMISSIONS: (
        *("permission", "has_perm", "is_staff", "is_superuser", "authoriz", "acl", "rbac"),
        *("role", "access_control", "forbidden", "login_required"),
    ),
    RiskPattern.SECRETS: ("key", "secret", "passw", "credential", "token"),
    RiskPattern.EXTERNAL_CALLS: (
        *("requests.", "httpx.", "aiohttp", "urlopen", "urllib", "fetch(", "axios"),
        *("send_mail", "smtplib", "webhook"),
    ),
    RiskPattern.LLM: (
        *("openai", "anthropic", "llm", "prompt", "chat.completions", "messages.create"),
        *("langchain", "embedding"),
    ),
}
_ALL_CONTENT_NEEDLES = tuple(sorted({n for group in _CONTENT_NEEDLES.values() for n in group}))
# On a line that holds a needle, one search tells whether any content pattern matches.
_ANY_CONTENT = re.compile("|".join(f"(?:{p.pattern})" for p in _CONTENT_PATTERNS.values()), _I)
_PATH_PATTERNS: dict[RiskPattern, re.Pattern[str]] = {
    RiskPattern.AUTH: re.compile(r"(auth|login|session|oauth|jwt|token)", _I),
    RiskPattern.SQL: re.compile(r"(\.sql$|(^|/)(queries|selectors)\.py$)", _I),
    RiskPattern.CRYPTO: re.compile(r"(crypt|signing|hashing)", _I),
    RiskPattern.PERMISSIONS: re.compile(r"(permission|policies|polic(y|ies)|acl|rbac)", _I),
    RiskPattern.SECRETS: re.compile(r"(secret|credential|(^|/)\.env)", _I),
    RiskPattern.LLM: re.compile(r"(llm|prompt|openai|anthropic)", _I),
}
_DATA_ACCESS_PATH = re.compile(
    r"((^|/)(models|queries|selectors|repositor(y|ies)|dao)(\.py|/)|/migrations/|\.sql$)", _I
)
_PUBLIC_DEF = re.compile(r"^(async\s+def|def|class)\s+[A-Za-z]\w*|^__all__\s*=|^export\s")
_PUBLIC_INTERFACE_PATH = re.compile(r"((^|/)(api|urls|schemas?|__init__)\.py$|openapi|\.proto$)")


@dataclass(frozen=True, slots=True)
class DiffLine:
    path: str
    line: int  # line number in the new file for "+", in the old file for "-"
    sign: str
    text: str


def iter_changed_lines(diff_text: str) -> Iterator[DiffLine]:
    """The added and removed lines of a unified diff, with their file and line number."""
    path, old_line, new_line = "", 0, 0
    hunk = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
    for raw in diff_text.splitlines():
        first = raw[:1]  # one comparison per line: most lines are "+", "-" or " "
        if first == "+":
            if raw.startswith("+++ "):
                target = raw[4:].split("\t")[0]
                if target != "/dev/null":  # a deleted file keeps the path its "---" line named
                    path = target[2:] if target.startswith("b/") else target
                continue
            yield DiffLine(path, new_line, "+", raw[1:])
            new_line += 1
        elif first == "-":
            if raw.startswith("--- "):
                source = raw[4:].split("\t")[0]
                if source != "/dev/null":
                    path = source[2:] if source.startswith("a/") else source
                continue
            yield DiffLine(path, old_line, "-", raw[1:])
            old_line += 1
        elif first == " ":
            old_line, new_line = old_line + 1, new_line + 1
        elif first == "@" and (match := hunk.match(raw)):
            old_line, new_line = int(match[1]), int(match[2])


def is_doc_path(path: str) -> bool:
    lowered = path.lower()
    return (
        lowered.endswith(_DOC_SUFFIXES)
        or lowered.startswith("docs/")
        or "/docs/" in lowered
        or bool(_DOC_NAMES.search(path))
    )


def is_formatting_only(diff_text: str) -> bool:
    """True when the code lines change in whitespace only (documentation files are ignored).

    Leading indentation is kept for indentation-sensitive files: re-indenting Python or YAML
    can change behaviour, so it is reviewed.
    """
    removed: dict[str, list[str]] = {}
    added: dict[str, list[str]] = {}
    for line in iter_changed_lines(diff_text):
        if is_doc_path(line.path):
            continue
        indent = ""
        if line.path.endswith(_INDENT_SENSITIVE) or line.path.rsplit("/", 1)[-1] == "Makefile":
            indent = line.text[: len(line.text) - len(line.text.lstrip())] + "\n"
        key = indent + "".join(line.text.split())
        (added if line.sign == "+" else removed).setdefault(line.path, []).append(key)
    if not removed and not added:
        return False
    paths = set(removed) | set(added)
    return all("".join(removed.get(p, [])) == "".join(added.get(p, [])) for p in paths)


def size_class(file_count: int, changed_lines: int) -> SizeClass:
    if file_count > NORMAL_MAX_FILES:
        return SizeClass.LARGE
    if file_count <= TRIVIAL_MAX_FILES and changed_lines <= TRIVIAL_MAX_LINES:
        return SizeClass.TRIVIAL
    return SizeClass.NORMAL


def detect_risks(
    changes: Sequence[FileChange],
    diff_text: str,
    *,
    set_aside: Collection[str] = (),
    changed: Sequence[DiffLine] | None = None,
) -> tuple[RiskMatch, ...]:
    """Every high-risk pattern match, on paths and on changed lines, in a stable order;
    nothing in `set_aside` (vendored, generated or minified files: someone else's code).
    `changed`: the diff's changed lines when the caller has them already."""
    matches: set[RiskMatch] = set()
    for change in changes:
        if change.path in set_aside:
            continue
        for pattern, regex in _PATH_PATTERNS.items():
            if found := regex.search(change.path):
                matches.add(RiskMatch(pattern, change.path, None, found.group(0)))
    deleted = {c.path for c in changes if c.status is ChangeStatus.DELETED}
    skipped: dict[str, bool] = {}

    def read(path: str) -> bool:
        skip = skipped.get(path)
        if skip is None:
            # A deleted file's lines are gone from the head: nothing there to anchor a risk to.
            skip = skipped[path] = is_doc_path(path) or path in deleted or path in set_aside
        return not skip

    lines = [
        line
        for line in (iter_changed_lines(diff_text) if changed is None else changed)
        if read(line.path)
    ]
    for number in sorted(lines_with([line.text for line in lines], folded=_ALL_CONTENT_NEEDLES)):
        line = lines[number]
        if not _ANY_CONTENT.search(line.text):
            continue
        for pattern, regex in _CONTENT_PATTERNS.items():
            if found := regex.search(line.text):
                matches.add(RiskMatch(pattern, line.path, line.line, found.group(0)))
    order = list(RiskPattern)
    return tuple(
        sorted(matches, key=lambda m: (order.index(m.pattern), m.path, m.line or 0, m.evidence))
    )


def classify_change(
    changes: Sequence[FileChange],
    diff_text: str,
    *,
    hot_spots: Collection[str] = (),
    set_aside: Collection[str] = (),
) -> ChangeClassification:
    """Classify a change. `hot_spots` are paths the change map marks as hot; `set_aside` the
    vendored, generated and minified ones, counted in its size but never a risk."""
    file_count = len(changes)
    changed_lines = sum(c.added + c.removed for c in changes)
    fast_exit = None
    if file_count == 0:
        fast_exit = FastExit.EMPTY
    elif all(is_doc_path(c.path) for c in changes):
        fast_exit = FastExit.DOCS_ONLY
    elif all(c.status is ChangeStatus.MODIFIED for c in changes) and is_formatting_only(diff_text):
        fast_exit = FastExit.FORMATTING_ONLY
    changed = list(iter_changed_lines(diff_text))
    risks = (
        () if fast_exit else detect_risks(changes, diff_text, set_aside=set_aside, changed=changed)
    )
    return ChangeClassification(
        fast_exit=fast_exit,
        size=size_class(file_count, changed_lines),
        file_count=file_count,
        changed_lines=changed_lines,
        risks=risks,
        touches_data_access=any(m.pattern is RiskPattern.SQL for m in risks)
        or any(_DATA_ACCESS_PATH.search(c.path) for c in changes),
        touches_hot_path=bool(set(hot_spots) & {c.path for c in changes}),
        adds_or_moves_modules=any(
            c.status in (ChangeStatus.ADDED, ChangeStatus.RENAMED)
            and c.path.endswith(_CODE_SUFFIXES)
            for c in changes
        ),
        changes_public_interface=any(
            _PUBLIC_INTERFACE_PATH.search(c.path) for c in changes if not is_doc_path(c.path)
        )
        or any(_PUBLIC_DEF.match(line.text) for line in changed if not is_doc_path(line.path)),
    )
