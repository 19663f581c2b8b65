"""Priority floors for security findings by what they are (docs/analyzer-severities.md).

A tool's own severity label says how sure and how loud the tool is, not how bad the defect is:
bandit rates string-built SQL MEDIUM with LOW confidence. So findings are classed by rule id
(bandit test ids, ruff S-rules, secret scanner kinds) or, for a rule this table does not know,
by CWE; each class has a priority floor. A floor only ever raises a priority.

- SQL, command and code injection, unsafe deserialization, hard-coded credentials, disabled TLS
  verification and weak cryptography → at least P1;
- an injection (or a deserialization, which executes code just the same) whose input visibly
  comes from a request in the change → P0 (`request_input` below).

The ids of the two tools the table covers (`B1xx`..`B7xx`, `S1xx`..`S7xx`) are looked up by id
only: bandit files `import subprocess` (B404) under CWE-78 too, and an import is no injection.

`request_input` is a heuristic on text the change adds, written to be explainable rather than
complete. The sink statement is tainted when, within its function:
1. it reads request data itself (`request.GET`, `request.args`, `request.json`, …);
2. it uses a name assigned on an earlier line from request data, or from such a name;
3. it uses a parameter named like request data (`request`, `params`, `form`, `payload`, …);
4. it uses a parameter of its function, and an added line elsewhere in the change calls that
   function with request data among the arguments (one hop: `search(request.GET["q"])`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from .types import Priority


class DefectClass(StrEnum):
    # The same names as the lead pass's matching classes (reviews/domain/matching.py), so a
    # node's frozen `defect_classes` can be looked up here (`classes_floor`).
    SQL_INJECTION = "sql-injection"
    COMMAND_INJECTION = "command-injection"
    CODE_INJECTION = "code-injection"
    UNSAFE_DESERIALIZATION = "unsafe-deserialization"
    HARDCODED_CREDENTIAL = "hardcoded-credential"
    TLS_VERIFICATION_DISABLED = "disabled-tls-verification"
    WEAK_CRYPTOGRAPHY = "weak-cryptography"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    DefectClass.SQL_INJECTION: "SQL injection",
    DefectClass.COMMAND_INJECTION: "command injection",
    DefectClass.CODE_INJECTION: "code injection",
    DefectClass.UNSAFE_DESERIALIZATION: "unsafe deserialization",
    DefectClass.HARDCODED_CREDENTIAL: "hard-coded credential",
    DefectClass.TLS_VERIFICATION_DISABLED: "TLS verification disabled",
    DefectClass.WEAK_CRYPTOGRAPHY: "weak cryptography",
}

_D = DefectClass
# Bandit test id → class. Ruff's S-rules reuse bandit's numbers (S608 is B608), so one table
# serves both.
_TOOL_RULES: dict[str, DefectClass] = {
    # injection
    "608": _D.SQL_INJECTION,  # string-built SQL
    "610": _D.SQL_INJECTION,  # Django QuerySet.extra
    "611": _D.SQL_INJECTION,  # Django RawSQL
    "601": _D.COMMAND_INJECTION,  # paramiko exec_command
    "602": _D.COMMAND_INJECTION,  # subprocess with shell=True
    "604": _D.COMMAND_INJECTION,  # any call with shell=True
    "605": _D.COMMAND_INJECTION,  # os.system / popen: a shell
    "609": _D.COMMAND_INJECTION,  # wildcard injection
    "102": _D.CODE_INJECTION,  # exec
    "307": _D.CODE_INJECTION,  # eval
    # deserialization
    "301": _D.UNSAFE_DESERIALIZATION,  # pickle, dill, shelve, jsonpickle
    "302": _D.UNSAFE_DESERIALIZATION,  # marshal
    "506": _D.UNSAFE_DESERIALIZATION,  # yaml.load without a safe loader
    "614": _D.UNSAFE_DESERIALIZATION,  # torch.load
    # credentials
    "105": _D.HARDCODED_CREDENTIAL,  # password string
    "106": _D.HARDCODED_CREDENTIAL,  # password argument
    "107": _D.HARDCODED_CREDENTIAL,  # password default
    # TLS
    "323": _D.TLS_VERIFICATION_DISABLED,  # ssl._create_unverified_context
    "501": _D.TLS_VERIFICATION_DISABLED,  # requests/httpx verify=False
    "507": _D.TLS_VERIFICATION_DISABLED,  # SSH host keys not verified
    "502": _D.TLS_VERIFICATION_DISABLED,  # SSL/TLS protocol with known flaws
    "503": _D.TLS_VERIFICATION_DISABLED,  # …as a default argument
    "504": _D.TLS_VERIFICATION_DISABLED,  # ssl.wrap_socket without a version
    # weak cryptography
    "303": _D.WEAK_CRYPTOGRAPHY,  # md5/sha1 (older bandit)
    "324": _D.WEAK_CRYPTOGRAPHY,  # hashlib md5/sha1 used for security
    "304": _D.WEAK_CRYPTOGRAPHY,  # broken ciphers (DES, RC4, …)
    "305": _D.WEAK_CRYPTOGRAPHY,  # ECB mode
    "505": _D.WEAK_CRYPTOGRAPHY,  # key too short
}

_TOOL_ID = re.compile(r"^(?:B|S)([1-7][0-9]{2})$")

#: CWE → class, for a rule id the table does not cover (another tool, a CI-submitted finding).
CWE_CLASSES: dict[int, DefectClass] = {
    89: _D.SQL_INJECTION,
    564: _D.SQL_INJECTION,
    77: _D.COMMAND_INJECTION,
    78: _D.COMMAND_INJECTION,
    88: _D.COMMAND_INJECTION,
    94: _D.CODE_INJECTION,
    95: _D.CODE_INJECTION,
    502: _D.UNSAFE_DESERIALIZATION,
    259: _D.HARDCODED_CREDENTIAL,
    321: _D.HARDCODED_CREDENTIAL,
    798: _D.HARDCODED_CREDENTIAL,
    295: _D.TLS_VERIFICATION_DISABLED,
    297: _D.TLS_VERIFICATION_DISABLED,
    326: _D.WEAK_CRYPTOGRAPHY,
    327: _D.WEAK_CRYPTOGRAPHY,
    328: _D.WEAK_CRYPTOGRAPHY,
    916: _D.WEAK_CRYPTOGRAPHY,
}

#: Classes whose input, when it comes from a request, makes the finding P0.
REQUEST_INPUT_P0 = frozenset(
    {_D.SQL_INJECTION, _D.COMMAND_INJECTION, _D.CODE_INJECTION, _D.UNSAFE_DESERIALIZATION}
)
FLOORS: dict[DefectClass, Priority] = dict.fromkeys(DefectClass, Priority.P1)
#: The most a tool's own label can make a class: bandit rates MD5/SHA-1 HIGH/HIGH (P0), but a
#: weak hash is exploitable only with work an attacker must add; it holds, it does not block.
LABEL_CEILINGS: dict[DefectClass, Priority] = {_D.WEAK_CRYPTOGRAPHY: Priority.P1}


def cap_label(priority: Priority, defect: DefectClass | None) -> Priority:
    """A tool label's priority, no higher than the class's ceiling."""
    ceiling = LABEL_CEILINGS.get(defect) if defect is not None else None
    if ceiling is None or priority.rank >= ceiling.rank:
        return priority
    return ceiling


def classify(rule_id: str | None = None, cwe: int | None = None) -> DefectClass | None:
    """The defect class of a finding, by rule id first and CWE second.

    `rule_id` is a bandit id (`B608`), a ruff id (`S608`) or `secrets:<kind>` for the secret
    scanner (every kind it reports is a credential). A bandit/ruff id the table lacks has no
    class, whatever its CWE.
    """
    if rule_id:
        rule = rule_id.strip().upper()
        if rule.startswith("SECRETS:"):
            return _D.HARDCODED_CREDENTIAL
        match = _TOOL_ID.match(rule)
        if match:
            return _TOOL_RULES.get(match.group(1))
    if cwe is not None:
        return CWE_CLASSES.get(cwe)
    return None


def floor_for(defect: DefectClass | None, *, request_input: bool = False) -> Priority | None:
    if defect is None:
        return None
    if request_input and defect in REQUEST_INPUT_P0:
        return Priority.P0
    return FLOORS[defect]


def classes_floor(classes: Iterable[str] | None) -> Priority | None:
    """The floor for a finding of any stream from its defect class names (unknown names have
    none). The request-input P0 needs the code, so only analyzers apply it; this is P1."""
    known = [DefectClass(c) for c in classes or () if c in _CLASS_VALUES]
    floors = [floor_for(c) for c in known]
    return min((f for f in floors if f is not None), key=lambda p: p.rank, default=None)


_CLASS_VALUES = frozenset(c.value for c in DefectClass)


def raise_to_floor(priority: Priority, floor: Priority | None) -> Priority:
    """The stricter of the two: a floor never lowers a priority."""
    if floor is None or priority.rank <= floor.rank:
        return priority
    return floor


# -- the request-input heuristic ---------------------------------------------------------------

_REQUEST_ATTRS = (
    r"GET|POST|args|form|json|values|data|body|query_params|query|params|files|FILES|"
    r"cookies|COOKIES|headers|META|get_json|get_data|content|match_info|path_params"
)
REQUEST_SOURCE = re.compile(
    r"\b(?:request|req|self\.request|flask\.request)\s*\.\s*(?:" + _REQUEST_ATTRS + r")\b"
)
#: Parameter names that, by convention, carry data straight from a request.
REQUEST_PARAM_NAMES = frozenset(
    {
        "request",
        "req",
        "params",
        "query_params",
        "form",
        "form_data",
        "post_data",
        "payload",
        "user_input",
        "request_data",
        "request_body",
    }
)

_DEF = re.compile(r"^(?P<indent>\s*)(?:async\s+)?def\s+(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)")
_ASSIGNED = re.compile(
    r"^\s*(?P<names>[A-Za-z_][\w\s,]*?)\s*(?::[^=]+)?(?<![=!<>])=(?!=)(?P<rhs>.*)$"
)
_NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass(frozen=True, slots=True)
class Taint:
    """Why the heuristic believes the input comes from a request (shown in the finding)."""

    reason: str


_STRING = re.compile(
    r"(?P<prefix>\b[rRbBuUfF]{1,2})?"
    r"(?P<lit>(\"\"\"|\'\'\')(?:.*?)\3|\"(?:\\.|[^\"\\])*\"|\'(?:\\.|[^\'\\])*\')",
    re.S,
)


def _code_only(text: str) -> str:
    """`text` without its string literals, so words inside SQL text are not taken for code.
    An f-string stays: its braces are code."""

    def strip(match: re.Match[str]) -> str:
        return match.group(0) if "f" in (match["prefix"] or "").lower() else " "

    return _STRING.sub(strip, text)


def _identifiers(text: str) -> set[str]:
    return set(_NAME.findall(_code_only(text)))


def _params(signature: str) -> list[str]:
    head = signature.split(")")[0]
    names = []
    for part in head.split(","):
        name = part.strip().lstrip("*").split(":")[0].split("=")[0].strip()
        if name and name not in ("self", "cls") and _NAME.fullmatch(name):
            names.append(name)
    return names


def _enclosing_def(lines: Sequence[str], start: int) -> tuple[int, re.Match[str]] | None:
    """The `def` (1-based line, match) whose body holds line `start`, if any."""
    sink = lines[start - 1]
    indent = len(sink) - len(sink.lstrip())
    for number in range(start - 1, 0, -1):
        match = _DEF.match(lines[number - 1])
        if match and len(match["indent"]) < indent:
            return number, match
        text = lines[number - 1]
        if text.strip() and len(text) - len(text.lstrip()) < indent and not match:
            # A statement at a shallower level (e.g. `with`, `try`): keep going outwards.
            indent = len(text) - len(text.lstrip())
            if indent == 0:
                return None
    return None


def request_input(
    lines: Sequence[str],
    start: int,
    end: int,
    *,
    added: Iterable[int] | None = None,
    change_lines: Iterable[str] = (),
) -> Taint | None:
    """Whether the sink on `lines[start..end]` (1-based) visibly takes request input.

    `lines` is the whole file; only lines in `added` (all lines when None) count as evidence,
    and `change_lines` are the texts of every line the change adds (for the one-hop rule).
    """
    if not (1 <= start <= end <= len(lines)):
        return None
    added_set = set(added) if added is not None else set(range(1, len(lines) + 1))
    sink = "\n".join(lines[start - 1 : end])
    if REQUEST_SOURCE.search(_code_only(sink)):
        return Taint("the statement reads request data directly")
    used = _identifiers(sink)
    found = _enclosing_def(lines, start)
    body_start = found[0] + 1 if found else max(1, start - 30)
    params = _params(found[1]["params"]) if found else []

    # Names assigned from request data (or from such names) before the sink, in order.
    tainted: dict[str, int] = {}
    for number in range(body_start, start):
        if number not in added_set:
            continue
        match = _ASSIGNED.match(lines[number - 1])
        if not match:
            continue
        rhs = match["rhs"]
        if REQUEST_SOURCE.search(_code_only(rhs)) or _identifiers(rhs) & set(tainted):
            for name in _NAME.findall(match["names"]):
                tainted[name] = number
    hit = sorted(used & set(tainted))
    if hit:
        return Taint(f"`{hit[0]}` is assigned from request data on line {tainted[hit[0]]}")
    if found is None or found[0] not in added_set:
        return None
    named = sorted(used & (set(params) & REQUEST_PARAM_NAMES))
    if named:
        return Taint(f"parameter `{named[0]}` is request data by name")
    if not used & set(params):
        return None
    call = re.compile(r"(?<![\w.])" + re.escape(found[1]["name"]) + r"\s*\((?P<args>.*)")
    for text in change_lines:
        match = call.search(text)
        if match and not _DEF.match(text) and REQUEST_SOURCE.search(_code_only(match["args"])):
            return Taint(f"`{found[1]['name']}` is called with request data in the change")
    return None


__all__ = [
    "CWE_CLASSES",
    "FLOORS",
    "LABEL_CEILINGS",
    "REQUEST_INPUT_P0",
    "REQUEST_PARAM_NAMES",
    "REQUEST_SOURCE",
    "DefectClass",
    "Taint",
    "cap_label",
    "classes_floor",
    "classify",
    "floor_for",
    "raise_to_floor",
    "request_input",
]
