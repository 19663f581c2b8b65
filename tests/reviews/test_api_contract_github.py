"""apiContract on GitHub pull requests (faithful fake GitHub, default workspace settings, so
apiContract is gated, and no model): the round fetches the base commit too, so the axis is
computed as for a local repository, and decides the verdict."""

from __future__ import annotations

import pytest

from reviews.models import ReviewRound
from reviews.pipeline.runner import run_inline
from reviews.services.requests import review_request
from tests.fixtures import use_fake_github
from workspaces.models import Repository

pytestmark = pytest.mark.django_db(transaction=True)

PRICING = '''"""Prices of the shop."""


def total(prices: list[int]) -> int:
    """The sum of the prices."""
    return sum(prices)


def discount(price: int, percent: int) -> int:
    """The price less `percent` per cent."""
    return price - price * percent // 100
'''

SHOP = {
    "shop/__init__.py": '"""The shop."""\n',
    "shop/pricing.py": PRICING,
    "tests/__init__.py": "",
    "tests/test_pricing.py": (
        "from shop.pricing import total\n\n\n"
        "def test_total() -> None:\n    assert total([1, 2]) == 3\n"
    ),
    "README.md": "The shop.\n",
}

HELPER = '''"""Text helpers for product pages."""


def slug(title: str) -> str:
    """A URL slug: lower case words joined by dashes."""
    return "-".join(title.lower().split())
'''

HELPER_TEST = (
    "from shop.text import slug\n\n\n"
    "def test_slug() -> None:\n    assert slug('Blue  Mug') == 'blue-mug'\n"
)


@pytest.fixture
def github_pr(fake_github, git_repo_factory, settings, workspace, alice, tmp_path):
    """Open a pull request `feature` → `main` on the fake GitHub; returns a function that
    reviews it and gives back the finished round. `main` moves on after the branch point, so
    the comparison must use the merge base, not the base branch's tip."""
    settings.QUORUM_LLM_PROVIDER = ""
    settings.QUORUM_LLM_MODEL = ""
    settings.QUORUM_WORKTREE_ROOT = tmp_path / "worktrees"
    use_fake_github(settings, fake_github)
    assert workspace.gated_axes == ["apiContract"]  # the default

    def open_and_review(base_files, head_files, *, number=1):
        repo = git_repo_factory(f"repo{number}")
        repo.commit("base", base_files, branch="main")
        repo.commit("change", head_files, branch="feature")
        repo.commit("unrelated work on main", {"NOTES.md": "later\n"}, branch="main")
        fake_github.add_repo("acme", f"shop{number}", repo.path)
        fake_github.add_pull(
            "acme", f"shop{number}", number, base="main", head="feature", author="dev"
        )
        repository = Repository.objects.create(
            workspace=workspace, kind="github", full_name=f"acme/shop{number}"
        )
        review_round = review_request(
            repository=repository, actor=alice, number=number, queue=False
        )
        assert review_round.base_sha == repo.sha("main")
        return run_inline(review_round.pk)

    return open_and_review


def _axis(review_round: ReviewRound):
    return review_round.axes.get(axis="apiContract")


def test_a_pr_adding_a_tested_helper_passes_and_ships(github_pr):
    """A new public helper with its test: the Python package's API only grows, every changed
    file is Python, so apiContract passes with that evidence, and the review ships."""
    review_round = github_pr(SHOP, {"shop/text.py": HELPER, "tests/test_text.py": HELPER_TEST})
    assert review_round.state == ReviewRound.State.FINISHED, review_round.error
    axis = _axis(review_round)
    assert (axis.result, axis.gated) == ("pass", True), axis.details
    assert axis.details["languages"] == ["Python"]
    assert {(c["where"], c["message"]) for c in axis.details["changes"]} == {
        ("shop.text", "public module added"),
        ("shop.text.slug", "public function added"),
    }
    assert all(c["severity"] == "additive" for c in axis.details["changes"])
    assert "no public name or signature was removed or changed" in axis.details["evidence"]
    assert axis.details["to_clear"] == []
    assert axis.details["head"] == review_round.head_sha
    assert axis.details["base"] != review_round.base_sha  # the merge base, not main's tip
    assert not review_round.nodes.filter(path="shop/text.py").exists()
    assert review_round.verdict.level == "ship", review_round.verdict.rule


def test_the_same_pr_removing_a_public_function_fails_and_blocks(github_pr):
    """Removing `discount` breaks its callers: apiContract fails and the gate blocks."""
    review_round = github_pr(
        SHOP,
        {
            "shop/text.py": HELPER,
            "tests/test_text.py": HELPER_TEST,
            "shop/pricing.py": PRICING.split("\n\ndef discount")[0] + "\n",
        },
    )
    axis = _axis(review_round)
    assert axis.result == "fail", axis.details
    assert ("shop.pricing.discount", "Public object was removed") in {
        (c["where"], c["message"]) for c in axis.details["changes"]
    }
    assert [s["action"] for s in axis.details["to_clear"]] == ["fix", "submit", "ungate"]
    assert review_round.verdict.level == "block"
    assert "apiContract" in review_round.verdict.rule


GO_BASE = {
    "go.mod": "module example.com/shop\n\ngo 1.22\n",
    "mathx/mathx.go": (
        "package mathx\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n\n"
        "// Sub subtracts.\nfunc Sub(a, b int) int { return a - b }\n"
    ),
}
TS_BASE = {
    "package.json": '{"name": "web"}\n',
    "web/src/format.ts": (
        "export function formatPrice(cents: number): string {\n"
        "  return (cents / 100).toFixed(2);\n}\n\n"
        "export function formatDate(d: Date): string {\n  return d.toISOString();\n}\n"
    ),
}


@pytest.mark.parametrize(
    ("base", "head", "removed"),
    [
        (
            GO_BASE,
            {"mathx/mathx.go": GO_BASE["mathx/mathx.go"].split("\n// Sub")[0]},
            "mathx:Sub",
        ),
        (
            TS_BASE,
            {
                "web/src/format.ts": TS_BASE["web/src/format.ts"].split(
                    "\nexport function formatDate"
                )[0]
            },
            "web/src/format.ts:formatDate",
        ),
    ],
    ids=["go", "typescript"],
)
def test_a_go_or_typescript_pr_removing_an_exported_function_fails(github_pr, base, head, removed):
    review_round = github_pr(base, head)
    axis = _axis(review_round)
    assert axis.result == "fail", axis.details
    assert {
        "source": "exports",
        "severity": "breaking",
        "where": removed,
        "message": "exported function removed",
    } in axis.details["changes"]
    assert review_round.verdict.level == "block"


def test_a_pr_in_a_language_the_axis_cannot_read_is_not_held_for_it_by_default(
    github_pr, workspace
):
    """A Kotlin change: the axis names the language per file and does not hold the change;
    a workspace that chooses to hold such changes gets unavailable, which holds the review
    and says what would clear the gate."""
    review_round = github_pr(
        {"src/Main.kt": "class Main\n"}, {"src/Main.kt": "class Main { val x = 1 }\n"}
    )
    axis = _axis(review_round)
    assert axis.result == "warn"
    assert axis.details["unchecked_files"] == {"Kotlin": ["src/Main.kt"]}
    assert "Kotlin" in axis.details["note"]
    assert review_round.verdict.level == "ship"

    workspace.hold_unreadable_languages = True
    workspace.save(update_fields=["hold_unreadable_languages"])
    review_round = github_pr(
        {"src/Main.kt": "class Main\n"},
        {"src/Main.kt": "class Main { val x = 1 }\n"},
        number=2,
    )
    axis = _axis(review_round)
    assert axis.result == "unavailable"
    assert "Kotlin" in axis.details["reason"]
    assert [s["action"] for s in axis.details["to_clear"]] == ["submit", "ungate"]
    assert review_round.verdict.level == "hold"
    assert "apiContract" in review_round.verdict.rule
    # Axes nothing computes say the same, should a workspace gate them.
    visual = review_round.axes.get(axis="visual")
    assert visual.result == "unavailable"
    assert [s["action"] for s in visual.details["to_clear"]] == ["submit", "ungate"]
