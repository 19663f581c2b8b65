"""Cohort quality per language on generated repositories (tests/reviews/index/cohort_repos.py):
a change to a util, the module using it and that module's test is one cohort of the three, its
blast radius counts the module's dependents, it reads util → module → test, and at least 95 % of
the repository's own imports resolve."""

from __future__ import annotations

import pytest

from reviews.index.resolution import import_resolution
from tests.reviews.index.cohort_repos import REPOS, QualityRepo
from tests.reviews.index.index_helpers import index_at, pr_cohorts


@pytest.mark.parametrize("case", REPOS, ids=lambda r: r.language)
def test_util_module_and_test_are_one_cohort_read_in_order(git_repo_factory, case: QualityRepo):
    repo = git_repo_factory()
    repo.commit("base", case.base, branch="main")
    repo.checkout("feature", create_from="main")
    repo.commit("change", case.change)
    (cohort,) = pr_cohorts(repo, "main", "feature")
    assert cohort.label == "code graph"
    assert set(cohort.paths) == {case.util, case.module, case.test}
    assert [s.path for s in cohort.reading_order] == [case.util, case.module, case.test]
    assert [s.is_test for s in cohort.reading_order] == [False, False, True]
    assert cohort.blast_radius is not None
    assert (cohort.blast_radius.definitions, cohort.blast_radius.files) == case.blast_radius
    assert cohort.unresolved_imports == ()
    rates = import_resolution(index_at(repo, "feature"))
    family = "js" if case.language == "typescript" else case.language
    assert rates[family].total >= 3
    assert rates[family].rate >= 0.95, rates
