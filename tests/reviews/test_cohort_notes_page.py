"""The review page says where a cohort's grouping may be incomplete: imports of the
repository's own code the index could not resolve, and files split across cohorts."""

from __future__ import annotations

from reviews.domain.round_stats import CohortSummary


def _cohort(key: str, paths: list[str], **extra) -> CohortSummary:
    return CohortSummary.model_validate(
        {
            "key": key,
            "label": "code graph",
            "paths": paths,
            "symbols": [],
            "context": [],
            "edges": [],
            "blast_radius": {"definitions": 1, "files": 1},
            "reading_order": [{"path": p, "symbols": [], "is_test": False} for p in paths],
            "diagram": "",
            "previews": [],
            **extra,
        }
    )


def test_the_page_names_unresolved_imports_and_split_files(
    review_factory, workspace, alice, client_for
):
    review_round = review_factory(workspace, tier="light")
    review_round.stats = review_round.stats.with_(
        cohorts=[
            _cohort(
                "a" * 64,
                ["src/core/Ky.ts"],
                unresolved_imports=["src/core/Ky.ts: ./missing.js"],
                split_paths=["src/core/Ky.ts"],
            ),
            _cohort("c" * 64, ["src/core/Ky.ts"], split_paths=["src/core/Ky.ts"]),
            _cohort("d" * 64, ["src/other.ts"]),
        ]
    )
    review_round.save(update_fields=["stats"])
    space = review_round.space
    html = client_for(alice).get(f"/w/{space.workspace.slug}/reviews/{space.pk}/").content.decode()
    start = html.index('id="review-cohorts"')
    section = html[start : html.index("</section>", start)]
    assert section.count("Also changed in other cohorts, in parts with no link to this one") == 2
    assert (
        "1 import of the repository's own code could not be resolved, so links may be "
        "missing: <code>src/core/Ky.ts: ./missing.js</code>" in section
    )
    assert section.count("could not be resolved") == 1
