"""The severity table (rule id / CWE → floor) and the request-input heuristic."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.severity_floors import (
    REQUEST_INPUT_P0,
    DefectClass,
    classes_floor,
    classify,
    floor_for,
    raise_to_floor,
    request_input,
)
from reviews.domain.types import Priority

priorities = st.sampled_from(list(Priority))
defects = st.one_of(st.none(), st.sampled_from(list(DefectClass)))


@pytest.mark.parametrize(
    ("rule", "cwe", "expected"),
    [
        ("B608", 89, DefectClass.SQL_INJECTION),
        ("S608", None, DefectClass.SQL_INJECTION),  # ruff's port of the same bandit test
        ("B602", 78, DefectClass.COMMAND_INJECTION),
        ("B307", None, DefectClass.CODE_INJECTION),
        ("B301", 502, DefectClass.UNSAFE_DESERIALIZATION),
        ("B506", None, DefectClass.UNSAFE_DESERIALIZATION),
        ("B105", 259, DefectClass.HARDCODED_CREDENTIAL),
        ("secrets:api_key", None, DefectClass.HARDCODED_CREDENTIAL),
        ("B501", 295, DefectClass.TLS_VERIFICATION_DISABLED),
        ("B324", 327, DefectClass.WEAK_CRYPTOGRAPHY),
        # Known tool ids without a class keep none, whatever their CWE: an import is no
        # injection, a swallowed exception is not a security floor.
        ("B404", 78, None),
        ("B110", 703, None),
        ("S101", None, None),
        # Another tool's rule: the CWE decides.
        ("semgrep.tainted-sql", 89, DefectClass.SQL_INJECTION),
        (None, 798, DefectClass.HARDCODED_CREDENTIAL),
        (None, 703, None),
        (None, None, None),
    ],
)
def test_it_classes_findings_by_rule_id_then_cwe(rule, cwe, expected) -> None:
    assert classify(rule, cwe) is expected


def test_every_class_is_at_least_p1_and_request_input_makes_injections_p0() -> None:
    for defect in DefectClass:
        assert floor_for(defect) is Priority.P1
        expected = Priority.P0 if defect in REQUEST_INPUT_P0 else Priority.P1
        assert floor_for(defect, request_input=True) is expected
    assert floor_for(None, request_input=True) is None
    assert DefectClass.HARDCODED_CREDENTIAL not in REQUEST_INPUT_P0


@given(priorities, defects, st.booleans())
def test_a_floor_never_lowers_and_always_holds(priority, defect, tainted) -> None:
    floor = floor_for(defect, request_input=tainted)
    raised = raise_to_floor(priority, floor)
    assert raised.rank <= priority.rank
    if floor is not None:
        assert raised.rank <= floor.rank
    else:
        assert raised is priority
    assert raise_to_floor(raised, floor) is raised  # idempotent


@given(st.lists(st.sampled_from([*(c.value for c in DefectClass), "swallowed-exception", "x"])))
def test_class_names_of_any_stream_give_p1_when_any_is_known(names) -> None:
    known = any(n in {c.value for c in DefectClass} for n in names)
    assert classes_floor(names) is (Priority.P1 if known else None)


def _lines(text: str) -> list[str]:
    return text.splitlines()


def _at(lines: list[str], needle: str) -> int:
    return next(i for i, line in enumerate(lines, start=1) if needle in line)


def test_a_sink_reading_the_request_directly_is_tainted() -> None:
    lines = _lines('def v(request):\n    cur.execute("SELECT %s" % request.args["q"])\n')
    assert request_input(lines, 2, 2) is not None
    fstring = _lines("def v(x):\n    cur.execute(f\"SELECT {request.GET['q']}\")\n")
    assert request_input(fstring, 2, 2) is not None


def test_a_name_assigned_from_request_data_on_an_earlier_line_is_tainted() -> None:
    lines = _lines(
        "def v(req_obj):\n"
        "    q = request.form.get('q')\n"
        "    like = '%' + q + '%'\n"
        "    cur.execute(\"SELECT * FROM t WHERE n LIKE '%s'\" % like)\n"
    )
    taint = request_input(lines, 4, 4)
    assert taint is not None and "`like`" in taint.reason and "line 3" in taint.reason


def test_a_parameter_named_like_request_data_is_tainted() -> None:
    lines = _lines('def handler(payload):\n    os.system("run %s" % payload)\n')
    assert "payload" in request_input(lines, 2, 2).reason


def test_a_function_called_with_request_data_elsewhere_in_the_change_is_tainted() -> None:
    lines = _lines(
        "def search_products(term):\n"
        "    with connect() as conn:\n"
        "        query = \"SELECT name FROM p WHERE name LIKE '%%%s%%'\" % term\n"
        "        return conn.execute(query).fetchall()\n"
    )
    caller = ['    return 200, search_products(request.GET["q"])']
    taint = request_input(lines, 3, 3, change_lines=caller)
    assert taint is not None and "search_products" in taint.reason
    # Called with something else, or not at all: no visible request input.
    assert request_input(lines, 3, 3, change_lines=["search_products(name)"]) is None
    assert request_input(lines, 3, 3) is None


def test_evidence_must_be_on_lines_the_change_adds() -> None:
    lines = _lines(
        "def v(x):\n"
        "    q = request.GET['q']\n"  # pre-existing line
        '    cur.execute("SELECT %s" % q)\n'
    )
    assert request_input(lines, 3, 3, added={3}) is None
    assert request_input(lines, 3, 3, added={2, 3}) is not None


def test_no_request_no_taint() -> None:
    lines = _lines(
        "def export(filename):\n"
        '    subprocess.call("tar czf %s products/" % filename, shell=True)\n'
        "QUERY = 'SELECT request.GET FROM t'\n"  # a word inside a string is not a read
    )
    assert request_input(lines, 2, 2) is None
    assert request_input(lines, 3, 3) is None
    assert request_input(lines, 0, 1) is None and request_input(lines, 2, 9) is None


@given(st.lists(st.text(max_size=40), max_size=12), st.integers(-2, 14), st.integers(-2, 14))
def test_the_heuristic_never_raises(lines, start, end) -> None:
    request_input(lines, start, end, change_lines=lines)
