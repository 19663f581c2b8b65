"""retry_db: a lost database connection is retried with backoff, then the last error is raised."""

from __future__ import annotations

import pytest
import stamina
from django.db import OperationalError

from reviews.pipeline import faults


def _failing(times: int):
    calls = []

    def call() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise OperationalError("server closed the connection unexpectedly")
        return "done"

    return call, calls


def test_a_blip_is_retried_until_the_call_succeeds():
    call, calls = _failing(2)
    with stamina.set_testing(True, attempts=faults.ATTEMPTS):  # no waiting in tests
        assert faults.retry_db(call, what="probe") == "done"
    assert len(calls) == 3


@pytest.mark.parametrize("attempts", [faults.ATTEMPTS, 4])
def test_an_outage_gives_up_after_the_last_attempt_with_the_last_error(attempts):
    call, calls = _failing(100)
    with (
        stamina.set_testing(True, attempts=attempts),
        pytest.raises(OperationalError, match="closed the connection"),
    ):
        faults.retry_db(call, what="probe", attempts=attempts)
    assert len(calls) == attempts


def test_other_errors_are_not_retried():
    calls = []

    def call() -> None:
        calls.append(1)
        raise ValueError("a bug, not a blip")

    with stamina.set_testing(True, attempts=faults.ATTEMPTS), pytest.raises(ValueError):
        faults.retry_db(call, what="probe")
    assert calls == [1]
