"""flake8 and pylint options as ruff selectors (pure; the table is a small stand-in for ruff's)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.lint_mapping import (
    RuleTable,
    flake8_options,
    flake8_selection,
    parse_per_file_ignores,
    pylint_ignores,
    split_list,
)

TABLE = RuleTable(
    codes=frozenset(
        {"E501", "E711", "E722", "E902", "F401", "F821", "W291", "B006", "B023", "C401", "C901"}
        | {"PLE0101", "PLC0414", "S608"}
    ),
    prefixes=frozenset({"E", "W", "F", "B", "C4", "C90", "PL", "PLE", "PLC", "S"}),
    pylint_names={"PLE0101": "return-in-init", "PLC0414": "useless-import-alias"},
)
QUORUM = ("F", "E9", "E722", "B", "PLE")


def _arg(args: tuple[str, ...], flag: str) -> list[str]:
    return args[args.index(flag) + 1].split(",") if flag in args else []


def test_lists_split_on_commas_newlines_and_drop_comments() -> None:
    assert split_list("E501, W503\n  B  # bugbear off\n;only a comment") == ("E501", "W503", "B")


def test_per_file_ignores_in_flake8s_layouts() -> None:
    assert parse_per_file_ignores("tests/*: B, E501\n  pkg/__init__.py:F401") == (
        ("tests/*", ("B", "E501")),
        ("pkg/__init__.py", ("F401",)),
    )
    assert parse_per_file_ignores("a.py:E1 b.py: F4,F8") == (
        ("a.py", ("E1",)),
        ("b.py", ("F4", "F8")),
    )


def test_the_django_layout_keeps_b006_only_and_names_what_ruff_lacks() -> None:
    options = flake8_options({"extend_ignore": "E501,W503,W504,B", "extend-select": "B006"})
    selection = flake8_selection(options, TABLE, QUORUM)
    assert "B006" in _arg(selection.args, "--select")
    assert {"B", "E501"} <= set(_arg(selection.args, "--ignore"))
    assert selection.asked == ("B006",) and selection.asks_for("B006")
    assert not selection.asks_for("B023")
    assert {"W503", "W504"} <= set(selection.dropped)


def test_mccabe_only_with_a_threshold_and_flake8s_c_is_both_c_linters() -> None:
    without = flake8_selection(flake8_options({"select": "C,E"}), TABLE, ())
    assert _arg(without.args, "--select") == ["C4", "E"]
    with_threshold = flake8_selection(
        flake8_options({"select": "C,E", "max-complexity": "12"}), TABLE, ()
    )
    assert _arg(with_threshold.args, "--select") == ["C4", "C90", "E"]
    assert "lint.mccabe.max-complexity = 12" in with_threshold.args


def test_security_rules_are_never_selected_through_ruff() -> None:
    selection = flake8_selection(flake8_options({"select": "E,S,S608"}), TABLE, ())
    assert _arg(selection.args, "--select") == ["E"]


def test_pylint_names_codes_categories_and_all() -> None:
    assert pylint_ignores(["return-in-init", "C0414", "no-member"], TABLE) == (
        "PLE0101",
        "PLC0414",
    )
    assert pylint_ignores(["E"], TABLE) == ("PLE",)
    assert pylint_ignores(["all"], TABLE) == ("PL",)


_SELECTORS = st.sampled_from(
    ["E", "E5", "E501", "W503", "B", "B0", "B006", "C", "C9", "F", "X100", "PLE", "S", "", "e7"]
)
_LISTS = st.lists(_SELECTORS, max_size=6).map(", ".join)


@given(
    select=st.none() | _LISTS,
    ignore=st.none() | _LISTS,
    extend_select=_LISTS,
    extend_ignore=_LISTS,
    line_length=st.none() | st.integers(-5, 1000).map(str),
)
def test_every_selector_handed_to_ruff_is_one_ruff_knows(
    select, ignore, extend_select, extend_ignore, line_length
) -> None:
    section = {"extend-select": extend_select, "extend-ignore": extend_ignore}
    for key, value in (("select", select), ("ignore", ignore), ("max-line-length", line_length)):
        if value is not None:
            section[key] = value
    selection = flake8_selection(flake8_options(section), TABLE, QUORUM)
    for flag in ("--select", "--ignore"):
        for selector in _arg(selection.args, flag):
            assert TABLE.selectors(selector) == (selector,), selector
    assert all(TABLE.selectors(s) for s in selection.asked)
    if "--line-length" in selection.args:
        assert 0 < int(_arg(selection.args, "--line-length")[0]) <= 320
