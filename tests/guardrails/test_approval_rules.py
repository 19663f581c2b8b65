"""The approval state machine under random sequences of actions."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from guardrails import rules
from workspaces.rules import Perm, role_allows

USERS = st.integers(1, 4)
ROLES = st.sampled_from(["owner", "admin", "approver", "reviewer", "viewer", None])
START = datetime(2026, 1, 1, tzinfo=UTC)


class ApprovalMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = START
        self.approval = rules.Approval(
            requester_id=1, head_sha="a" * 40, expires_at=START + timedelta(hours=1)
        )
        self.head = "a" * 40
        self.eligible_approvals: set[int] = set()
        self.executed_at: list[tuple[datetime, str]] = []
        self.seen = self.approval.status

    @rule(user=USERS, role=ROLES)
    def approve(self, user, role):
        try:
            after = rules.approve(self.approval, approver_id=user, approver_role=role, now=self.now)
        except rules.ApprovalError:
            return
        assert user != 1 and role_allows(role, Perm.DECIDE_APPROVAL)
        self.eligible_approvals.add(user)
        self.approval = after

    @rule(user=USERS, role=ROLES)
    def deny(self, user, role):
        with contextlib.suppress(rules.ApprovalError):
            self.approval = rules.deny(
                self.approval, approver_id=user, approver_role=role, now=self.now
            )

    @rule(minutes=st.integers(1, 90))
    def time_passes(self, minutes):
        self.now += timedelta(minutes=minutes)
        self.approval = rules.expire(self.approval, now=self.now)

    @rule()
    def push(self):
        self.head = "b" * 40

    @rule()
    def execute(self):
        try:
            rules.check_executable(self.approval, current_head_sha=self.head, now=self.now)
        except rules.ApprovalError:
            return
        self.executed_at.append((self.now, self.head))
        executing = rules.start_execution(self.approval)
        assert rules.may_move(self.approval.status, executing.status)
        self.approval = rules.executed(executing, ok=True)
        self.seen = executing.status

    @invariant()
    def every_move_is_in_the_table(self):
        """What the rules do, the one writer's table allows (guardrails/services.py)."""
        if self.approval.status is not self.seen:
            assert rules.may_move(self.seen, self.approval.status), (self.seen, self.approval)
        self.seen = self.approval.status

    @invariant()
    def never_self_approved(self):
        assert 1 not in self.approval.approvers

    @invariant()
    def executions_are_valid_and_single(self):
        assert len(self.executed_at) <= 1
        for when, head in self.executed_at:
            assert self.eligible_approvals, "executed without an eligible approval"
            assert head == self.approval.head_sha, "executed after a new head"
            assert when < self.approval.expires_at, "executed after expiry"


ApprovalMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=25, deadline=None
)
TestApprovalMachine = ApprovalMachine.TestCase


def test_the_requester_cannot_approve_but_may_withdraw():
    approval = rules.Approval(
        requester_id=1, head_sha="a" * 40, expires_at=START + timedelta(hours=1)
    )
    try:
        rules.approve(approval, approver_id=1, approver_role="owner", now=START)
    except rules.ApprovalError as exc:
        assert "someone else" in str(exc)
    else:
        raise AssertionError("self-approval was accepted")
    assert (
        rules.deny(approval, approver_id=1, approver_role="reviewer", now=START).status
        is rules.Status.CANCELLED
    )


def test_two_approvals_when_the_policy_asks_for_two():
    approval = rules.Approval(
        requester_id=1,
        head_sha="a" * 40,
        expires_at=START + timedelta(hours=1),
        approvals_required=2,
    )
    once = rules.approve(approval, approver_id=2, approver_role="approver", now=START)
    assert once.status is rules.Status.PENDING
    twice = rules.approve(once, approver_id=3, approver_role="admin", now=START)
    assert twice.status is rules.Status.APPROVED


SETTINGS = st.builds(
    rules.PolicySetting,
    st.sampled_from(list(rules.Policy)),
    st.integers(1, 5),
    st.integers(5, 7 * 24 * 60),
)


@given(SETTINGS)
def test_keeping_a_policy_never_loosens_it(setting):
    assert not rules.loosens(setting, setting)


@given(SETTINGS, SETTINGS)
def test_a_change_that_is_stricter_in_every_respect_never_loosens(a, b):
    strength = {rules.Policy.ALLOW: 0, rules.Policy.REQUIRE_APPROVAL: 1, rules.Policy.DENY: 2}
    stricter = (
        strength[b.policy] >= strength[a.policy]
        and b.approvals_required >= a.approvals_required
        and b.expires_after_minutes <= a.expires_after_minutes
    )
    if stricter:
        assert not rules.loosens(a, b)


@given(SETTINGS, SETTINGS)
def test_any_move_towards_allow_loosens_and_any_move_away_does_not(a, b):
    strength = {rules.Policy.ALLOW: 0, rules.Policy.REQUIRE_APPROVAL: 1, rules.Policy.DENY: 2}
    if strength[b.policy] < strength[a.policy]:
        assert rules.loosens(a, b)
    elif strength[b.policy] > strength[a.policy]:
        assert not rules.loosens(a, b)


@given(st.integers(1, 5), st.integers(1, 5), st.integers(5, 600), st.integers(5, 600))
def test_fewer_approvals_or_longer_expiry_loosens_require_approval(n1, n2, e1, e2):
    before = rules.PolicySetting(rules.Policy.REQUIRE_APPROVAL, n1, e1)
    after = rules.PolicySetting(rules.Policy.REQUIRE_APPROVAL, n2, e2)
    assert rules.loosens(before, after) == (n2 < n1 or e2 > e1)


@given(st.sampled_from(list(rules.Status)), USERS)
def test_only_the_requester_withdraws_and_only_an_open_request(status, who):
    approval = rules.Approval(
        requester_id=1, head_sha="a" * 40, expires_at=START + timedelta(hours=1), status=status
    )
    allowed = who == 1 and status in (rules.Status.PENDING, rules.Status.APPROVED)
    try:
        after = rules.withdraw(approval, requester_id=who, now=START)
    except rules.ApprovalError:
        assert not allowed
    else:
        assert allowed and after.status is rules.Status.CANCELLED


STATUSES = st.sampled_from(list(rules.Status))


def test_the_table_covers_the_model_statuses() -> None:
    from guardrails.models import ApprovalRequest

    assert set(rules.TRANSITIONS) == set(rules.Status)
    assert {s.value for s in rules.Status} == {
        v for v, _ in ApprovalRequest._meta.get_field("status").choices
    }


@given(STATUSES, STATUSES)
def test_a_terminal_status_never_changes_and_only_an_approved_request_executes(old, new):
    if old in rules.TERMINAL:
        assert not rules.may_move(old, new)
    if new is rules.Status.EXECUTING and rules.may_move(old, new):
        assert old is rules.Status.APPROVED
    if new is rules.Status.EXECUTED and rules.may_move(old, new):
        assert old is rules.Status.EXECUTING
    if new is rules.Status.APPROVED and rules.may_move(old, new):
        assert old is rules.Status.PENDING
