"""LocalGitSource against real repositories, cross-checked with git's own raw/numstat output."""

from __future__ import annotations

import re
import stat

import pytest

from reviews.sources.diffs import LEFT, RIGHT, FileStatus, Position, parse_unified_diff
from reviews.sources.git_local import GitError, GitNotFound, GitTimeout, LocalGitSource

BIG = "".join(f"generated line {i}\n" for i in range(200))
OLD_MAIN = "".join(f"line {i}\n" for i in range(1, 41))
NEW_MAIN = OLD_MAIN.replace("line 3\n", "line three\n").replace("line 35\n", "")
NEW_MAIN += "line 41\n"


@pytest.fixture
def pr_repo(git_repo_factory):
    """main: base files; feature: one of every kind of change; main advances after the fork."""
    repo = git_repo_factory()
    repo.commit(
        "base",
        {
            "src/main.py": OLD_MAIN,
            "docs/old_name.md": "# Title\n\nSome text\nmore text\nend\n",
            "remove_me.txt": "bye\nbye again\n",
            "no_newline.txt": "first\nlast",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        },
        branch="main",
    )
    repo.checkout("feature", create_from="main")
    repo.rename("docs/old_name.md", "docs/new_name.md")
    repo.commit(
        "feature",
        {
            "src/main.py": NEW_MAIN,
            "docs/new_name.md": "# Title\n\nSome text\nmore text\nend\nappendix\n",
            "remove_me.txt": None,
            "src/added.py": "def f():\n    return 1\n",
            "no_newline.txt": "first\nLAST",
            "logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x01",
            "data/big.csv": BIG,
        },
    )
    # A change on main after the fork must not show up in the PR's diff.
    repo.commit("main moves on", {"only_on_main.txt": "main\n"}, branch="main")
    return repo


def _raw_status(repo, base: str, head: str) -> dict[str, tuple[str, str | None]]:
    out = repo.git("diff", "--raw", "-z", "-M", f"{base}...{head}")
    fields = out.split("\0")
    result: dict[str, tuple[str, str | None]] = {}
    i = 0
    while i < len(fields) and fields[i].startswith(":"):
        letter = fields[i].split(" ")[4][0]
        if letter in "RC":
            result[fields[i + 2]] = (letter, fields[i + 1])
            i += 3
        else:
            result[fields[i + 1]] = (letter, None)
            i += 2
    return result


def _numstat(repo, base: str, head: str) -> dict[str, tuple[str, str]]:
    out = repo.git("diff", "--numstat", "-M", f"{base}...{head}")
    result = {}
    for line in out.splitlines():
        added, deleted, path = line.split("\t")
        # Renames print "old => new" (or "dir/{old => new}"); keep the new name.
        path = re.sub(r"\{[^{}]* => ([^{}]*)\}", r"\1", path)
        path = path.split(" => ")[-1]
        result[path] = (added, deleted)
    return result


def test_it_lists_the_same_files_and_statuses_as_git(pr_repo):
    """Every file git reports appears once, with the matching status and old/new paths."""
    diff = LocalGitSource(pr_repo.path).diff("main", "feature")
    raw = _raw_status(pr_repo, "main", "feature")
    numstat = _numstat(pr_repo, "main", "feature")
    assert {f.path for f in diff.files} == set(raw) == set(numstat)
    expected_kind = {"A": FileStatus.ADDED, "D": FileStatus.DELETED, "M": FileStatus.MODIFIED}
    for changed in diff.files:
        letter, previous = raw[changed.path]
        added, deleted = numstat[changed.path]
        if added == "-":  # git's numstat marks binary files with dashes
            assert changed.status is FileStatus.BINARY
            assert changed.not_for_models and changed.not_for_models_reason == "binary"
            assert changed.hunks == ()
            continue
        if letter == "R":
            assert changed.status is FileStatus.RENAMED
            assert changed.old_path == previous
        else:
            assert changed.status is expected_kind[letter]
        assert (changed.additions, changed.deletions) == (int(added), int(deleted))
    by_path = {f.path: f for f in diff.files}
    assert by_path["src/added.py"].old_path is None
    assert by_path["remove_me.txt"].new_path is None
    assert by_path["docs/new_name.md"].old_path == "docs/old_name.md"
    assert "only_on_main.txt" not in by_path


def test_it_diffs_from_the_merge_base(pr_repo):
    """The diff starts at merge-base(base, head), not at the base tip."""
    source = LocalGitSource(pr_repo.path)
    diff = source.diff("main", "feature")
    fork = pr_repo.git("merge-base", "main", "feature").strip()
    assert diff.merge_base_sha == fork
    assert diff.base_sha == pr_repo.sha("main") != fork
    assert diff.head_sha == pr_repo.sha("feature")


def test_it_numbers_commentable_lines_like_git(pr_repo):
    """RIGHT lines are the hunks' new ranges, LEFT the old ranges, and the text on each line
    is the file's text at that line on that side."""
    source = LocalGitSource(pr_repo.path)
    diff = source.diff("main", "feature")
    for changed in diff.files:
        if changed.is_binary:
            assert not any(p.path == changed.path for p in diff.commentable)
            continue
        old_lines = (
            source.text_at(diff.merge_base_sha, changed.old_path).split("\n")
            if changed.old_path
            else []
        )
        new_lines = (
            source.text_at(diff.head_sha, changed.new_path).split("\n") if changed.new_path else []
        )
        expected_right, expected_left = set(), set()
        for header in re.findall(r"^@@ -(\d+),?(\d*) \+(\d+),?(\d*) @@", changed.patch or "", re.M):
            old_start, old_count, new_start, new_count = (int(x) if x else 1 for x in header)
            expected_left |= set(range(old_start, old_start + old_count))
            expected_right |= set(range(new_start, new_start + new_count))
        got_right = {p.line for p in diff.commentable if p.path == changed.path and p.side == RIGHT}
        got_left = {p.line for p in diff.commentable if p.path == changed.path and p.side == LEFT}
        assert got_right == expected_right, changed.path
        assert got_left == expected_left, changed.path
        for hunk in changed.hunks:
            for line in hunk.lines:
                if line.new_line is not None:
                    assert new_lines[line.new_line - 1] == line.text
                if line.old_line is not None:
                    assert old_lines[line.old_line - 1] == line.text


def test_it_reads_a_file_without_trailing_newline(pr_repo):
    """The 'No newline' marker is neither a line nor a change; the last line is commentable."""
    diff = LocalGitSource(pr_repo.path).diff("main", "feature")
    changed = diff.file("no_newline.txt")
    assert changed is not None and changed.status is FileStatus.MODIFIED
    assert (changed.additions, changed.deletions) == (1, 1)
    assert [(ln.kind, ln.text) for ln in changed.hunks[0].lines] == [
        (" ", "first"),
        ("-", "last"),
        ("+", "LAST"),
    ]
    assert Position("no_newline.txt", 2, RIGHT) in diff.commentable
    assert Position("no_newline.txt", 3, RIGHT) not in diff.commentable


def test_it_keeps_separate_hunks_apart(pr_repo):
    """Lines of two hunks of one file carry different hunk ids."""
    diff = LocalGitSource(pr_repo.path).diff("main", "feature")
    assert len(diff.file("src/main.py").hunks) == 2
    first = diff.commentable.hunk_of("src/main.py", 3, RIGHT)
    last = diff.commentable.hunk_of("src/main.py", 40, RIGHT)
    assert first == 0 and last == 1
    assert diff.commentable.same_hunk("src/main.py", 2, 4, RIGHT) == 0
    assert diff.commentable.same_hunk("src/main.py", 3, 40, RIGHT) is None


def test_it_flags_large_files_not_for_models_but_lists_them(pr_repo):
    """A file over the line threshold stays in the list, with hunks, flagged not_for_models."""
    diff = LocalGitSource(pr_repo.path, max_file_lines=100).diff("main", "feature")
    big = diff.file("data/big.csv")
    assert big is not None and big.not_for_models and big.not_for_models_reason == "large"
    assert big.additions == 200 and big.hunks
    assert not diff.file("src/main.py").not_for_models
    by_bytes = LocalGitSource(pr_repo.path, max_file_bytes=100).diff("main", "feature")
    assert by_bytes.file("src/main.py").not_for_models_reason == "large"


def test_it_reads_files_at_a_ref(pr_repo):
    """file_at returns exact bytes; a missing path or ref is GitNotFound and not retryable."""
    source = LocalGitSource(pr_repo.path)
    assert source.file_at("feature", "logo.png") == b"\x89PNG\r\n\x1a\n\x00\x00\x01"
    assert source.text_at("main", "no_newline.txt") == "first\nlast"
    diff = source.diff("main", "feature")
    assert source.head_text(diff, "src/added.py").startswith("def f():")
    with pytest.raises(GitNotFound) as missing:
        source.file_at("feature", "remove_me.txt")
    assert missing.value.retryable is False
    with pytest.raises(GitNotFound):
        source.resolve("no-such-branch")
    with pytest.raises(GitNotFound):
        source.resolve("--output=/tmp/x")  # never passed to git as an option


def test_it_reports_a_hung_git_as_retryable_timeout(tmp_path, pr_repo):
    """A git that does not answer in time raises GitTimeout, which says retry may help."""
    slow = tmp_path / "slow-git"
    slow.write_text("#!/bin/sh\nsleep 5\n")
    slow.chmod(slow.stat().st_mode | stat.S_IEXEC)
    source = LocalGitSource(pr_repo.path, git=str(slow), timeout=0.3)
    with pytest.raises(GitTimeout) as caught:
        source.resolve("main")
    assert caught.value.retryable is True
    assert isinstance(caught.value, GitError)


def test_it_parses_github_style_diff_text():
    """The parser reads a diff with quoted unusual paths and mode-only renames."""
    text = (
        'diff --git "a/tab\\there.txt" "b/tab\\there.txt"\n'
        "index 1111111..2222222 100644\n"
        '--- "a/tab\\there.txt"\n'
        '+++ "b/tab\\there.txt"\n'
        "@@ -1 +1 @@\n"
        "-a\n"
        "+b\n"
        "diff --git a/x.sh b/y.sh\n"
        "old mode 100644\n"
        "new mode 100755\n"
        "similarity index 100%\n"
        "rename from x.sh\n"
        "rename to y.sh\n"
    )
    files = parse_unified_diff(text)
    assert [(f.path, f.status) for f in files] == [
        ("tab\there.txt", FileStatus.MODIFIED),
        ("y.sh", FileStatus.RENAMED),
    ]
    assert files[1].old_path == "x.sh" and files[1].hunks == ()
