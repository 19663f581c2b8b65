"""Secret redaction for any text leaving for a model provider.

`redact(text)` returns the text with secrets replaced by `[REDACTED:<kind>]` and how many it
replaced. It is idempotent: markers match no rule, and a value that is already a marker is
skipped, so redacting twice changes nothing and counts nothing the second time.

The rules err towards redacting: a false positive costs the reviewer one literal it could not
see, a false negative leaks a credential to a third party. Ordinary code is left intact: an
assignment is only redacted when its value is a literal (`password = request.POST["password"]`
stays), and the generic rule needs a long, mixed-alphabet, high-entropy literal (so git SHAs,
hex digests, words and paths are kept).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable

from reviews.domain.line_needles import lines_with

MARKER = "[REDACTED:{kind}]"
_MARKER_RE = re.compile(r"\[REDACTED:[a-z_]+\]")


def _marker(kind: str) -> str:
    return MARKER.format(kind=kind)


# Whole-token rules, most specific first. Each pattern's whole match is replaced.
_TOKEN_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private_key",
        # An unterminated block (a truncated paste) is redacted to the end of the text.
        re.compile(
            r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----"
            r"(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----|.*\Z)",
            re.S,
        ),
    ),
    (
        "aws_access_key",
        re.compile(
            r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Za-z0-9])"
        ),
    ),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{30,255}(?![A-Za-z0-9_])")),
    ("github_token", re.compile(r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{22,255}")),
    (
        "api_key",
        # OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-api03-…, sk-ant-admin01-…).
        re.compile(r"(?<![A-Za-z0-9_-])sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    ),
    ("slack_token", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("slack_token", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{16,}")),
    ("bearer_token", re.compile(r"(?<![A-Za-z0-9])[Bb]earer\s+[A-Za-z0-9._~+/-]{16,}=*")),
    ("google_api_key", re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}")),
    ("stripe_key", re.compile(r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    (
        "jwt",
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    ),
)

# An AWS secret access key needs no context: 40 characters of the base64 alphabet standing
# alone, mixed-case with digits and of high entropy (a git SHA is 40 lower-case hex digits).
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")

# scheme://user:password@host — the password goes, the rest of the URL stays readable.
_URL_CREDENTIALS = re.compile(
    r"(?P<head>\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s/:@'\"]{1,200}:)(?P<secret>[^\s/@'\"]{1,300})(?P<at>@)"
)

# NAME = "value", NAME: value, "name": "value", NAME=value (env files), NAME := value, NAME => …
_CREDENTIAL_NAME = (
    r"[A-Za-z0-9_.-]{0,40}?(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|"
    r"access[_-]?key|private[_-]?key|client[_-]?secret|auth[_-]?key|credentials?|"
    r"session[_-]?key|signing[_-]?key|encryption[_-]?key)[A-Za-z0-9_.-]{0,40}"
)
_ASSIGNMENT = re.compile(
    r"(?P<name>[\"']?\b" + _CREDENTIAL_NAME + r"[\"']?)"
    r"(?P<op>\s*(?::=|=>|=|:)\s*)"
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\n]{1,500})(?P=q)"
    r"|(?P<bare>[^\s\"'`,;)\]}]{1,500}))",
    re.I,
)

# A quoted literal long and varied enough to be a key, whatever the variable is called.
_GENERIC_LITERAL = re.compile(
    r"(?P<head>[=:(,\[]\s*|\breturn\s+)(?P<q>[\"'])(?P<value>[A-Za-z0-9+/=_\-.~]{24,500})(?P=q)"
)

_PLACEHOLDER = re.compile(
    r"^(?:x+|\*+|\.+|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%\(.*\)s|\{\{.*\}\})$", re.I
)


def redact(text: str, *, prose: bool = False) -> tuple[str, int]:
    """`text` with every secret replaced by a marker, and the number of replacements.
    `prose`: text a person wrote (a question), not code: a credential's name given a bare value
    (`password=hunter2`) is a credential whatever the value looks like, since no code runs
    there to make it an expression."""
    if not text:
        return text, 0
    counts: Counter[str] = Counter()

    def sub(pattern: re.Pattern[str], replace: Callable[[re.Match[str]], str], value: str) -> str:
        return pattern.sub(replace, value)

    for kind, pattern in _TOKEN_RULES:

        def whole(match: re.Match[str], kind: str = kind) -> str:
            counts[kind] += 1
            return _marker(kind)

        text = sub(pattern, whole, text)

    def aws_secret(match: re.Match[str]) -> str:
        value = match.group(0)
        # A long CamelCase name has a digit or two at most; a random key has about six, or a
        # slash or plus (fewer than 3 in 100 keys have neither).
        random_like = "/" in value or "+" in value or sum(c.isdigit() for c in value) >= 3
        if not random_like or not _high_entropy(value):
            return value
        counts["aws_secret_key"] += 1
        return _marker("aws_secret_key")

    text = sub(_AWS_SECRET, aws_secret, text)

    def url(match: re.Match[str]) -> str:
        if _MARKER_RE.fullmatch(match["secret"]):
            return match.group(0)
        counts["url_credentials"] += 1
        return f"{match['head']}{_marker('url_credentials')}{match['at']}"

    text = sub(_URL_CREDENTIALS, url, text)

    def assignment(match: re.Match[str]) -> str:
        quoted, bare = match["quoted"], match["bare"]
        value = quoted if quoted is not None else bare
        if _MARKER_RE.search(value) or _PLACEHOLDER.match(value.strip()):
            return match.group(0)
        literal = prose or _looks_like_bare_secret(bare or "", env_style=_env_style(match))
        if quoted is None and not literal:
            return match.group(0)  # an expression (`token = get_token()`), not a literal
        counts["assignment"] += 1
        q = match["q"] or ""
        return f"{match['name']}{match['op']}{q}{_marker('assignment')}{q}"

    text = sub(_ASSIGNMENT, assignment, text)

    def generic(match: re.Match[str]) -> str:
        value = match["value"]
        if not _high_entropy(value):
            return match.group(0)
        counts["high_entropy"] += 1
        return f"{match['head']}{match['q']}{_marker('high_entropy')}{match['q']}"

    text = sub(_GENERIC_LITERAL, generic, text)
    return text, sum(counts.values())


def redact_text(text: str) -> str:
    return redact(text)[0]


def redact_prose(text: str) -> str:
    """What a person wrote, before it joins a prompt: the code rules and then some (`redact`
    with `prose`); the runtime redacts the whole prompt again as it does every prompt."""
    return redact(text, prose=True)[0]


def matched_values(text: str, kind: str) -> list[str]:
    """The literal values rule `kind` matches in `text` (for judging, never for showing):
    `assignment`, `url_credentials` and `high_entropy` have a value apart from their name."""
    if kind == "assignment":
        return [
            m["quoted"] if m["quoted"] is not None else m["bare"]
            for m in _ASSIGNMENT.finditer(text)
        ]
    if kind == "url_credentials":
        return [m["secret"] for m in _URL_CREDENTIALS.finditer(text)]
    if kind == "high_entropy":
        return [m["value"] for m in _GENERIC_LITERAL.finditer(text)]
    return []


_KEY_BEGIN = re.compile(r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")
_KEY_END = re.compile(r"-----END[A-Z0-9 ]{0,40}PRIVATE KEY( BLOCK)?-----")


def redact_diff(text: str) -> str:
    """A unified diff with every line redacted on its own, so it keeps its exact line structure
    (hunk headers stay true and anchors still land). A private key spans lines: every line of
    its block, up to the END marker, is replaced whole.

    Only the lines some rule could match are redacted one by one (`_suspect_lines`); every
    other line is kept as it is, which is what redacting it would give."""
    lines = text.splitlines(keepends=True)
    bodies = [line.rstrip("\r\n") for line in lines]
    contents = [body[1:] if body[:1] in ("+", "-", " ") else body for body in bodies]
    suspects = _suspect_lines(contents)
    out = []
    in_key = False
    for number, (line, body, content) in enumerate(zip(lines, bodies, contents, strict=True)):
        if not in_key and number not in suspects:
            out.append(line)
            continue
        ending = line[len(body) :]
        prefix = body[: len(body) - len(content)]
        if in_key or _KEY_BEGIN.search(content):
            in_key = not _KEY_END.search(content)
            content = _marker("private_key")
        else:
            content = redact_text(content)
        out.append(prefix + content + ending)
    return "".join(out)


# Substrings without which a rule cannot match a line: every token rule has a literal part, a
# URL credential has "://", a credential's name one of _NAME_NEEDLES (compared lower-cased).
_TOKEN_NEEDLES = (
    "-----BEGIN",
    *("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA"),
    *("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    *("sk-", "xox", "hooks.slack.com/services/", "earer", "AIza", "_live_", "_test_", "eyJ"),
    "://",
)
_NAME_NEEDLES = ("pass", "pwd", "secret", "token", "key", "credential")
# The rules without such a part: what each needs at least (a quote and 24 characters of a key;
# 40 of an AWS secret), found in one pass over the whole text.
_SCANNED = (re.compile(r"[\"'][A-Za-z0-9+/=_\-.~]{24}"), re.compile(r"[A-Za-z0-9/+]{40}"))


def _suspect_lines(contents: list[str]) -> set[int]:
    """The numbers of the lines (without their diff prefix) a redaction rule could change.

    A superset, never fewer: a line no rule matches on its own stays as it is whatever the
    rules do. A rule's match on a line contains its needle, or what `_SCANNED` looks for, on
    that line. A later rule can only match what an earlier one rewrote on a line the earlier one
    matched."""
    return lines_with(contents, _TOKEN_NEEDLES, folded=_NAME_NEEDLES, scans=_SCANNED)


def _env_style(match: re.Match[str]) -> bool:
    """`DB_PASSWORD=hunter2`: an upper-case name and a bare `=`, as in .env files and shells."""
    name = match["name"].strip("\"'")
    return match["op"] == "=" and name.upper() == name


def _looks_like_bare_secret(value: str, *, env_style: bool) -> bool:
    """An unquoted value (.env, YAML, INI) that is a literal rather than code."""
    if any(ch in value for ch in "()[]{}<>$"):
        return False
    if re.fullmatch(r"[0-9_.]+", value):
        return False  # `max_tokens = 4096000`: a number, not a credential
    if env_style:
        return True
    if len(value) < 6:
        return False  # `password: str`, `token: int`: annotations, not values
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", value):
        # A name or dotted attribute (`settings.SECRET_KEY`, `None`, `token2`) is code. A YAML
        # `password: hunter2` slips through here; quoted literals are caught by the rules above.
        return False
    return bool(re.search(r"[0-9]", value)) or len(value) >= 16


def _high_entropy(value: str) -> bool:
    classes = sum(bool(re.search(pattern, value)) for pattern in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    if classes < 3:
        return False  # hex digests, SHAs, lower-case words and paths stay
    entropy = _entropy(value)
    if ("/" in value or "." in value) and entropy < 4.3:
        return False  # module paths, file names, URL fragments
    return entropy >= 3.7


def _entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())
