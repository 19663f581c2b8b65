"""Node status transitions and the peer-confirmation rule.

Who may do what:
- an *agent* may only `confirm`, and only a node written by another agent. Identity is the agent
  behind a stream, never the stream's name: the same agent writing under a second stream name is
  still the author ("an agent can never confirm its own node").
- a *person* may `resolve`, `dismiss` and `reopen`, and may `confirm` as a peer. It is
  recorded under the identity `person:<user id>`, which no agent can carry.
- peers are people: a person and every agent acting for them (`agent:<person id>:<name>`) are
  one voice (`voice`). Nobody confirms a finding of their own voice (a person their agent's,
  an agent its person's or its sibling's), and confirmations are counted once per voice.

The service layer calls `apply_action` under its row lock; the finaliser and the publisher
re-check with `peer_confirmers`: the rule is enforced in three independent places
(docs/domain-rules.md#consensus-and-peer-confirmation).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from config.application_errors import ApplicationError, ErrorCode

from .types import Category, NodeStatus, NodeView


class ConsensusError(ApplicationError):
    """A status change the rules forbid; the message is shown to the caller as is."""

    code = ErrorCode.TRANSITION_REFUSED


class TransitionError(ConsensusError):
    pass


class SelfConfirmationError(ConsensusError):
    code = ErrorCode.SELF_CONFIRMATION


class ActorKind(StrEnum):
    AGENT = "agent"
    PERSON = "person"


class Action(StrEnum):
    CONFIRM = "confirm"
    RESOLVE = "resolve"
    DISMISS = "dismiss"
    REOPEN = "reopen"


@dataclass(frozen=True, slots=True)
class Actor:
    kind: ActorKind
    identity: str

    @classmethod
    def agent(cls, identity: str) -> Actor:
        return cls(ActorKind.AGENT, identity)

    @classmethod
    def person(cls, identity: str) -> Actor:
        return cls(ActorKind.PERSON, identity)

    def __str__(self) -> str:
        return f"{self.kind} {self.identity!r}"


ALLOWED_TRANSITIONS: dict[NodeStatus, frozenset[NodeStatus]] = {
    NodeStatus.OPEN: frozenset(
        {NodeStatus.CONSENSUS_READY, NodeStatus.RESOLVED, NodeStatus.DISMISSED}
    ),
    NodeStatus.CONSENSUS_READY: frozenset({NodeStatus.RESOLVED, NodeStatus.DISMISSED}),
    NodeStatus.RESOLVED: frozenset({NodeStatus.OPEN}),
    NodeStatus.DISMISSED: frozenset({NodeStatus.OPEN}),
}

_TARGET = {
    Action.CONFIRM: NodeStatus.CONSENSUS_READY,
    Action.RESOLVE: NodeStatus.RESOLVED,
    Action.DISMISS: NodeStatus.DISMISSED,
    Action.REOPEN: NodeStatus.OPEN,
}


def check_transition(current: NodeStatus, target: NodeStatus) -> None:
    """Raise TransitionError unless `current → target` is on the status ladder."""
    if target not in ALLOWED_TRANSITIONS[current]:
        allowed = ", ".join(sorted(ALLOWED_TRANSITIONS[current])) or "nothing"
        raise TransitionError(
            f"a {current} node cannot become {target} (from {current}: {allowed})"
        )


def voice(identity: str) -> str:
    """Whose say an identity is: a person and all their agents speak as `person:<id>`; a
    pipeline reviewer (or a verifier lens) speaks for itself. "" for nobody."""
    identity = identity.strip()
    if identity.startswith(OUTSIDE_AGENT_PREFIX):
        person, sep, name = identity.removeprefix(OUTSIDE_AGENT_PREFIX).partition(":")
        if sep and name and person.isascii() and person.isdigit():
            return f"{PERSON_PREFIX}{int(person)}"
    return identity


def is_peer(*, author_agent: str, confirmer_agent: str) -> bool:
    """True when the confirmer is an identifiable voice other than the author's: not the same
    agent, not the author's person, not another agent of that person."""
    author, confirmer = voice(author_agent), voice(confirmer_agent)
    # An empty identity would make every comparison "different": treat it as nobody.
    return bool(author) and bool(confirmer) and author != confirmer


def confirm(*, status: NodeStatus, author_agent: str, by: Actor) -> NodeStatus:
    """A peer (another agent, or a person) confirms a node → consensus_ready.

    Confirming a node that is already consensus_ready is a no-op for a second peer (the service
    still records the confirmation); the self-confirmation check runs first regardless.
    """
    confirmer = person_identity(by)
    if not is_peer(author_agent=author_agent, confirmer_agent=confirmer):
        if confirmer and confirmer.strip() != author_agent.strip():
            raise SelfConfirmationError(
                f"{confirmer_label(confirmer)} cannot confirm a finding by "
                f"{confirmer_label(author_agent)}: a person and their agents are one voice, "
                "and confirmation must come from a peer"
            )
        raise SelfConfirmationError(
            f"agent {by.identity!r} cannot confirm a node written by agent {author_agent!r}: "
            "confirmation must come from a peer"
        )
    if status is NodeStatus.CONSENSUS_READY:
        return status
    check_transition(status, NodeStatus.CONSENSUS_READY)
    return NodeStatus.CONSENSUS_READY


def person_identity(actor: Actor) -> str:
    """The confirmer identity stored for an actor: an agent's own name, `person:<id>` for a
    person (the prefix keeps a person and an agent of the same name apart)."""
    if actor.kind is ActorKind.PERSON:
        return f"{PERSON_PREFIX}{actor.identity.strip()}" if actor.identity.strip() else ""
    return actor.identity


PERSON_PREFIX = "person:"
#: An agent outside the pipeline (MCP, an agent's API token): `agent:<person id>:<its name>`,
#: so two agents of one person are still two peers.
OUTSIDE_AGENT_PREFIX = "agent:"


def outside_agent(person_id: int, name: str) -> Actor:
    return Actor.agent(f"{OUTSIDE_AGENT_PREFIX}{person_id}:{name}"[:60])


#: The verification panel's lenses confirm as `lens-<name>` (reviews/services/node_panel.py).
LENS_PREFIX = "lens-"


def confirmers_in_words(identities: Iterable[str]) -> str:
    """Who confirmed, as a reader says it: the panel's lenses counted as verifiers (their
    names are internal), everyone else by `confirmer_label`: "2 verifiers, a person, security"."""
    identities = set(identities)
    lenses = sum(i.startswith(LENS_PREFIX) for i in identities)
    others = sorted({confirmer_label(i) for i in identities if not i.startswith(LENS_PREFIX)})
    counted = [f"{lenses} verifier" + ("s" if lenses > 1 else "")] if lenses else []
    return ", ".join([*counted, *others])


def confirmer_label(identity: str) -> str:
    """A stored identity as a reader sees it: "a person", "agent <name>", or the reviewer's
    own name."""
    if identity.startswith(PERSON_PREFIX):
        return "a person"
    if identity.startswith(OUTSIDE_AGENT_PREFIX):
        _, _, name = identity.removeprefix(OUTSIDE_AGENT_PREFIX).partition(":")
        return f"agent {name}" if name else "an agent"
    return identity


def resolve(*, status: NodeStatus, by: Actor) -> NodeStatus:
    return _person_transition(Action.RESOLVE, status=status, by=by)


def dismiss(*, status: NodeStatus, by: Actor) -> NodeStatus:
    return _person_transition(Action.DISMISS, status=status, by=by)


def reopen(*, status: NodeStatus, by: Actor) -> NodeStatus:
    return _person_transition(Action.REOPEN, status=status, by=by)


def apply_action(action: Action, *, status: NodeStatus, author_agent: str, by: Actor) -> NodeStatus:
    """Dispatch one action; the single entry point the node service uses."""
    if action is Action.CONFIRM:
        return confirm(status=status, author_agent=author_agent, by=by)
    return _person_transition(action, status=status, by=by)


def peer_confirmers(node: NodeView) -> tuple[str, ...]:
    """The confirmations that count, one per voice other than the author's, sorted (a voice
    with several confirmations is named by its first identity in sort order).

    The finaliser and publisher call this instead of trusting `status` alone, so a row written
    around the service (or by an older bug) cannot smuggle in a self-confirmation, and one
    person's agents cannot add up to a consensus.
    """
    by_voice: dict[str, str] = {}
    for c in sorted({c.strip() for c in node.confirmed_by}):
        if is_peer(author_agent=node.agent, confirmer_agent=c):
            by_voice.setdefault(voice(c), c)
    return tuple(sorted(by_voice.values()))


def is_peer_confirmed(node: NodeView) -> bool:
    return bool(peer_confirmers(node))


def _person_transition(action: Action, *, status: NodeStatus, by: Actor) -> NodeStatus:
    if by.kind is not ActorKind.PERSON:
        raise ConsensusError(
            f"only a person can {action} a node; reviewer agents may only confirm peers' nodes"
        )
    target = _TARGET[action]
    check_transition(status, target)
    return target


# --- dismissal memory ----------------------------------------------------------------------

#: Low on purpose: a dismissal is one person's preference on one case, a hint for later reviews.
SUPPRESSION_CONFIDENCE = 0.3


@dataclass(frozen=True, slots=True)
class SuppressionFact:
    """A non-binding memory fact written when a person dismisses a node.

    Later reviews see it as a hint ("this was dismissed before, because …"); nothing is ever
    auto-deleted because of it. The lead pass reads it back: a finding that repeats it is
    recorded dismissed, crediting it (reviews/domain/dismissal_memory.py).
    """

    workspace_id: str
    repository_id: str
    fingerprint: str | None
    category: Category
    path_pattern: str
    reason: str
    title: str
    confidence: float = SUPPRESSION_CONFIDENCE
    binding: bool = False

    @property
    def statement(self) -> str:
        return (
            f"A {self.category} finding like {self.title!r} in {self.path_pattern} was dismissed"
            f" by a person: {self.reason}. Treat as a hint, not a rule."
        )


def suppression_fact_for_dismissal(
    *,
    workspace_id: str,
    repository_id: str,
    node: NodeView,
    reason: str,
    fingerprint: str | None = None,
) -> SuppressionFact:
    """Describe the memory fact to store for a dismissed node.

    The path pattern is the node's exact path (the narrowest scope that still helps the next
    review of that file); an unanchored node yields `**`, i.e. the whole repository.
    """
    return SuppressionFact(
        workspace_id=workspace_id,
        repository_id=repository_id,
        fingerprint=fingerprint,
        category=node.category,
        path_pattern=node.path or "**",
        reason=reason.strip() or "no reason given",
        title=node.title,
    )


def actions_allowed(*, status: NodeStatus, author_agent: str, by: Actor) -> frozenset[Action]:
    """Which actions `by` could take now (for rendering buttons and tool refusals)."""
    allowed = set()
    for action in Action:
        try:
            apply_action(action, status=status, author_agent=author_agent, by=by)
        except ConsensusError:
            continue
        allowed.add(action)
    return frozenset(allowed)
