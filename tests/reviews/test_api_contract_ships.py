"""Three changes the apiContract axis used to Block, reviewed offline end to end by
`manage.py review` in generated repositories: each ships, and a real break still blocks."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from tests.fakes.gitrepo import GitRepo

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def offline(settings, tmp_path):
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"


def _review(repo: GitRepo, base: str, head: str) -> tuple[int, dict]:
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command(
            "review",
            str(repo.path),
            "--base",
            base,
            "--head",
            head,
            "--format",
            "json",
            stdout=out,
            stderr=io.StringIO(),
        )
    review = json.loads(out.getvalue())
    return int(exit_info.value.code), review


def _api(review: dict) -> dict:
    return next(a for a in review["axes"] if a["axis"] == "apiContract")


OPTIONS = """export type Options = {
  /** The address. */
  url: string;
  retries?: number;
};
export function fetchIt(options: Options): Promise<string> { return Promise.resolve(options.url); }
"""


def test_a_doc_comment_only_type_change_ships(offline, tmp_path):
    repo = GitRepo.init(tmp_path / "ts")
    package = json.dumps({"name": "client", "version": "1.2.0", "main": "src/index.ts"})
    repo.commit("base", {"package.json": package, "src/index.ts": OPTIONS}, branch="main")
    documented = OPTIONS.replace(
        "/** The address. */",
        "/**\n   * The address.\n   * **Warning:** no credentials in it.\n   */",
    )
    repo.commit("docs in the type", {"src/index.ts": documented}, branch="docs")
    code, review = _review(repo, "main", "docs")
    assert (code, review["verdict"]["level"]) == (0, "ship"), _api(review)
    assert _api(review)["result"] == "pass"


GO_BASE = """package complete

// Complete returns suggestions.
func Complete(prefix string, all []string) []string { return all }
"""
GO_HEAD = """package complete

// Completion is one suggestion.
type Completion = string

// Complete returns suggestions.
func Complete(prefix string, all []Completion) []Completion { return all }
"""


def test_a_go_alias_change_ships_and_a_real_signature_change_blocks(offline, tmp_path):
    repo = GitRepo.init(tmp_path / "go")
    repo.commit(
        "base", {"go.mod": "module example.com/complete\n", "complete.go": GO_BASE}, branch="main"
    )
    repo.commit("alias", {"complete.go": GO_HEAD}, branch="alias")
    code, review = _review(repo, "main", "alias")
    assert (code, review["verdict"]["level"]) == (0, "ship"), _api(review)
    repo.checkout("main")
    repo.commit(
        "break", {"complete.go": GO_BASE.replace("prefix string", "prefix int")}, branch="break"
    )
    code, review = _review(repo, "main", "break")
    assert review["verdict"]["level"] == "block" and _api(review)["result"] == "fail"


LIB_RELEASED = "def parse(text):\n    return text\n"
LIB_WITH_HELPER = LIB_RELEASED + "\n\ndef parse_all(texts):\n    return [parse(t) for t in texts]\n"


def test_removing_a_helper_no_release_contains_ships(offline, tmp_path):
    repo = GitRepo.init(tmp_path / "py")
    repo.commit("release", {"textlib/__init__.py": LIB_RELEASED}, branch="main")
    repo.git("tag", "v1.0.0")
    repo.commit("helper", {"textlib/__init__.py": LIB_WITH_HELPER}, branch="main")
    repo.commit("helper gone", {"textlib/__init__.py": LIB_RELEASED}, branch="rework")
    code, review = _review(repo, "main", "rework")
    api = _api(review)
    assert (code, review["verdict"]["level"]) == (0, "ship"), api
    assert api["details"]["release"] == "v1.0.0"
    [change] = api["details"]["changes"]
    assert change["severity"] == "unreleased" and change["where"] == "textlib.parse_all"
    # What the release had is API: removing it blocks.
    repo.checkout("main")
    repo.commit(
        "parse gone",
        {"textlib/__init__.py": "def parse_all(texts):\n    return texts\n"},
        branch="gone",
    )
    code, review = _review(repo, "main", "gone")
    assert review["verdict"]["level"] == "block", _api(review)
