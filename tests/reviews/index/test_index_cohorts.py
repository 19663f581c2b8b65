"""Cohorts from real git repositories: grouping, blast radius, stable keys, fallback."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.index.cohorts import NO_INDEX_LABEL, compute_cohorts
from reviews.index.mermaid import escape_label
from reviews.index.model import CodeIndex, Definition, FileRecord
from reviews.sources.git_local import LocalGitSource
from tests.reviews.index.index_helpers import index_at, pr_cohorts
from tests.reviews.index.test_index_treesitter import GO, WEB

UTIL = "def helper(x):\n    return x + 1\n\n\ndef unrelated():\n    return 0\n"
BASE_TREE = {
    "pkg/__init__.py": "",
    "pkg/util.py": UTIL,
    "pkg/a.py": "from pkg.util import helper\n\n\ndef use_a():\n    return helper(1)\n",
    "pkg/b.py": "from pkg import util\n\n\ndef use_b():\n    return util.helper(2)\n",
    "pkg/c.py": (
        "from .util import helper as h\n\n\nclass C:\n    def run(self):\n        return h(3)\n"
    ),
    "pkg/d.py": "from pkg.a import use_a\n\n\ndef outer():\n    return use_a()\n",
    "pkg/e.py": "def standalone():\n    return 'e'\n",
    "pkg/lonely.py": "def alone():\n    return 1\n",
}


@pytest.fixture
def repo(git_repo_factory):
    """main: a helper used by three modules (one of them used again by a fourth)."""
    repo = git_repo_factory()
    repo.commit("base", BASE_TREE, branch="main")
    return repo


def _change_helper(repo, *, also: dict[str, str] | None = None) -> str:
    repo.checkout("feature", create_from="main")
    return repo.commit(
        "change helper", {"pkg/util.py": UTIL.replace("x + 1", "x + 2"), **(also or {})}
    )


def test_it_groups_a_change_and_counts_its_blast_radius(repo):
    """A changed function used by three modules is one cohort; its blast radius counts the
    dependent definitions (use_a, use_b, C.run, and outer through use_a) and their files."""
    _change_helper(repo)
    (cohort,) = pr_cohorts(repo, "main", "feature")
    assert cohort.symbols == ("pkg.util.helper",)
    assert cohort.paths == ("pkg/util.py",)
    assert cohort.blast_radius is not None
    assert (cohort.blast_radius.definitions, cohort.blast_radius.files) == (4, 4)
    assert cohort.label == "code graph"
    assert [p.path for p in cohort.previews] == ["pkg/util.py"]
    assert "+    return x + 2" in cohort.previews[0].hunks[0].text
    assert cohort.diagram.startswith("flowchart LR\n")
    assert 'subgraph f0["pkg/util.py"]' in cohort.diagram
    assert 's0["function helper"]' in cohort.diagram
    data = json.loads(json.dumps(cohort.to_json()))
    assert data["blast_radius"] == {"definitions": 4, "files": 4}
    assert data["key"] == cohort.key and len(cohort.key) == 64


def test_it_keeps_unrelated_changes_apart_and_ranks_by_blast_radius(repo):
    """Two changes with no reference between them are two cohorts, larger blast radius first;
    a changed caller joins the cohort of what it calls."""
    _change_helper(
        repo,
        also={
            "pkg/e.py": "def standalone():\n    return 'E'\n",
            "pkg/a.py": BASE_TREE["pkg/a.py"].replace("helper(1)", "helper(10)"),
        },
    )
    first, second = pr_cohorts(repo, "main", "feature")
    assert first.symbols == ("pkg.a.use_a", "pkg.util.helper")
    assert second.symbols == ("pkg.e.standalone",)
    assert second.blast_radius is not None and second.blast_radius.definitions == 0
    assert first.blast_radius is not None
    # use_a is part of the change now, so use_b, C.run and outer are the dependent definitions;
    # a.py's import line is the change importing itself, so files are b, c, d.
    assert (first.blast_radius.definitions, first.blast_radius.files) == (3, 3)
    # Definitions before their users: util.py is read before a.py.
    assert [s.path for s in first.reading_order] == ["pkg/util.py", "pkg/a.py"]
    assert "-->|calls|" in first.diagram
    assert {(e.source, e.target, e.kind) for e in first.edges} == {
        ("pkg.a.use_a", "pkg.util.helper", "call")
    }


def test_it_shows_untouched_callers_in_changed_files_as_context_without_merging(repo):
    """d.outer calls use_a; a.py and d.py both change elsewhere. outer is context of the
    use_a cohort but does not pull the other change in d.py into it."""
    repo.checkout("feature", create_from="main")
    repo.commit(
        "two changes",
        {
            "pkg/a.py": BASE_TREE["pkg/a.py"].replace("helper(1)", "helper(11)"),
            "pkg/d.py": BASE_TREE["pkg/d.py"] + "\n\ndef later():\n    return 2\n",
        },
    )
    cohorts = pr_cohorts(repo, "main", "feature")
    assert len(cohorts) == 2
    use_a = next(c for c in cohorts if "pkg.a.use_a" in c.symbols)
    assert use_a.context == ("pkg.d.outer",)
    assert "stroke-dasharray" in use_a.diagram


def test_it_follows_a_file_and_function_rename(repo):
    """util.py renamed to tools.py with helper renamed to assist, importers updated: one cohort
    holding the new names (and, with the base index, the old function name)."""
    repo.checkout("feature", create_from="main")
    repo.rename("pkg/util.py", "pkg/tools.py")
    repo.commit(
        "rename",
        {
            "pkg/tools.py": UTIL.replace("def helper", "def assist"),
            "pkg/a.py": "from pkg.tools import assist\n\n\ndef use_a():\n    return assist(1)\n",
            "pkg/b.py": "from pkg import tools\n\n\ndef use_b():\n    return tools.assist(2)\n",
            "pkg/c.py": BASE_TREE["pkg/c.py"].replace(
                ".util import helper", ".tools import assist"
            ),
        },
    )
    diff = LocalGitSource(repo.path).diff("main", "feature")
    renamed = diff.file("pkg/tools.py")
    assert renamed is not None and renamed.old_path == "pkg/util.py"
    (cohort,) = pr_cohorts(repo, "main", "feature")
    assert set(cohort.paths) == {"pkg/tools.py", "pkg/a.py", "pkg/b.py", "pkg/c.py"}
    assert "pkg.tools.assist" in cohort.symbols
    assert "pkg.util.helper" in cohort.symbols  # the deleted line, placed with the base index
    assert cohort.reading_order[0].path == "pkg/tools.py"


def test_it_keeps_cohort_keys_across_a_rebase_and_lines_inserted_above(repo):
    """Keys come from qualified names and paths: rebasing the PR onto a base that inserted
    lines above the changed function (and changed other files) leaves every key unchanged."""
    _change_helper(repo, also={"pkg/e.py": "def standalone():\n    return 'E'\n"})
    before = pr_cohorts(repo, "main", "feature")

    repo.commit(
        "main moves on",
        {
            "pkg/util.py": "# a comment\nimport math\n\n\ndef newcomer():\n    return math.pi\n\n\n"
            + UTIL,
            "pkg/lonely.py": "def alone():\n    return 2\n",
        },
        branch="main",
    )
    repo.checkout("feature")
    repo.git("rebase", "--quiet", "main")
    after = pr_cohorts(repo, "main", "feature")
    assert [c.key for c in after] == [c.key for c in before]
    assert _first_added_line(after[0]) == _first_added_line(before[0]) + 8  # lines really moved
    # A force-push of the same change (new SHA) keeps the keys too.
    repo.git("commit", "--quiet", "--amend", "-m", "reworded")
    assert [c.key for c in pr_cohorts(repo, "main", "feature")] == [c.key for c in before]


def _first_added_line(cohort) -> int:
    return next(ln.new_line for ln in cohort.previews[0].hunks[0].lines if ln.kind == "+")


def test_it_falls_back_to_path_grouping_without_an_index(git_repo_factory):
    """An unindexable repository groups by directory, says so, and claims no graph."""
    repo = git_repo_factory()
    repo.commit("base", {"docs/a.md": "a\n", "docs/b.md": "b\n", "etc/x.conf": "x=1\n"})
    repo.checkout("feature", create_from="main")
    repo.commit("edit", {"docs/a.md": "A\n", "docs/b.md": "B\n", "etc/x.conf": "x=2\n"})
    source = LocalGitSource(repo.path)
    diff = source.diff("main", "feature")
    head = index_at(repo, diff.head_sha)
    assert not head.indexed
    assert head.reason is not None and "no supported source files" in head.reason
    cohorts = compute_cohorts(diff.files, head)
    assert [c.paths for c in cohorts] == [("docs/a.md", "docs/b.md"), ("etc/x.conf",)] or [
        c.paths for c in cohorts
    ] == [("etc/x.conf",), ("docs/a.md", "docs/b.md")]
    for cohort in cohorts:
        assert cohort.label == NO_INDEX_LABEL
        assert cohort.blast_radius is None
        assert cohort.symbols == () and cohort.edges == ()
        assert "-->" not in cohort.diagram and "==>" not in cohort.diagram
    # Same answer when no index exists at all.
    assert compute_cohorts(diff.files, None) == cohorts
    json.dumps([c.to_json() for c in cohorts])


def test_it_groups_javascript_typescript_and_go_changes_through_tree_sitter(git_repo_factory):
    """A TS change with its TSX caller is one cohort, a Go change with its caller another, each
    with its call edge; an unchanged caller in a changed file is context only."""
    repo = git_repo_factory()
    repo.commit("base", {**WEB, **GO})
    repo.checkout("feature", create_from="main")
    repo.commit(
        "edit",
        {
            "web/util.ts": WEB["web/util.ts"].replace("n.trim()", "n.trim().toUpperCase()"),
            "web/app.tsx": WEB["web/app.tsx"].replace("this.greet());", "this.greet()) + '!';"),
            "svc/util/strings.go": GO["svc/util/strings.go"].replace("return s", "return s + s"),
            "svc/main.go": GO["svc/main.go"].replace('"x"', '"y"'),
        },
    )
    cohorts = pr_cohorts(repo, "main", "feature")
    by_paths = {c.paths: c for c in cohorts}
    web = by_paths[("web/app.tsx", "web/util.ts")]
    assert web.symbols == ("web/app.tsx:Widget.render", "web/util.ts:formatName")
    assert ("web/app.tsx:Widget.render", "web/util.ts:formatName", "call") in {
        (e.source, e.target, e.kind) for e in web.edges
    }
    assert web.reading_order[0].path == "web/util.ts"
    go = by_paths[("svc/main.go", "svc/util/strings.go")]
    assert go.symbols == ("svc/main.go:Server.name", "svc/util/strings.go:Clean")
    assert [(e.source, e.target) for e in go.edges] == [
        ("svc/main.go:Server.Handle", "svc/main.go:Server.name"),  # from the context caller
        ("svc/main.go:Server.name", "svc/util/strings.go:Clean"),
    ]
    assert [s.path for s in go.reading_order] == ["svc/util/strings.go", "svc/main.go"]
    # Unchanged code in a changed file that uses the change: Handle calls name(), main builds
    # the Server whose method changed.
    assert go.context == ("svc/main.go:Server.Handle", "svc/main.go:main")
    # Handle calls name(); main builds a Server (users of a changed method's class count).
    assert go.blast_radius is not None
    assert (go.blast_radius.definitions, go.blast_radius.files) == (2, 1)


def test_it_reads_tests_last_and_base_classes_first(git_repo_factory):
    """Reading order: interfaces/base classes before implementations, tests last."""
    repo = git_repo_factory()
    base = {
        "app/__init__.py": "",
        "app/base.py": "class Shape:\n    def area(self):\n        raise NotImplementedError\n",
        "app/square.py": (
            "from app.base import Shape\n\n\nclass Square(Shape):\n"
            "    def area(self):\n        return 4\n"
        ),
        "tests/test_square.py": (
            "from app.square import Square\n\n\ndef test_area():\n    assert Square().area() == 4\n"
        ),
    }
    repo.commit("base", base)
    repo.checkout("feature", create_from="main")
    repo.commit(
        "edit",
        {
            "tests/test_square.py": base["tests/test_square.py"] + "    assert True\n",
            "app/square.py": base["app/square.py"].replace("return 4", "return 16"),
            "app/base.py": base["app/base.py"].replace("NotImplementedError", "TypeError"),
        },
    )
    (cohort,) = pr_cohorts(repo, "main", "feature")
    assert [s.path for s in cohort.reading_order] == [
        "app/base.py",
        "app/square.py",
        "tests/test_square.py",
    ]
    assert cohort.reading_order[-1].is_test


@given(st.text())
def test_it_escapes_every_diagram_label(text):
    """No character that Mermaid gives meaning to survives escaping."""
    escaped = escape_label(text)
    assert not set(escaped) & set('"[]{}<>|`\n\r;#') - {"#", ";"}
    assert '"' not in escaped and "\n" not in escaped and "]" not in escaped


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 15), st.sampled_from(["function", "module"])),
        max_size=12,
    ),
    st.lists(st.integers(-2, 60), max_size=20),
)
def test_the_innermost_definition_is_the_narrowest_holding_the_line(spans, lines) -> None:
    """The per-file table answers as scanning every definition for each line would."""
    definitions = tuple(
        Definition(f"m.d{i}", f"d{i}", kind, "m.py", start, start + width, None if i else "m", "py")
        for i, (start, width, kind) in enumerate(spans)
    )
    index = CodeIndex(
        files={"m.py": FileRecord("m.py", "python", "x", "m", definitions, (), ())}, references=()
    )

    def scanned(line: int) -> Definition | None:
        best = None
        for d in definitions:
            if d.kind == "module" and d.parent is None:
                continue
            if d.contains(line) and (
                best is None or d.end_line - d.start_line < best.end_line - best.start_line
            ):
                best = d
        return best

    assert [index.innermost("m.py", line) for line in lines] == [scanned(n) for n in lines]
