"""The guided review reads as words: axis details, cohort names, sources, refused findings,
links in finding bodies, the report as a page, neutral zero counts."""

from __future__ import annotations

import re
from typing import Any, cast

import pytest

from reviews.domain.round_stats import CohortSummary
from reviews.domain.types import AxisName
from reviews.index.axes_compute import compute_api_contract, compute_test_gap
from reviews.models import ReviewRound
from reviews.services.axes import axis_record
from reviews.services.node_recording import node_record
from tests.fixtures import node_payload

KEY = "b" * 64
URL = "https://bandit.readthedocs.io/en/latest/plugins/b105_hardcoded_password_string.html"
HASH = re.compile(r"\b[0-9a-f]{64}\b")


def _section(html: str, element_id: str) -> str:
    start = html.index(f'id="{element_id}"')
    return html[start : html.index("</section>", start)]


@pytest.fixture
def worded(review_factory, stream_factory, workspace):
    review_round = review_factory(workspace, tier="light")
    cohort = CohortSummary.model_validate(
        {
            "key": KEY,
            "label": "code graph",
            "paths": ["shop/cart.py"],
            "symbols": ["shop.cart.Cart", "shop.cart.Cart.total"],
            "context": [],
            "edges": [],
            "blast_radius": None,
            "reading_order": [
                {
                    "path": "shop/cart.py",
                    "symbols": ["shop.cart.Cart", "shop.cart.Cart.total"],
                    "is_test": False,
                }
            ],
            "diagram": "",
            "previews": [],
        }
    )
    review_round.stats = review_round.stats.with_(cohorts=[cohort])
    review_round.save(update_fields=["stats"])
    stream = stream_factory(review_round, "security")
    node_record(
        stream=stream,
        payload=node_payload(
            priority="P2",
            title="B105: hardcoded password",
            body=f"Possible hardcoded password.\n\nDetails: {URL}",
            anchor={"path": "shop/cart.py", "start_line": 1, "end_line": 1},
        ),
    )
    # A report the format refuses: counted on the stream, with its reason.
    node_record(stream=stream, payload={**node_payload(), "confidance": 0.5})
    result, details = compute_test_gap([cast(Any, cohort)])  # it reads keys and paths
    axis_record(
        review_round=review_round,
        axis=AxisName.TEST_GAP,
        result=result,
        source="cohorts",
        details=details,
    )
    result, details = compute_api_contract(
        base_files={"pkg/__init__.py": "def run(a): ...\n"},
        head_files={"pkg/__init__.py": "def run(a, b): ...\n"},
    )
    axis_record(
        review_round=review_round,
        axis=AxisName.API_CONTRACT,
        result=result,
        source="deterministic",
        details={**details, "base": "1" * 40, "head": "2" * 40},
    )
    return review_round


def _page(client, review_round: ReviewRound) -> str:
    space = review_round.space
    return client.get(f"/w/{space.workspace.slug}/reviews/{space.pk}/").content.decode()


def test_axis_details_are_rows_of_words_not_dict_dumps(worded, alice, client_for):
    axes = _section(_page(client_for(alice), worded), "review-axes")
    assert "{&#x27;" not in axes and "{'" not in axes and "[&#x27;" not in axes
    assert not HASH.search(axes)
    assert '<span class="axis-name">Test gap</span>' in axes
    assert '<span class="axis-name">API contract</span>' in axes
    # testGap names the cohort by its main symbol and links its card.
    assert f'<a href="#cohort-{KEY[:12]}">Cart in shop/cart.py, with 1 more symbol</a>' in axes
    assert "1 cohort that changes non-test code" in axes
    # apiContract: what was compared, with which tool, what changed.
    assert '<th scope="row">What was compared</th>' in axes and "Python package pkg" in axes
    assert '<th scope="row">Tool</th><td>griffe' in axes
    assert "breaks callers: " in axes and "merge base 1111111111 against head 2222222222" in axes


def test_axis_sources_are_said_in_words(worded, alice, client_for):
    axes = _section(_page(client_for(alice), worded), "review-axes")
    assert "Where it comes from" in axes
    assert "Computed from the change&#x27;s cohorts and its test files, with no model" in axes
    assert "Computed from the code itself, with no model" in axes
    assert "<td>cohorts</td>" not in axes and "<td>deterministic</td>" not in axes


def test_cohort_headings_use_the_cohort_name(worded, alice, client_for):
    cohorts = _section(_page(client_for(alice), worded), "review-cohorts")
    assert re.search(
        r"<h3 id=\"cohort-b{12}-title\">Cart in shop/cart.py, with 1 more symbol</h3>", cohorts
    )


def test_refused_reports_are_explained_with_their_reasons(worded, alice, client_for):
    streams = _section(_page(client_for(alice), worded), "review-streams")
    assert "Not recorded" in streams and "Rejected payloads" not in streams
    assert "did not match that format or pointed at a file or line" in streams
    row = streams[streams.index('id="stream-security"') :]
    assert "<summary>1 not recorded</summary>" in row
    assert "confidance" in row  # the stored reason names the misspelt field
    assert "<td>Queued</td>" in row  # the state in words, not "pending"


def test_links_in_finding_bodies_are_links(worded, alice, client_for):
    findings = _section(_page(client_for(alice), worded), "review-findings")
    assert f'Details: <a href="{URL}" rel="noopener nofollow">{URL}</a>' in findings


def test_the_report_reads_as_a_page_and_downloads_as_markdown(worded, alice, client_for):
    client = client_for(alice)
    space = worded.space
    base = f"/w/{space.workspace.slug}/reviews/{space.pk}/"
    assert f'href="{base}report/"' in _page(client, worded)
    page = client.get(f"{base}report/")
    html = page.content.decode()
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    assert "<h1>Review: " in html and "# Review" not in html
    assert f'href="{base}report.md?download=1"' in html
    raw = client.get(f"{base}report.md?download=1")
    assert raw["Content-Type"].startswith("text/markdown")
    assert raw["Content-Disposition"] == f'attachment; filename="quorum-review-{space.pk}.md"'
    assert raw.content.decode().startswith("# Review: ")


def test_the_report_page_escapes_what_reviewers_wrote(worded, alice, client_for, stream_factory):
    stream = stream_factory(worded, "implementation")
    node_record(
        stream=stream, payload=node_payload(title="<script>alert(1)</script>", priority="P0")
    )
    space = worded.space
    html = client_for(alice).get(f"/w/{space.workspace.slug}/reviews/{space.pk}/report/").content
    assert b"<script>alert(1)" not in html and b"&lt;script&gt;alert(1)" in html


def test_an_outsider_cannot_read_the_report_page(worded, charlie, client_for):
    space = worded.space
    url = f"/w/{space.workspace.slug}/reviews/{space.pk}/report/"
    assert client_for(charlie).get(url).status_code == 404


def test_zero_counts_on_the_list_are_neutral(worded, workspace, alice, client_for):
    html = client_for(alice).get(f"/w/{workspace.slug}/reviews/").content.decode()
    counts = html[html.index('<td class="counts">') :]
    counts = counts[: counts.index("</td>")]
    assert '<span class="prio p0 zero" title="P0 critical">P0 0</span>' in counts
    assert '<span class="prio p2" title="P2">P2 1</span>' in counts
    assert "0 minutes ago" not in html and "just now" in html
