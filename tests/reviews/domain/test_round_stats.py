"""The typed shapes of a round's stats and facts and of a node's tags."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from reviews.domain.node_tags import NodeTags
from reviews.domain.round_stats import RoundFacts, RoundStats, StageName
from reviews.pipeline.template import PR_REVIEW_STAGES, gate_passes


def test_stage_names_are_the_pipeline_template_stages():
    assert set(get_args(StageName)) == {s.name for s in PR_REVIEW_STAGES}


def test_stats_keep_only_the_keys_written_and_the_stored_spelling():
    stats = RoundStats().with_(tokens={"in": 10, "out": 2}, context_utilization=None)
    assert stats.tokens is not None and stats.tokens.tokens_in == 10
    assert stats.to_json() == {"tokens": {"in": 10, "out": 2}, "context_utilization": None}
    routed = RoundStats().with_(
        cross_notes={"performance": [{"from": "implementation", "node": 3, "note": "slow"}]}
    )
    assert routed.cross_notes is not None
    assert routed.cross_notes["performance"][0].sender == "implementation"
    assert routed.to_json()["cross_notes"]["performance"][0]["from"] == "implementation"


@pytest.mark.parametrize(
    "values",
    [
        {"walkthroug": "typo"},
        {"panel": {"verified": "two"}},
        {"classification": {"size": "huge", "files": 1, "changed_lines": 1, "fast_exit": None}},
        {"cohorts": [{"key": "k"}]},
    ],
)
def test_stats_refuse_a_wrong_shape(values):
    with pytest.raises(ValidationError):
        RoundStats().with_(**values)


def test_the_gates_read_the_facts_as_before():
    facts = RoundFacts(
        tier="light",
        fast_exit=False,
        model_configured=True,
        python_changed=False,
        panel_mode="fast",
    )
    gates = {s.name: gate_passes(s.run_when, facts.for_gates()) for s in PR_REVIEW_STAGES}
    assert gates == {
        "prepare": True,
        "reviewers": True,
        "consolidate": True,
        "panel": True,  # it only marks every finding unverified: no lens runs
        "critic": False,  # fast mode skips the critic, so no follow-up either
        "followup": False,
        "followup_consolidate": False,
        "followup_panel": False,
        "finalise": True,
    }
    assert facts.fast_mode
    normal = facts.model_copy(update={"panel_mode": "normal", "followup": True})
    assert all(gate_passes(s.run_when, normal.for_gates()) for s in PR_REVIEW_STAGES)
    assert not normal.fast_mode


def test_tags_name_every_writer_key_and_refuse_others():
    tags = NodeTags().with_(
        analyzer={"tool": "bandit", "rule": "B602", "high_precision": False, "lines": [3, 4]},
        panel="contested",
        co_located=[2],
    )
    assert tags.contested and tags.analyzer is not None and tags.analyzer.lines == [3, 4]
    assert tags.without("co_located").to_json() == {
        "analyzer": {"tool": "bandit", "rule": "B602", "high_precision": False, "lines": [3, 4]},
        "panel": "contested",
    }
    with pytest.raises(ValidationError):
        NodeTags().with_(contested=True)
    with pytest.raises(ValidationError):
        NodeTags().with_(decided={"by": 1, "side": "security", "reason": "x"})
