"""What the review tool tells an agent to do next: a process block is a question for its
person, a flagged review stops the loop, a Block asks for the fixes."""

from reviews.domain.outcomes import PROCESS_BLOCK
from reviews.mcp.tools import _next_step


def _data(*, verdict="block", flagged=False, streams=(), state="finished"):
    return {
        "space": {
            "flagged_for_human": flagged,
            "flag": {"reason": "2 rounds"} if flagged else None,
        },
        "verdict": {"level": verdict, "rule": "gated axis apiContract failed"},
        "round": {"state": state},
        "streams": [{"error": e} for e in streams],
    }


def test_next_steps():
    assert "still running" in _next_step(_data(state="running"), [])
    assert "original request" in _next_step(_data(streams=[PROCESS_BLOCK]), ["#1 fix"])
    flagged = _next_step(_data(flagged=True), ["#1 fix"])
    assert "flagged for a person" in flagged and "Do not request another round" in flagged
    assert ".." not in flagged
    assert _next_step(_data(), ["#1 fix"]).startswith("Fix the findings")
    assert _next_step(_data(verdict="ship"), []).startswith("Ship")
    # Blocked with nothing to fix (seen on a real release: a removed public API): the rule, not
    # an invitation to read findings that do not exist.
    axis = _next_step(_data(), [])
    assert "gated axis apiContract failed" in axis and "fix_list" in axis
