"""Are two findings about the same issue? The matching rule of the lead pass, across streams.

Model reviewers, analyzers, the follow-up reviewer and CI all describe defects in their own
words: bandit says "B608: Possible SQL injection vector…" with CWE-89, a model says "SQL query
built from the search term". Both are the same defect when they sit on the same lines, so the
rule compares *defect classes*, not wording:

- a rule id names its class (bandit `B608`, ruff `S608` — the same family under two prefixes —,
  ruff `E722`); an unknown rule id is a class of its own (`rule:B404`), so the same rule at the
  same place always matches;
- a CWE names its class (`CWE-89` → sql-injection); an unknown CWE is `cwe:<n>`;
- words name a class ("SQL injection", "pickle", "hard-coded password", "except … pass").

Classes come from the title (where analyzers put their rule id) and the body (where they put
the CWE). The lead pass rewrites a canonical node's body, so `consolidate` freezes each node's
classes (`NodeView.defect_classes`) the first time it sees it: a merge must never make a node
match something it did not match before, or a second pass would merge more (not idempotent).

Two findings are the same issue when they share a defect class, or — as before, for defects
no table knows — have the same category and similar titles (`dedup.similarity`).

A model's terse words ("sql issue", "shell call") name no class, yet beside an analyzer's
finding on the same lines they speak of the same defect: when one of the two is an analyzer's
and the other, of the same type, mentions the subject of the analyzer's class (`subject:` in
the frozen classes: SQL or a query for an injection, a shell or a command, pickle or YAML, a
password or a token, TLS or a certificate, a hash), they are one finding. Two model findings
that only mention a subject are not merged by it.
"""

from __future__ import annotations

import re

from .fingerprints import title_tokens
from .types import NodeView

SQL_INJECTION = "sql-injection"
COMMAND_INJECTION = "command-injection"
CODE_INJECTION = "code-injection"
DESERIALIZATION = "unsafe-deserialization"
CREDENTIAL = "hardcoded-credential"
SWALLOWED = "swallowed-exception"
TLS = "disabled-tls-verification"
WEAK_CRYPTO = "weak-cryptography"

#: Rule ids by family number (bandit `B`, ruff's flake8-bandit port `S`) and a few ruff rules.
RULE_CLASSES: dict[str, str] = {
    **dict.fromkeys(("B608", "B610", "B611"), SQL_INJECTION),
    **dict.fromkeys(("B602", "B603", "B604", "B605", "B606", "B607", "B609"), COMMAND_INJECTION),
    **dict.fromkeys(("B102", "B307"), CODE_INJECTION),
    **dict.fromkeys(("B301", "B302", "B403", "B506"), DESERIALIZATION),
    **dict.fromkeys(("B105", "B106", "B107"), CREDENTIAL),
    **dict.fromkeys(("B110", "B112", "E722", "BLE001"), SWALLOWED),
    **dict.fromkeys(("B501", "B502", "B503", "B504", "B323"), TLS),
    **dict.fromkeys(("B303", "B304", "B305", "B324"), WEAK_CRYPTO),
}

CWE_CLASSES: dict[int, str] = {
    89: SQL_INJECTION,
    77: COMMAND_INJECTION,
    78: COMMAND_INJECTION,
    94: CODE_INJECTION,
    95: CODE_INJECTION,
    502: DESERIALIZATION,
    259: CREDENTIAL,
    321: CREDENTIAL,
    798: CREDENTIAL,
    390: SWALLOWED,
    396: SWALLOWED,
    # Not 703 ("improper check of exceptional conditions"): bandit files `assert` under it too,
    # and an assert swallows nothing. The swallowing rules are named by their ids above.
    295: TLS,
    326: WEAK_CRYPTO,
    327: WEAK_CRYPTO,
    328: WEAK_CRYPTO,
    916: WEAK_CRYPTO,
}

_TEXT_CLASSES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), cls)
    for pattern, cls in (
        (
            r"sql[ -]?injection|(sql|query)\b.{0,40}\b(built|formatted|concatenated|interpolated)"
            r"|string-based query|\braw sql\b|unparameteri[sz]ed",
            SQL_INJECTION,
        ),
        (r"command injection|shell[ -]?injection|shell\s*=\s*true|os\.system", COMMAND_INJECTION),
        (r"code injection|\beval\(|\bexec\(|arbitrary code", CODE_INJECTION),
        (r"pickle|deserializ|deserialis|yaml\.load|marshal\.load", DESERIALIZATION),
        (
            r"hard[- ]?coded (password|secret|credential|key|token)|credential committed"
            r"|committed (secret|credential|token|api key)|(secret|credential|api key|token)s? "
            r"(is )?(committed|in (the )?(code|source))",
            CREDENTIAL,
        ),
        (
            r"swallow|try, except, pass|except(ion)?\b.{0,20}\bpass\b|bare except"
            r"|silently (ignor|discard)",
            SWALLOWED,
        ),
        (r"verify\s*=\s*false|(certificate|tls|ssl) verification", TLS),
        (r"\bmd5\b|\bsha-?1\b|weak (hash|crypto|cipher)", WEAK_CRYPTO),
    )
)

# The loose words that name what a class is about; they match only beside an analyzer's class.
_SUBJECTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), cls)
    for pattern, cls in (
        (r"\bsql\b|\bquer(y|ies)\b", SQL_INJECTION),
        (r"\bshell\b|\bcommand\b|subprocess|os\.system|popen", COMMAND_INJECTION),
        (r"\beval\b|\bexec\b", CODE_INJECTION),
        (r"pickle|deserial|\byaml\b|marshal", DESERIALIZATION),
        (r"password|passwd|secret|\btoken\b|credential|api[ _-]?key", CREDENTIAL),
        (r"\btls\b|\bssl\b|certificate|\bverify\b", TLS),
        (r"\bmd5\b|\bsha-?1\b|\bhash", WEAK_CRYPTO),
        (r"\bexcept|swallow|\bignor", SWALLOWED),
    )
)
SUBJECT = "subject:"

# A rule id at a word boundary: `B608`, `S608`, `E722`, `BLE001`; ruff's `S` family is bandit's.
_RULE = re.compile(r"\b([A-Z]{1,3}\d{3,4})\b")
_CWE = re.compile(r"\bCWE[- ]?(\d{1,5})\b", re.IGNORECASE)


def _rule_family(rule: str) -> str:
    return "B" + rule[1:] if re.fullmatch(r"S\d{3}", rule) else rule


def text_classes(text: str) -> frozenset[str]:
    """Defect classes named in a piece of text: rule ids, CWEs and words."""
    found: set[str] = set()
    for rule in _RULE.findall(text):
        family = _rule_family(rule)
        found.add(RULE_CLASSES.get(family, f"rule:{family}"))
    for number in _CWE.findall(text):
        found.add(CWE_CLASSES.get(int(number), f"cwe:{int(number)}"))
    found.update(cls for pattern, cls in _TEXT_CLASSES if pattern.search(text))
    found.update(SUBJECT + cls for pattern, cls in _SUBJECTS if pattern.search(text))
    return frozenset(found)


def _named(classes: frozenset[str]) -> frozenset[str]:
    return frozenset(c for c in classes if not c.startswith(SUBJECT))


def _subject_beside_analyzer(
    analyzer: NodeView, its: frozenset[str], other: NodeView, theirs: frozenset[str]
) -> bool:
    """The analyzer's class is what the other (a reviewer's finding of the same type) talks
    about, in whatever words."""
    if analyzer.analyzer_rule is None or other.analyzer_rule is not None:
        return False
    return analyzer.type == other.type and any(SUBJECT + c in theirs for c in _named(its))


def defect_classes(node: NodeView) -> frozenset[str]:
    """The node's frozen classes, or those of its title and body when never frozen."""
    if node.defect_classes is not None:
        return frozenset(node.defect_classes)
    return text_classes(node.title) | text_classes(node.body)


def title_similarity(a: str, b: str) -> float:
    """Jaccard similarity of two titles' normalised words (0 when either has none)."""
    ta, tb = title_tokens(a), title_tokens(b)
    if not ta or not tb:
        return 0.0
    return len(ta & tb) / len(ta | tb)


SIMILARITY_THRESHOLD = 0.5


def same_issue(a: NodeView, b: NodeView) -> bool:
    """Same defect class (rule family, CWE, or words), an analyzer's class and a reviewer's
    words about its subject, or same category and similar titles."""
    classes_a, classes_b = defect_classes(a), defect_classes(b)
    if _named(classes_a) & _named(classes_b):
        return True
    if _subject_beside_analyzer(a, classes_a, b, classes_b) or _subject_beside_analyzer(
        b, classes_b, a, classes_a
    ):
        return True
    return a.category == b.category and title_similarity(a.title, b.title) >= SIMILARITY_THRESHOLD


def same_location(a: NodeView, b: NodeView) -> bool:
    """Overlapping lines of the same file and side, or both about the change as a whole."""
    if not a.anchored and not b.anchored:
        return True
    return a.overlaps(b)


def same_defect(a: NodeView, b: NodeView) -> bool:
    """The merge relation: the same issue at the same place."""
    return same_location(a, b) and same_issue(a, b)
