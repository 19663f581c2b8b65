"""Deterministic axes: apiContract (griffe + OpenAPI), testGap, visual and performance."""

from __future__ import annotations

import json

from reviews.domain.types import AxisResult, Category, NodeType, NodeView, Priority
from reviews.index import build_index, files_at_commit
from reviews.index.axes_compute import (
    compute_api_contract,
    compute_performance,
    compute_test_gap,
    compute_visual,
    contract_file,
)
from reviews.index.cohorts import compute_cohorts
from reviews.sources.git_local import LocalGitSource
from tests.reviews.index.index_helpers import pr_cohorts

LIB = {
    "lib/__init__.py": "from .core import run\n\n__all__ = ['run', 'api']\n\n\ndef api(a, b=1):\n    return _helper(a)\n\n\ndef _helper(a):\n    return a\n",
    "lib/core.py": "def run(x):\n    return x\n\n\ndef stop():\n    return None\n\n\nclass Engine:\n    def start(self, speed):\n        return speed\n",
    "lib/tests/test_core.py": "def test_run():\n    assert True\n",
    "tests/test_lib.py": "def test_it():\n    assert True\n",
}


def _changes(details):
    return {(c["where"], c["message"]) for c in details["changes"]}


def test_it_fails_api_contract_on_a_removed_public_function():
    """Removing a public function is breaking."""
    head = {**LIB, "lib/core.py": LIB["lib/core.py"].replace("def stop():\n    return None\n", "")}
    result, details = compute_api_contract(base_files=LIB, head_files=head)
    assert result is AxisResult.FAIL
    assert ("lib.core.stop", "Public object was removed") in _changes(details)
    assert details["checked"] == ["python: lib"]


def test_it_fails_api_contract_on_a_new_required_parameter():
    """A parameter added without a default breaks every caller."""
    head = {
        **LIB,
        "lib/core.py": LIB["lib/core.py"].replace("start(self, speed)", "start(self, speed, gear)"),
    }
    result, details = compute_api_contract(base_files=LIB, head_files=head)
    assert result is AxisResult.FAIL
    assert any(w == "lib.core.Engine.start" for w, _ in _changes(details))


def test_it_passes_an_added_optional_parameter_and_new_public_name_listing_them():
    """Additions only (a new optional parameter, a new public function) break no caller: pass,
    with the additions listed as evidence."""
    head = {
        **LIB,
        "lib/__init__.py": LIB["lib/__init__.py"].replace(
            "def api(a, b=1)", "def api(a, b=1, c=None)"
        ),
        "lib/core.py": LIB["lib/core.py"] + "\n\ndef extra():\n    return 1\n",
    }
    result, details = compute_api_contract(base_files=LIB, head_files=head)
    assert result is AxisResult.PASS
    assert _changes(details) == {
        ("lib.api", "optional parameter 'c' added"),
        ("lib.core.extra", "public function added"),
    }
    assert "2 addition(s)" in details["evidence"] and details["to_clear"] == []


def test_a_changed_default_is_a_behaviour_note_not_a_break():
    """`b=1` → `b=None` keeps every call working (the mutable-default fix is one): warn."""
    head = {**LIB, "lib/__init__.py": LIB["lib/__init__.py"].replace("b=1", "b=None")}
    result, details = compute_api_contract(base_files=LIB, head_files=head)
    assert result is AxisResult.WARN
    assert [c["severity"] for c in details["changes"]] == ["advisory"]


def test_a_private_modules_removal_is_not_a_break():
    """A shim removed from `lib/_compat.py` (and a private class's method) is nobody's API."""
    base = {
        **LIB,
        "lib/_compat.py": "def old_django_shim(x):\n    return x\n",
        "lib/core.py": LIB["lib/core.py"]
        + "\n\nclass _Cache:\n    def get(self, key):\n        return key\n",
    }
    head = {
        **LIB,
        "lib/core.py": LIB["lib/core.py"]
        + "\n\nclass _Cache:\n    def get(self):\n        return 1\n",
    }
    result, details = compute_api_contract(base_files=base, head_files=head)
    assert result is AxisResult.PASS, details["changes"]


def test_it_passes_an_internal_refactor():
    """Renaming a private helper (and its caller's use of it) and touching tests is not an API
    change."""
    head = {
        **LIB,
        "lib/__init__.py": LIB["lib/__init__.py"].replace("_helper", "_assist"),
        "lib/tests/test_core.py": "def test_run_renamed():\n    assert True\n",
    }
    result, details = compute_api_contract(base_files=LIB, head_files=head)
    assert result is AxisResult.PASS
    assert details["changes"] == []


OPENAPI = {
    "openapi": "3.0.3",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/items": {
            "get": {
                "parameters": [{"name": "limit", "in": "query", "schema": {"type": "integer"}}],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Item"}}
                        },
                    }
                },
            },
            "post": {
                "requestBody": {
                    "content": {
                        "application/json": {
                            "schema": {"type": "object", "properties": {"name": {"type": "string"}}}
                        }
                    }
                },
                "responses": {"201": {"description": "created"}},
            },
        }
    },
    "components": {
        "schemas": {
            "Item": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
            }
        }
    },
}


def _api(doc, name="api/openapi.json"):
    return {name: json.dumps(doc)}


def test_it_fails_api_contract_on_a_removed_openapi_operation():
    """Removing POST /items from the OpenAPI document is breaking."""
    head = json.loads(json.dumps(OPENAPI))
    del head["paths"]["/items"]["post"]
    result, details = compute_api_contract(base_files=_api(OPENAPI), head_files=_api(head))
    assert result is AxisResult.FAIL
    assert _changes(details) == {("POST /items", "operation removed")}
    assert details["checked"] == ["openapi: api/openapi.json"]


def test_it_judges_openapi_parameters_bodies_and_responses():
    """Optional additions pass; a new required body field, a removed or retyped response
    field fail — including through a $ref."""
    additive = json.loads(json.dumps(OPENAPI))
    additive["paths"]["/items"]["get"]["parameters"].append(
        {"name": "cursor", "in": "query", "schema": {"type": "string"}}
    )
    result, details = compute_api_contract(base_files=_api(OPENAPI), head_files=_api(additive))
    assert result is AxisResult.PASS
    assert _changes(details) == {("GET /items", "optional query parameter 'cursor' added")}

    breaking = json.loads(json.dumps(OPENAPI))
    body = breaking["paths"]["/items"]["post"]["requestBody"]["content"]["application/json"]
    body["schema"]["properties"]["owner"] = {"type": "string"}
    body["schema"]["required"] = ["owner"]
    item = breaking["components"]["schemas"]["Item"]["properties"]
    del item["name"]
    item["id"] = {"type": "string"}
    result, details = compute_api_contract(base_files=_api(OPENAPI), head_files=_api(breaking))
    assert result is AxisResult.FAIL
    assert _changes(details) == {
        ("POST /items request body field 'owner'", "required field added"),
        ("GET /items response 200 field 'name'", "field removed"),
        ("GET /items response 200 field 'id'", "type changed from integer to string"),
    }


def test_it_reads_yaml_openapi_when_pyyaml_is_there_and_notes_languages_it_cannot_read():
    """YAML documents are compared like JSON. A change in a language whose API the axis
    cannot read is never `pass`: by default it is a `warn` naming the language per file (the
    change is not held for it); a workspace that asks for it gets `unavailable`, which says
    what would clear the gate."""
    yaml = __import__("yaml")
    head = json.loads(json.dumps(OPENAPI))
    del head["paths"]["/items"]["get"]
    result, _ = compute_api_contract(
        base_files={"openapi.yaml": yaml.safe_dump(OPENAPI)},
        head_files={"openapi.yaml": yaml.safe_dump(head)},
    )
    assert result is AxisResult.FAIL
    changed = ["src/Main.kt", "lib/X.cs", "README.md"]
    result, details = compute_api_contract(base_files={}, head_files={}, changed=changed)
    assert result is AxisResult.WARN
    assert details["unchecked_files"] == {"C#": ["lib/X.cs"], "Kotlin": ["src/Main.kt"]}
    assert "C#, Kotlin" in details["note"] and details["to_clear"] == []
    result, details = compute_api_contract(
        base_files={}, head_files={}, changed=changed, hold_unreadable=True
    )
    assert result is AxisResult.UNAVAILABLE
    assert details["unchecked_languages"] == ["C#", "Kotlin"]
    assert "C#, Kotlin" in details["reason"]
    assert [s["action"] for s in details["to_clear"]] == ["submit", "ungate"]
    assert details["to_clear"][1]["label"] == "un-gate apiContract in Settings → Workspace rules"


def test_it_compares_the_api_of_two_commits_read_from_git(git_repo_factory):
    """files_at_commit(include=contract_file) feeds the axis straight from a repository."""
    repo = git_repo_factory()
    repo.commit("base", LIB)
    repo.checkout("feature", create_from="main")
    repo.commit(
        "drop stop", {"lib/core.py": LIB["lib/core.py"].replace("def stop():", "def halt():")}
    )
    source = LocalGitSource(repo.path)
    result, details = compute_api_contract(
        base_files=files_at_commit(source, "main", include=contract_file),
        head_files=files_at_commit(source, "feature", include=contract_file),
    )
    assert result is AxisResult.FAIL  # a rename removes the old public name
    assert ("lib.core.halt", "public function added") in _changes(details)


def _node(category: Category, path: str) -> NodeView:
    return NodeView(
        id="n1",
        agent="quality",
        type=NodeType.SUGGESTION,
        priority=Priority.P2,
        confidence=0.8,
        category=category,
        path=path,
        start_line=1,
        end_line=1,
    )


def test_it_warns_on_a_test_gap_with_the_dependency_injection_caveat(git_repo_factory):
    """A cohort changing code with no test in it warns and lists its key; a cohort with a
    test file, or with a testing finding in its files, does not."""
    repo = git_repo_factory()
    repo.commit(
        "base",
        {
            "app/__init__.py": "",
            "app/a.py": "def f():\n    return 1\n",
            "app/b.py": "def g():\n    return 1\n",
            "tests/test_b.py": "from app.b import g\n\n\ndef test_g():\n    assert g() == 1\n",
            "README.md": "hello\n",
        },
    )
    repo.checkout("feature", create_from="main")
    repo.commit(
        "edit",
        {
            "app/a.py": "def f():\n    return 2\n",
            "app/b.py": "def g():\n    return 2\n",
            "tests/test_b.py": "from app.b import g\n\n\ndef test_g():\n    assert g() == 2\n",
            "README.md": "hello again\n",
        },
    )
    cohorts = pr_cohorts(repo, "main", "feature")
    untested = next(c for c in cohorts if c.paths == ("app/a.py",))
    result, details = compute_test_gap(cohorts)
    assert result is AxisResult.WARN
    assert details["cohorts_without_tests"] == [untested.key]
    assert "dependency injection" in details["caveat"] and "factories" in details["caveat"]
    assert details["advisory"] is True

    result, details = compute_test_gap(cohorts, [_node(Category.TESTING, "app/a.py")])
    assert result is AxisResult.PASS
    assert "dependency injection" in details["caveat"]
    # A finding of another category does not stand in for a test.
    assert compute_test_gap(cohorts, [_node(Category.STYLE, "app/a.py")])[0] is AxisResult.WARN


def test_it_warns_on_path_grouped_cohorts_too():
    """Without an index, a directory of changed code with no tests still counts as a gap."""
    from reviews.sources.diffs import parse_unified_diff

    diff = parse_unified_diff(
        "diff --git a/src/x.py b/src/x.py\n--- a/src/x.py\n+++ b/src/x.py\n"
        "@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    )
    cohorts = compute_cohorts(diff, build_index({}))
    result, details = compute_test_gap(cohorts)
    assert result is AxisResult.WARN
    assert details["cohorts_without_tests"] == [cohorts[0].key]


def test_it_leaves_visual_and_performance_unavailable_unless_submitted():
    """Nothing computes them: unavailable with a reason, or the submitted result."""
    for compute in (compute_visual, compute_performance):
        result, details = compute()
        assert result is AxisResult.UNAVAILABLE
        assert "submitted" in details["reason"]
        assert compute(AxisResult.FAIL) == (AxisResult.FAIL, {"source": "submitted"})
