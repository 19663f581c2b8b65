"""Read-only code tools: confined to the worktree, capped, and never raising at the model."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reviews.agents import codetools
from reviews.agents.codetools import ERROR_PREFIX, CodeTools, regex_problem
from reviews.sources.diffs import parse_unified_diff

DIFF = """\
diff --git a/app.py b/app.py
index 1111111..2222222 100644
--- a/app.py
+++ b/app.py
@@ -1,2 +1,3 @@
 import os
+import subprocess
 x = 1
diff --git a/docs/readme.md b/docs/readme.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/docs/readme.md
@@ -0,0 +1 @@
+hello
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "pkg").mkdir(parents=True)
    (root / "app.py").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (root / "pkg" / "mod.py").write_text("def handler(request):\n    return request.user\n")
    (root / "pkg" / "notes.txt").write_text("TODO: call handler\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[remote]\nurl = https://x:ghp_secret@github.com/a/b\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET-OUTSIDE\n")
    os.symlink(outside / "secret.txt", root / "leak.txt")
    os.symlink(outside, root / "leakdir")
    return root


def test_it_reads_a_line_range_with_line_numbers(tree: Path) -> None:
    """start_line..end_line is inclusive, 1-based, each line carrying its number."""
    out = CodeTools(tree).read_file("app.py", 3, 5)
    lines = out.splitlines()
    assert lines[0] == "app.py lines 3-5 of 10"
    assert lines[1:] == ["3| line 3", "4| line 4", "5| line 5"]


def test_it_reads_to_the_end_by_default_and_says_when_more_remains(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an end the whole file comes back; past the per-call cap it points to the rest."""
    tools = CodeTools(tree)
    assert tools.read_file("app.py").splitlines()[-1] == "10| line 10"
    monkeypatch.setattr(codetools, "MAX_READ_LINES", 4)
    out = tools.read_file("app.py", 2)
    assert out.splitlines()[1:] == [
        "2| line 2",
        "3| line 3",
        "4| line 4",
        "5| line 5",
        "[more: continue at 6]",
    ]


@pytest.mark.parametrize(
    ("start", "end", "problem"),
    [(0, None, "start_line"), (5, 2, "end_line"), (11, None, "past the end")],
)
def test_it_rejects_bad_line_ranges(tree: Path, start: int, end: int | None, problem: str) -> None:
    """A bad range is an error message for the model, not an exception."""
    out = CodeTools(tree).read_file("app.py", start, end)
    assert out.startswith(ERROR_PREFIX)
    assert problem in out


@pytest.mark.parametrize(
    "path", ["../../etc/passwd", "pkg/../../outside/secret.txt", "../outside/secret.txt"]
)
def test_it_refuses_paths_that_climb_out_of_the_root(tree: Path, path: str) -> None:
    """`..` that leaves the worktree is refused with a message; nothing outside is read."""
    out = CodeTools(tree).read_file(path)
    assert out.startswith(ERROR_PREFIX)
    assert "escapes" in out
    assert "root:x:" not in out and "TOP-SECRET" not in out


def test_it_refuses_absolute_paths(tree: Path) -> None:
    """An absolute path is refused even when it points inside the root."""
    tools = CodeTools(tree)
    assert "absolute" in tools.read_file("/etc/passwd")
    assert "absolute" in tools.read_file(str(tree / "app.py"))
    assert tools.list_files("/").startswith(ERROR_PREFIX)


def test_it_refuses_a_symlink_escaping_the_root(tree: Path) -> None:
    """Symlinks are resolved before the check, for files and directories alike."""
    tools = CodeTools(tree)
    for path in ("leak.txt", "leakdir/secret.txt"):
        out = tools.read_file(path)
        assert out.startswith(ERROR_PREFIX), out
        assert "TOP-SECRET" not in out
    assert tools.list_files("leakdir").startswith(ERROR_PREFIX)
    assert "TOP-SECRET" not in tools.grep("TOP-SECRET", literal=True)


def test_it_refuses_git_internals(tree: Path) -> None:
    """`.git` holds config and credentials, not the change: every tool refuses or skips it."""
    tools = CodeTools(tree)
    out = tools.read_file(".git/config")
    assert out.startswith(ERROR_PREFIX) and ".git" in out
    assert tools.list_files(".git").startswith(ERROR_PREFIX)
    assert ".git" not in tools.list_files()
    assert tools.grep("ghp_", literal=True) == "No matches."


def test_it_lists_files_recursively_with_a_glob(tree: Path) -> None:
    """Paths are repository-relative; the glob matches the path or the file name."""
    tools = CodeTools(tree)
    assert tools.list_files("pkg").splitlines() == ["pkg/mod.py", "pkg/notes.txt"]
    assert tools.list_files(pattern="*.py").splitlines() == ["app.py", "pkg/mod.py"]
    assert "No files" in tools.list_files(pattern="*.rs")


def test_it_caps_list_output(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A huge tree is cut at the entry cap and says so."""
    monkeypatch.setattr(codetools, "MAX_LIST_ENTRIES", 2)
    out = CodeTools(tree).list_files()
    assert len(out.splitlines()) == 3
    assert "truncated" in out


def test_it_greps_by_regex_and_by_substring(tree: Path) -> None:
    """Matches come back as path:line: text; literal mode takes regex characters as text."""
    tools = CodeTools(tree)
    assert tools.grep(r"def \w+\(") == "pkg/mod.py:1: def handler(request):"
    assert tools.grep("handler", path="pkg/notes.txt") == "pkg/notes.txt:1: TODO: call handler"
    assert tools.grep("handler(", literal=True) == "pkg/mod.py:1: def handler(request):"
    assert tools.grep("handler(").startswith(ERROR_PREFIX)  # an invalid regex, explained


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(a|aa)*b", r"(\w)\1", r"a*a*a*a*b", r"(x+x+)+y"])
def test_it_refuses_patterns_that_can_backtrack_catastrophically(tree: Path, pattern: str) -> None:
    """Nested or alternating repeats and backreferences are refused before `re` runs them."""
    (tree / "evil.txt").write_text("a" * 5000 + "!\n")
    started = time.monotonic()
    out = CodeTools(tree).grep(pattern)
    assert out.startswith(ERROR_PREFIX)
    assert "literal" in out
    assert time.monotonic() - started < 10  # a backtracking run would take minutes
    assert regex_problem(pattern) is not None


def test_it_runs_ordinary_patterns_on_long_lines_quickly(tree: Path) -> None:
    """Line length is capped, so a minified file cannot make one search slow."""
    (tree / "bundle.js").write_text(("x" * 200_000) + "\n")
    started = time.monotonic()
    assert CodeTools(tree).grep(r"x+y") == "No matches."
    assert time.monotonic() - started < 10  # uncapped, this line would take minutes


def test_it_shows_the_diff_of_one_file_or_all(tree: Path) -> None:
    """get_diff renders from the parsed diff; an unknown path lists nothing and says why."""
    tools = CodeTools(tree, changed_files=parse_unified_diff(DIFF))
    one = tools.get_diff("app.py")
    assert one.startswith("--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,3 @@")
    assert "+import subprocess" in one and "readme" not in one
    everything = tools.get_diff()
    assert "+++ b/docs/readme.md" in everything and "--- /dev/null" in everything
    assert tools.get_diff("nope.py").startswith(ERROR_PREFIX)
    assert "empty" in CodeTools(tree).get_diff()


def test_it_caps_output_size(tree: Path) -> None:
    """One call cannot flood the context: output stops at the character cap and says so."""
    out = CodeTools(tree, max_output_chars=40).read_file("app.py")
    assert len(out) < 100
    assert out.endswith("[output truncated at 40 characters]")


def test_it_refuses_binary_and_missing_files(tree: Path) -> None:
    """Binary files and missing paths are explained, not dumped or raised."""
    (tree / "blob.bin").write_bytes(b"\x00\x01\x02")
    tools = CodeTools(tree)
    assert "binary" in tools.read_file("blob.bin")
    assert "not a file" in tools.read_file("missing.py")
    assert tools.read_file("").startswith(ERROR_PREFIX)


# -- `read`: the one reading tool a model is offered ---------------------------------------------


def test_read_gives_a_file_s_lines_or_a_directory_s_files(tree: Path) -> None:
    tools = CodeTools(tree)
    assert tools.read("app.py", 3, 4) == tools.read_file("app.py", 3, 4)
    assert tools.read("app.py").startswith("app.py lines 1-10 of 10\n")
    assert tools.read("pkg") == "pkg/mod.py\npkg/notes.txt"
    assert tools.read("pkg", 1, 2) == tools.read("pkg")  # lines apply to a file alone
    assert tools.read() == tools.list_files()  # the repository's files, .git left out
    assert "not a file" in tools.read("missing.py")


@pytest.mark.parametrize(
    ("glob", "expected"),
    [
        ("*.py", ["app.py", "pkg/mod.py"]),
        ("pkg/*.txt", ["pkg/notes.txt"]),
        ("**/m?d.py", ["pkg/mod.py"]),
        ("*.rs", ["No files under . matching '*.rs'."]),
    ],
)
def test_read_lists_the_files_a_glob_matches(tree: Path, glob: str, expected: list[str]) -> None:
    assert CodeTools(tree).read(glob).splitlines() == expected


def test_read_of_a_file_whose_name_looks_like_a_glob_reads_it(tree: Path) -> None:
    (tree / "[draft].md").write_text("notes\n")
    assert CodeTools(tree).read("[draft].md") == "[draft].md lines 1-1 of 1\n1| notes"


def test_read_with_grep_searches_under_the_path(tree: Path) -> None:
    tools = CodeTools(tree)
    assert tools.read(grep=r"def \w+\(") == "pkg/mod.py:1: def handler(request):"
    assert tools.read("pkg/notes.txt", grep="handler") == "pkg/notes.txt:1: TODO: call handler"
    assert tools.read("pkg", grep="nothing here") == "No matches."
    assert tools.read("../outside", grep="SECRET").startswith(ERROR_PREFIX)


@pytest.mark.parametrize("pattern", ["handler(", r"(a+)+$"])
def test_read_searches_a_refused_pattern_as_plain_text_and_says_so(
    tree: Path, pattern: str
) -> None:
    """A model that meant `handler(` literally gets its matches, and learns how it was read."""
    out = CodeTools(tree).read(grep=pattern)
    assert out.startswith("[searched as plain text: ")
    if pattern == "handler(":
        assert out.endswith("\npkg/mod.py:1: def handler(request):")
    else:
        assert out.endswith("\nNo matches.")
