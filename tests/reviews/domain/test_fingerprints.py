"""Content fingerprints and the round delta."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.fingerprints import node_fingerprint, round_delta, title_tokens
from reviews.domain.types import Category, NodeType, NodeView, Priority

FILE = [
    "import hmac",
    "",
    "def check(token, expected):",
    "    if token == expected:",
    "        return True",
    "    return False",
]


def _node(start: int, end: int, **kw: object) -> NodeView:
    base: dict[str, object] = dict(
        id="n",
        agent="impl",
        type=NodeType.BUG,
        priority=Priority.P1,
        confidence=0.9,
        category=Category.SECURITY,
        path="app/auth.py",
        start_line=start,
        end_line=end,
        title="Timing-unsafe token comparison",
    )
    base.update(kw)
    return NodeView(**base)  # type: ignore[arg-type]


code_line = st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=30)


@settings(max_examples=100, deadline=None)
@given(st.lists(code_line, max_size=20), st.integers(1, 6), st.integers(0, 3))
def test_it_survives_lines_inserted_above_the_anchor(
    inserted: list[str], start: int, length: int
) -> None:
    """Inserting any lines above the anchor (and shifting it) keeps the fingerprint."""
    end = min(start + length, len(FILE))
    before = node_fingerprint(_node(start, end), FILE)
    shifted = inserted + FILE
    after = node_fingerprint(_node(start + len(inserted), end + len(inserted)), shifted)
    assert after == before


@settings(max_examples=100, deadline=None)
@given(
    st.integers(3, 6),
    st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=8),
)
def test_it_changes_when_the_anchored_code_changes(line: int, extra: str) -> None:
    """Editing a non-whitespace character inside the anchored lines changes the fingerprint."""
    edited = list(FILE)
    edited[line - 1] = edited[line - 1] + extra
    assert node_fingerprint(_node(3, 6), edited) != node_fingerprint(_node(3, 6), FILE)


def test_it_ignores_whitespace_and_reindentation() -> None:
    """Re-indenting or re-spacing the anchored code keeps the fingerprint."""
    reformatted = [line.replace("    ", "\t") + "  " for line in FILE]
    reformatted[4] = "        return   True"
    assert node_fingerprint(_node(3, 6), reformatted) == node_fingerprint(_node(3, 6), FILE)


def test_it_ignores_word_order_stop_words_and_numbers_in_titles() -> None:
    """Reworded-but-equal titles agree; a different title does not."""
    a = _node(4, 4, title="Token comparison is timing-unsafe at line 4")
    b = _node(4, 4, title="timing unsafe token comparison")
    c = _node(4, 4, title="Missing rate limit")
    assert node_fingerprint(a, FILE) == node_fingerprint(b, FILE)
    assert node_fingerprint(a, FILE) != node_fingerprint(c, FILE)
    assert title_tokens("The 42 token, the TOKEN!") == {"token"}


def test_it_depends_on_path_and_category() -> None:
    """The same words about another file or another kind of problem are another finding."""
    base = node_fingerprint(_node(4, 4), FILE)
    assert node_fingerprint(_node(4, 4, path="app/other.py"), FILE) != base
    assert node_fingerprint(_node(4, 4, category=Category.STYLE), FILE) != base


def test_it_fingerprints_unanchored_nodes_by_path_and_title() -> None:
    """Without an anchor (or file text) the fingerprint is path + category + title."""
    unanchored = _node(1, 1, path=None, start_line=None, end_line=None)
    assert node_fingerprint(unanchored, None) == node_fingerprint(unanchored, FILE)
    assert node_fingerprint(unanchored, None) != node_fingerprint(
        _node(1, 1, path=None, start_line=None, end_line=None, title="Other"), None
    )
    assert len(node_fingerprint(unanchored, None)) == 64


def test_it_splits_a_round_delta_into_new_persisting_and_gone() -> None:
    """The re-review delta: new, still open, gone."""
    delta = round_delta(["a", "b", "b"], ["b", "c"])
    assert delta.new == {"c"}
    assert delta.persisting == {"b"}
    assert delta.gone == {"a"}
