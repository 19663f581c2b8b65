"""The reviewer configs every new workspace starts with."""

from __future__ import annotations

DEFAULT_REVIEWERS: list[dict] = [
    {
        "key": "implementation",
        "name": "Implementation",
        "base_agent": "implementation",
        "instructions": (
            "Check that the code does what the change says it does: logic errors, wrong "
            "conditions, off-by-one mistakes, unhandled errors, resource leaks, races."
        ),
        "anti_patterns": [
            "swallowed exception",
            "mutable default argument",
            "unchecked return value",
        ],
        "criteria": [{"name": "correctness", "weight": 5}, {"name": "error handling", "weight": 3}],
    },
    {
        "key": "quality",
        "name": "Quality",
        "base_agent": "quality",
        "instructions": (
            "Judge readability and maintainability: naming, duplication, dead code, tests that "
            "cannot fail, missing tests for new behaviour. Style alone is a P3 at most."
        ),
        "anti_patterns": ["copy-pasted logic", "test without assertion", "magic numbers"],
        "criteria": [{"name": "maintainability", "weight": 4}, {"name": "testing", "weight": 4}],
    },
    {
        "key": "architecture",
        "name": "Architecture",
        "base_agent": "architecture",
        "instructions": (
            "Look at module boundaries, dependencies between layers, public interfaces that "
            "changed, and whether the change fits the structure the codebase already has."
        ),
        "anti_patterns": ["business logic in views", "circular import", "leaky abstraction"],
        "criteria": [
            {"name": "cohesion", "weight": 3},
            {"name": "interface stability", "weight": 4},
        ],
    },
    {
        "key": "security",
        "name": "Security",
        "base_agent": "architecture",
        "brief": (
            "Security brief: authentication, sessions and tokens; access control on every entry "
            "point; injection through SQL, shell or templates; secrets in code; untrusted input "
            "reaching models or external calls."
        ),
        "instructions": "Name the attacker and the path they would take; no theoretical findings.",
        "anti_patterns": [
            "SQL built from strings",
            "missing permission check",
            "hard-coded secret",
        ],
        "criteria": [
            {"name": "exploitability", "weight": 5},
            {"name": "blast radius", "weight": 3},
        ],
    },
    {
        "key": "performance",
        "name": "Performance",
        "base_agent": "implementation",
        "brief": (
            "Performance brief: queries in loops, missing indexes for new queries, unbounded "
            "memory, blocking calls on hot paths, work repeated per request."
        ),
        "instructions": "Only flag what matters at realistic sizes; say the size you assume.",
        "anti_patterns": ["N+1 queries", "loading a whole table into memory"],
        "criteria": [{"name": "hot path impact", "weight": 5}],
    },
    {
        "key": "requirements",
        "name": "Requirements",
        "base_agent": "requirements",
        "instructions": (
            "Compare the change with the original request: what was asked and not done, what was "
            "done and not asked. Without the original request, ask for it instead of guessing."
        ),
        "anti_patterns": ["scope creep", "unrequested behaviour change"],
        "criteria": [{"name": "compliance", "weight": 5}],
    },
]
