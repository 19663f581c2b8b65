"""What to do about a bandit finding, in Quorum's words (pure).

Bandit's message says what it matched ("Use of assert detected"); repeating it as the fix tells
the reader nothing new. Each entry here says what to change instead. A test without an entry
falls back to its defect class's advice, then to bandit's documentation link.
"""

from __future__ import annotations

from .severity_floors import DefectClass

BANDIT_FIXES: dict[str, str] = {
    "B101": "Raise an exception for conditions that must hold in production; asserts vanish "
    "under python -O.",
    "B102": "Call the function you need directly, or parse the input; exec runs any code it "
    "is given.",
    "B104": "Bind to the address that must be reachable (127.0.0.1 behind a proxy), or make "
    "the address a setting.",
    "B108": "Use tempfile.mkdtemp() or NamedTemporaryFile() instead of a fixed path others "
    "can create first.",
    "B110": "Catch the exception you expect and log it, or let it propagate; a silent pass "
    "hides failures.",
    "B112": "Catch the exception you expect and log it before continuing.",
    "B113": "Pass timeout= to the request, so a stalled server cannot hold the caller forever.",
    "B201": "Turn Flask's debug mode off outside development (its console runs code).",
    "B306": "Use tempfile.mkstemp() or NamedTemporaryFile(): mktemp returns a name another "
    "process can take first.",
    "B307": "Use ast.literal_eval for literals, or parse the input; eval runs any expression.",
    "B308": "Escape the value before marking it safe (format_html), or leave escaping to the "
    "template.",
    "B310": "Check the URL's scheme (http/https only) before opening it; urlopen also reads "
    "file:// and custom schemes.",
    "B311": "Use the secrets module for tokens, keys and anything an attacker must not guess.",
    "B314": "Parse untrusted XML with defusedxml.",
    "B320": "Parse untrusted XML with defusedxml.",
    "B404": "Run programs with an argument list and shell=False; make sure no part of the "
    "command comes from input.",
    "B603": "Make sure no argument comes from input unchecked, or validate it against a list.",
    "B607": "Call the program by its full path, so PATH cannot substitute another one.",
    "B613": "Remove or escape the bidirectional control characters: they make code read "
    "differently than it runs.",
    "B703": "Escape the value before marking it safe (format_html), or leave escaping to the "
    "template.",
}

CLASS_FIXES: dict[DefectClass, str] = {
    DefectClass.SQL_INJECTION: "Keep the SQL text constant and pass the values as query "
    "parameters (cursor.execute(sql, params)).",
    DefectClass.COMMAND_INJECTION: "Run the program with an argument list and shell=False, "
    "never a command line built from values.",
    DefectClass.CODE_INJECTION: "Do not evaluate text as code: parse it, or call the function "
    "it names from an allow-list.",
    DefectClass.UNSAFE_DESERIALIZATION: "Read a data format (JSON) for anything another party "
    "can write; use yaml.safe_load for YAML.",
    DefectClass.HARDCODED_CREDENTIAL: "Read the value from the environment or a secret store; "
    "rotate it if it was ever real.",
    DefectClass.TLS_VERIFICATION_DISABLED: "Keep certificate verification on; trust a specific "
    "CA bundle instead of turning checks off.",
    DefectClass.WEAK_CRYPTOGRAPHY: "Use SHA-256 or better for security, or pass "
    "usedforsecurity=False where the hash only identifies content.",
}


def bandit_fix(test_id: str, defect: DefectClass | None, more_info: str = "") -> str:
    """The fix to show for a bandit finding: its own entry, its class's, or where to read."""
    fix = BANDIT_FIXES.get(test_id) or (CLASS_FIXES.get(defect) if defect else None)
    if fix:
        return fix
    return f"See {more_info}." if more_info else f"See bandit's documentation for {test_id}."


__all__ = ["BANDIT_FIXES", "CLASS_FIXES", "bandit_fix"]
