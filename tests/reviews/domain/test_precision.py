"""The pure precision rules: test code, live secrets, grouping, defusing context, nosec."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.agents.offline import ANALYZERS
from reviews.agents.tool_config import excluded, nosec_silences
from reviews.domain.precision import (
    ANALYZER_AGENTS,
    Hit,
    also_on,
    defusing_context,
    group_hits,
    is_test_code,
    live_secret,
)
from reviews.domain.types import Priority


def test_the_analyzer_identities_are_the_registered_analyzers() -> None:
    assert set(ANALYZERS) == ANALYZER_AGENTS


@pytest.mark.parametrize(
    ("path", "text", "expected"),
    [
        ("tests/test_views.py", None, True),
        ("shop/tests.py", None, True),
        ("shop/conftest.py", None, True),
        ("shop/fixtures/settings.py", None, True),
        ("pkg/testdata/sample.py", None, True),
        ("shop/checks.py", "def test_totals():\n    assert 1\n", True),
        ("shop/checks.py", "class TotalsTests(unittest.TestCase):\n    pass\n", True),
        ("shop/views.py", "def total_view(request):\n    return 1\n", False),
        ("shop/latest.py", None, False),
        ("shop/contest.py", "def contest_test_mode():\n    pass\n", False),
    ],
)
def test_it_knows_test_code(path: str, text: str | None, expected: bool) -> None:
    assert is_test_code(path, text) is expected


@pytest.mark.parametrize(
    ("kind", "text", "expected"),
    [
        ("aws_access_key", 'KEY = "AKIAQ7WE9RT2YU4IO6PA"', True),
        ("aws_access_key", 'KEY = "AKIAIOSFODNN7EXAMPLE"', False),  # AWS's documented example
        ("stripe_key", 'KEY = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"', True),
        ("stripe_key", 'KEY = "sk_test_4eC39HqLyjWDarjtT1zdp7dc"', False),
        ("assignment", 'SECRET_KEY = "dev"', False),
        ("private_key", "-----BEGIN RSA PRIVATE KEY-----", False),
    ],
)
def test_live_secret_formats(kind: str, text: str, expected: bool) -> None:
    assert live_secret(kind, text) is expected


_hits = st.lists(
    st.tuples(
        st.sampled_from(["B101", "B324", "F401"]),
        st.sampled_from(["a.py", "b.py"]),
        st.sampled_from(list(Priority)),
        st.integers(1, 500),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(_hits)
def test_grouping_keeps_every_hit_once_and_anchors_on_the_strongest(rows) -> None:
    hits = [
        Hit(
            key=("bandit", rule, path, str(priority)),
            priority=priority,
            start=line,
            end=line,
            index=i,
        )
        for i, (rule, path, priority, line) in enumerate(rows)
    ]
    groups = group_hits(hits)
    members = sorted(i for g in groups for i in g.members)
    assert members == list(range(len(hits)))  # nothing lost, nothing twice
    assert len(groups) == len({h.key for h in hits})
    for group in groups:
        lead = hits[group.lead]
        same = [hits[i] for i in group.members]
        assert all(h.key == lead.key for h in same)
        assert lead.start == min(h.start for h in same)
        assert list(group.lines) == sorted({h.start for h in same})


def test_also_on_lists_the_other_lines() -> None:
    assert also_on([4], 4) == ""
    assert also_on([4, 9], 4) == "Also on line 9 (2 places in this file)."
    assert also_on(list(range(1, 41)), 1).endswith("… (40 places in this file).")


SIGNING = """\
import hashlib

def _lazy_sha1(string=b""):
    return hashlib.sha1(string)

class Signer:
    digest_method = staticmethod(_lazy_sha1)

def digest(password):
    return hashlib.sha1(password).hexdigest()
"""


def test_a_weak_hash_serving_a_signature_is_defused_and_a_password_hash_is_not() -> None:
    lines = SIGNING.splitlines()
    defused = defusing_context("B324", lines, 4, 4)
    assert defused is not None and defused.priority is Priority.P3
    assert defusing_context("B324", lines, 10, 10) is None
    assert defusing_context("B602", lines, 4, 4, tool_severity="LOW") is not None
    assert defusing_context("B602", lines, 4, 4, tool_severity="HIGH") is None


@pytest.mark.parametrize(
    ("comment", "silenced"),
    [
        ("x()  # nosec", True),
        ("x()  # nosec B602", True),
        ("x()  # nosec: B602, B607", True),
        ("x()  # nosec subprocess_popen_with_shell_equals_true", True),
        ("x()  # nosec - reviewed by security", True),  # no test named: a bare nosec
        ("x()  # nosec B101", False),
        ("x()  # no security here", False),
    ],
)
def test_nosec_comments(comment: str, silenced: bool) -> None:
    assert (
        nosec_silences([comment], [1], "B602", "subprocess_popen_with_shell_equals_true")
        is silenced
    )


def test_bandit_exclusions() -> None:
    assert excluded("tests/test_a.py", ["tests"])
    assert excluded("pkg/tests/test_a.py", ["*/tests/*"])
    assert excluded("docs/conf.py", ["./docs/"])
    assert not excluded("shop/tests_helpers.py", ["tests"])


@pytest.mark.parametrize(
    ("value", "plausible"),
    [
        ("", False),
        ("dev", False),
        ("_auth_user_id", False),
        ("is not", False),
        ("password", False),
        ('ALTER USER %(user)s IDENTIFIED BY "%(password)s"', False),
        ("0123456789abcdefghijklmnopqrstuvwxyz", False),
        ("hunter22", True),
        ("django-insecure-8f#k2m!x9q", True),
        ("Q7wE9rT2yU4iO6pA8sD1", True),
    ],
)
def test_plausible_secrets(value: str, plausible: bool) -> None:
    from reviews.domain.precision import plausible_secret

    assert plausible_secret(value) is plausible


def test_a_weak_hash_label_holds_but_does_not_block() -> None:
    from reviews.domain.severity_floors import DefectClass, cap_label

    assert cap_label(Priority.P0, DefectClass.WEAK_CRYPTOGRAPHY) is Priority.P1
    assert cap_label(Priority.P0, DefectClass.COMMAND_INJECTION) is Priority.P0
    assert cap_label(Priority.P2, DefectClass.WEAK_CRYPTOGRAPHY) is Priority.P2


CONTEXTS = """\
import hashlib
import pickle


def _sqlite_md5(text):
    return hashlib.md5(text.encode()).hexdigest()


class LegacyHasher:
    algorithm = "md5"

    def encode(self, password, salt):
        return hashlib.md5(salt + password).hexdigest()


def count(cursor, table):
    cursor.execute("SELECT COUNT(*) FROM %s" % connection.ops.quote_name(table))


def count_raw(cursor, table):
    cursor.execute("SELECT COUNT(*) FROM %s" % table)


def store(value):
    return pickle.dumps(value)


def load(blob):
    return pickle.loads(blob)
"""


@pytest.mark.parametrize(
    ("rule", "needle", "priority"),
    [
        ("B324", "hashlib.md5(text", Priority.P2),  # the function implements MD5 by name
        ("B324", "hashlib.md5(salt", Priority.P2),  # the class declares algorithm = "md5"
        ("B608", "quote_name(table)", Priority.P2),
        ("B608", "% table)", None),
        ("B301", "pickle.loads", Priority.P2),  # the module pickles what it unpickles
    ],
)
def test_context_that_defuses_a_rule(rule: str, needle: str, priority: Priority | None) -> None:
    lines = CONTEXTS.splitlines()
    number = next(n for n, text in enumerate(lines, 1) if needle in text)
    defused = defusing_context(rule, lines, number, number)
    assert (defused.priority if defused else None) is priority
