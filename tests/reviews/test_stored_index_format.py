"""A code index stored by an older format is built again, not read (reviews/services/codeindex)."""

from __future__ import annotations

import pytest

from reviews.index import build_index
from reviews.models import CodeIndexRecord
from reviews.services.codeindex import _stored
from workspaces.models import Repository

pytestmark = pytest.mark.django_db


def test_an_index_of_an_older_format_is_dropped_and_one_of_this_format_read(workspace, tmp_path):
    repository = Repository.objects.create(
        workspace=workspace, kind="local", local_path=str(tmp_path)
    )
    current = build_index({"pkg/__init__.py": "X = 1\n"})
    CodeIndexRecord.objects.create(
        repository=repository, commit_sha="a" * 40, indexed=True, data=current.to_json()
    )
    CodeIndexRecord.objects.create(
        repository=repository,
        commit_sha="b" * 40,
        indexed=True,
        data={**current.to_json(), "format": 1},
    )
    found = _stored(repository, "a" * 40, "b" * 40)
    assert set(found) == {"a" * 40}
    assert found["a" * 40].to_json() == current.to_json()
    # The old one is gone: the round builds it again and stores it anew.
    assert list(CodeIndexRecord.objects.values_list("commit_sha", flat=True)) == ["a" * 40]
