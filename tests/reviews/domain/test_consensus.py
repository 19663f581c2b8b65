"""Node status ladder, peer confirmation and dismissal memory."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.consensus import (
    SUPPRESSION_CONFIDENCE,
    Action,
    Actor,
    ConsensusError,
    SelfConfirmationError,
    TransitionError,
    actions_allowed,
    apply_action,
    check_transition,
    confirm,
    dismiss,
    is_peer_confirmed,
    peer_confirmers,
    reopen,
    resolve,
    suppression_fact_for_dismissal,
)
from reviews.domain.types import Category, NodeStatus, NodeType, NodeView, Priority

AUTHOR = "agent:implementation"
PEER = Actor.agent("agent:quality")
ALICE = Actor.person("alice")


def _node(**kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id="n1", agent=AUTHOR, type=NodeType.BUG, priority=Priority.P1, confidence=0.9
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (NodeStatus.OPEN, NodeStatus.CONSENSUS_READY),
        (NodeStatus.OPEN, NodeStatus.RESOLVED),
        (NodeStatus.OPEN, NodeStatus.DISMISSED),
        (NodeStatus.CONSENSUS_READY, NodeStatus.RESOLVED),
        (NodeStatus.CONSENSUS_READY, NodeStatus.DISMISSED),
        (NodeStatus.RESOLVED, NodeStatus.OPEN),
        (NodeStatus.DISMISSED, NodeStatus.OPEN),
    ],
)
def test_it_allows_the_ladder_steps(current: NodeStatus, target: NodeStatus) -> None:
    """Every step of the status ladder is allowed."""
    check_transition(current, target)


@pytest.mark.parametrize(
    ("current", "target"),
    [
        (NodeStatus.CONSENSUS_READY, NodeStatus.OPEN),
        (NodeStatus.RESOLVED, NodeStatus.DISMISSED),
        (NodeStatus.DISMISSED, NodeStatus.CONSENSUS_READY),
        (NodeStatus.RESOLVED, NodeStatus.CONSENSUS_READY),
        (NodeStatus.OPEN, NodeStatus.OPEN),
    ],
)
def test_it_refuses_steps_off_the_ladder(current: NodeStatus, target: NodeStatus) -> None:
    """Steps not on the ladder raise TransitionError naming both statuses."""
    with pytest.raises(TransitionError, match=f"a {current} node cannot become {target}"):
        check_transition(current, target)


def test_it_lets_a_peer_agent_confirm() -> None:
    """A different agent's confirmation makes an open node consensus_ready."""
    assert confirm(status=NodeStatus.OPEN, author_agent=AUTHOR, by=PEER) is (
        NodeStatus.CONSENSUS_READY
    )


def test_it_refuses_self_confirmation_under_another_stream_name() -> None:
    """Identity is the agent, not the stream: the author cannot confirm its own node."""
    with pytest.raises(SelfConfirmationError, match="must come from a peer"):
        confirm(status=NodeStatus.OPEN, author_agent=AUTHOR, by=Actor.agent(AUTHOR))


def test_it_lets_a_person_confirm_as_a_peer_but_not_an_anonymous_agent() -> None:
    """A person is never the author of an agent's node; an empty identity is nobody's peer."""
    assert confirm(status=NodeStatus.OPEN, author_agent=AUTHOR, by=ALICE) is (
        NodeStatus.CONSENSUS_READY
    )
    with pytest.raises(SelfConfirmationError):
        confirm(status=NodeStatus.OPEN, author_agent=AUTHOR, by=Actor.person(" "))
    with pytest.raises(SelfConfirmationError):
        confirm(status=NodeStatus.OPEN, author_agent=AUTHOR, by=Actor.agent("  "))
    with pytest.raises(SelfConfirmationError):
        confirm(status=NodeStatus.OPEN, author_agent="", by=PEER)


def test_it_treats_a_second_peer_confirmation_as_a_no_op_but_not_a_closed_node() -> None:
    """consensus_ready stays so; a resolved node cannot be confirmed."""
    assert confirm(status=NodeStatus.CONSENSUS_READY, author_agent=AUTHOR, by=PEER) is (
        NodeStatus.CONSENSUS_READY
    )
    with pytest.raises(TransitionError):
        confirm(status=NodeStatus.RESOLVED, author_agent=AUTHOR, by=PEER)


def test_it_reserves_resolve_dismiss_reopen_for_people() -> None:
    """People resolve, dismiss and reopen; agents get a refusal."""
    assert resolve(status=NodeStatus.OPEN, by=ALICE) is NodeStatus.RESOLVED
    assert dismiss(status=NodeStatus.CONSENSUS_READY, by=ALICE) is NodeStatus.DISMISSED
    assert reopen(status=NodeStatus.DISMISSED, by=ALICE) is NodeStatus.OPEN
    for action in (resolve, dismiss):
        with pytest.raises(ConsensusError, match="only a person"):
            action(status=NodeStatus.OPEN, by=PEER)
    with pytest.raises(TransitionError):
        reopen(status=NodeStatus.OPEN, by=ALICE)


def test_it_lists_the_actions_an_actor_may_take() -> None:
    """Buttons and tool refusals come from the same rules."""
    assert actions_allowed(status=NodeStatus.OPEN, author_agent=AUTHOR, by=PEER) == {Action.CONFIRM}
    assert actions_allowed(status=NodeStatus.OPEN, author_agent=AUTHOR, by=ALICE) == {
        Action.CONFIRM,
        Action.RESOLVE,
        Action.DISMISS,
    }
    assert (
        actions_allowed(status=NodeStatus.OPEN, author_agent=AUTHOR, by=Actor.agent(AUTHOR))
        == frozenset()
    )


def test_it_counts_only_peer_confirmations() -> None:
    """The finaliser/publisher re-check ignores the author's own confirmation."""
    node = _node(confirmed_by=(AUTHOR, "", "agent:quality", "agent:quality"))
    assert peer_confirmers(node) == ("agent:quality",)
    assert not is_peer_confirmed(_node(confirmed_by=(AUTHOR,)))


actors = st.one_of(
    st.sampled_from([AUTHOR, "agent:quality", "agent:architecture"]).map(Actor.agent),
    st.sampled_from(["alice", "bob"]).map(Actor.person),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(Action)), actors), max_size=12))
def test_it_never_lets_an_author_confirm_its_own_node(
    steps: list[tuple[Action, Actor]],
) -> None:
    """Whatever sequence of actions runs, the author's confirm always fails, and a node only
    reaches consensus_ready through a peer's confirmation (another agent or a person)."""
    status = NodeStatus.OPEN
    for action, actor in steps:
        before = status
        try:
            status = apply_action(action, status=status, author_agent=AUTHOR, by=actor)
        except ConsensusError:
            assert status is before
            continue
        if action is Action.CONFIRM:
            assert actor.identity != AUTHOR
        if status is NodeStatus.CONSENSUS_READY and before is not NodeStatus.CONSENSUS_READY:
            assert action is Action.CONFIRM and actor != Actor.agent(AUTHOR)
    with pytest.raises(ConsensusError):
        apply_action(Action.CONFIRM, status=status, author_agent=AUTHOR, by=Actor.agent(AUTHOR))


def test_it_describes_a_low_confidence_non_binding_suppression_fact() -> None:
    """Dismissing writes a hint scoped to workspace, repository, fingerprint, category, path."""
    node = _node(
        category=Category.STYLE,
        path="reviews/x.py",
        start_line=3,
        end_line=3,
        title="Prefer f-strings",
    )
    fact = suppression_fact_for_dismissal(
        workspace_id="w1", repository_id="r1", node=node, reason=" team style ", fingerprint="ab"
    )
    assert fact.confidence == SUPPRESSION_CONFIDENCE == 0.3
    assert fact.binding is False
    assert (fact.workspace_id, fact.repository_id, fact.fingerprint) == ("w1", "r1", "ab")
    assert (fact.category, fact.path_pattern, fact.reason) == (
        Category.STYLE,
        "reviews/x.py",
        "team style",
    )
    assert "hint, not a rule" in fact.statement


def test_it_scopes_an_unanchored_dismissal_to_the_whole_repository() -> None:
    """No anchor → the pattern covers the repository; an empty reason is made explicit."""
    fact = suppression_fact_for_dismissal(
        workspace_id="w", repository_id="r", node=_node(), reason=""
    )
    assert fact.path_pattern == "**"
    assert fact.reason == "no reason given"


@given(st.integers(min_value=1, max_value=10**9), st.text(min_size=1, max_size=40))
def test_confirmers_read_as_people_and_agents_never_as_ids(person_id, name):
    from reviews.domain.consensus import confirmer_label, outside_agent

    agent = outside_agent(person_id, name)
    assert confirmer_label(agent.identity) == f"agent {name}"  # the name, never the id
    assert confirmer_label(f"person:{person_id}") == "a person"
    assert confirmer_label("security") == "security"
    # Two agents of one person are two peers; an agent is never its person.
    assert outside_agent(person_id, name + "x").identity != agent.identity
    assert agent.identity != f"person:{person_id}"


# -- peers are people ---------------------------------------------------------------------------

PEOPLE = (7, 8, 9)
PIPELINE = ("implementation", "quality", "lens-1")


def _identity(draw_kind: str, person: int, name: str) -> str:
    if draw_kind == "person":
        return f"person:{person}"
    if draw_kind == "agent":
        return f"agent:{person}:{name}"
    return name


identities = st.builds(
    _identity,
    st.sampled_from(["person", "agent", "pipeline"]),
    st.sampled_from(PEOPLE),
    st.sampled_from(["claude-code", "opencode", *PIPELINE]),
)


def _owner(identity: str) -> str:
    """Whose say an identity is, written out independently of `voice`."""
    if identity.startswith("person:"):
        return identity
    if identity.startswith("agent:"):
        return "person:" + identity.split(":")[1]
    return identity


@settings(max_examples=300, deadline=None)
@given(identities, st.lists(identities, max_size=8))
def test_confirmations_count_once_per_person_and_never_the_authors(author, confirmers):
    node = _node(agent=author, confirmed_by=tuple(confirmers))
    counted = peer_confirmers(node)
    expected_voices = {_owner(c) for c in confirmers} - {_owner(author)}
    assert len(counted) == len(expected_voices)
    assert {_owner(c) for c in counted} == expected_voices
    assert is_peer_confirmed(node) == bool(expected_voices)
    for confirmer in confirmers:
        by = (
            Actor.person(confirmer.removeprefix("person:"))
            if confirmer.startswith("person:")
            else Actor.agent(confirmer)
        )
        if _owner(confirmer) == _owner(author):
            with pytest.raises(SelfConfirmationError):
                confirm(status=NodeStatus.OPEN, author_agent=author, by=by)
        else:
            assert confirm(status=NodeStatus.OPEN, author_agent=author, by=by) is (
                NodeStatus.CONSENSUS_READY
            )


def test_one_persons_two_agents_and_the_person_are_not_a_quorum() -> None:
    author = "agent:7:claude-code"
    for by in (Actor.agent("agent:7:opencode"), Actor.person("7"), Actor.agent(author)):
        with pytest.raises(SelfConfirmationError):
            confirm(status=NodeStatus.OPEN, author_agent=author, by=by)
    node = _node(agent=author, confirmed_by=("agent:7:opencode", "person:7"))
    assert peer_confirmers(node) == () and not is_peer_confirmed(node)
    assert confirm(status=NodeStatus.OPEN, author_agent=author, by=Actor.person("8")) is (
        NodeStatus.CONSENSUS_READY
    )
    # A person's own finding is not confirmed by their agent either.
    with pytest.raises(SelfConfirmationError, match="one voice"):
        confirm(status=NodeStatus.OPEN, author_agent="person:7", by=Actor.agent(author))
