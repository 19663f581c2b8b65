"""Cohorts that group a real change: tests beside their code, a file kept whole unless its
changed parts are unconnected, manifests and docs attached or grouped."""

from __future__ import annotations

import difflib

from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.types import AxisResult
from reviews.index import build_index, compute_cohorts
from reviews.index.axes_compute import compute_test_gap
from reviews.index.cohorts import CONFIG_DOCS_LABEL, UNLINKED_TESTS_LABEL
from reviews.sources.diffs import parse_unified_diff
from tests.reviews.index.index_helpers import pr_cohorts

KY_LIKE = {
    "package.json": (
        '{\n  "name": "ky",\n  "exports": {"default": "./distribution/index.js"},\n'
        '  "dependencies": {\n    "merge-options": "^1.0.0"\n  },\n'
        '  "devDependencies": {\n    "ava": "^5.0.0"\n  }\n}\n'
    ),
    "tsconfig.json": '{"compilerOptions": {"outDir": "distribution", "rootDir": "source"}}\n',
    "readme.md": "# ky\n\nTiny client.\n",
    "source/index.ts": "export * from './core/Ky.js';\n",
    "source/utils/merge.ts": (
        "import mergeOptions from 'merge-options';\n\n"
        "export function deepMerge(a: object, b: object) {\n"
        "  return mergeOptions(a, b);\n"
        "}\n"
    ),
    "source/core/constants.ts": "export function maxRetries() {\n  return 2;\n}\n",
    "source/core/Ky.ts": (
        "import {deepMerge} from '../utils/merge.js';\n"
        "import {maxRetries} from './constants.js';\n\n"
        "export class Ky {\n"
        "  options(a: object) {\n"
        "    return deepMerge(a, {});\n"
        "  }\n\n"
        "  retries() {\n"
        "    return maxRetries();\n"
        "  }\n"
        "}\n\n"
        "export function create() {\n"
        "  return new Ky();\n"
        "}\n"
    ),
    "source/other.ts": "export function unrelated() {\n  return 1;\n}\n",
    "test/main.ts": (
        "import test from 'ava';\nimport {create} from 'ky';\n\n"
        "test('creates', t => {\n  t.truthy(create());\n});\n"
    ),
    "test/hooks.ts": (
        "import test from 'ava';\n\ntest('fixture', t => {\n  t.context.client.retries();\n});\n"
    ),
    "test/lonely.ts": "import test from 'ava';\n\ntest('alone', t => {\n  t.pass();\n});\n",
}


def _ky_change(repo, extra: dict[str, str] | None = None) -> None:
    repo.commit("base", KY_LIKE, branch="main")
    repo.checkout("feature", create_from="main")
    ky = KY_LIKE["source/core/Ky.ts"]
    repo.commit(
        "patch release",
        {
            "source/utils/merge.ts": KY_LIKE["source/utils/merge.ts"].replace(
                "(a, b)", "({}, a, b)"
            ),
            "source/core/constants.ts": KY_LIKE["source/core/constants.ts"].replace("2", "3"),
            "source/core/Ky.ts": ky.replace("deepMerge(a, {})", "deepMerge({}, a)").replace(
                "return maxRetries();", "return maxRetries() + 0;"
            ),
            "test/main.ts": KY_LIKE["test/main.ts"].replace("truthy", "true"),
            "test/hooks.ts": KY_LIKE["test/hooks.ts"].replace("retries()", "retries() "),
            "test/lonely.ts": KY_LIKE["test/lonely.ts"].replace("pass()", "pass() "),
            "package.json": KY_LIKE["package.json"].replace("^1.0.0", "^2.0.0"),
            "readme.md": KY_LIKE["readme.md"] + "\nMore.\n",
            **(extra or {}),
        },
    )


def test_a_patch_release_is_one_cohort_with_its_tests(git_repo_factory):
    """The ESM `.js` specifiers connect Ky.ts to merge.ts and constants.ts; the test importing
    the package by name and the test calling a changed method through a fixture join it; the
    bumped dependency merge.ts imports comes along; the readme is in one docs group and the
    test linked to nothing in one group of its own — 10 files, 3 groups, Ky.ts not split."""
    repo = git_repo_factory()
    _ky_change(repo)
    cohorts = pr_cohorts(repo, "main", "feature")
    main, *rest = cohorts
    assert main.label == "code graph"
    assert set(main.paths) == {
        "package.json",
        "source/core/Ky.ts",
        "source/core/constants.ts",
        "source/utils/merge.ts",
        "test/hooks.ts",
        "test/main.ts",
    }
    assert [s.path for s in main.reading_order][:3] == [
        "source/core/constants.ts",
        "source/utils/merge.ts",
        "source/core/Ky.ts",
    ]
    assert {s.path for s in main.reading_order if s.is_test} == {"test/hooks.ts", "test/main.ts"}
    assert main.split_paths == () and main.unresolved_imports == ()
    # `create` (which builds a Ky) and the entry point re-exporting Ky.ts depend on it.
    assert main.blast_radius is not None
    assert (main.blast_radius.definitions, main.blast_radius.files) == (1, 2)
    labels = {c.label: c.paths for c in rest}
    assert labels == {
        UNLINKED_TESTS_LABEL: ("test/lonely.ts",),
        CONFIG_DOCS_LABEL: ("readme.md",),
    }
    assert main.to_json()["unresolved_imports"] == []
    # testGap reads the same links: the changed code has its tests in its cohort.
    result, details = compute_test_gap(cohorts)
    assert details["cohorts_without_tests"] == [] and result is AxisResult.PASS


def test_an_unresolved_own_import_is_shown_in_the_cohort(git_repo_factory):
    repo = git_repo_factory()
    ky = KY_LIKE["source/core/Ky.ts"]
    _ky_change(repo, {"source/core/Ky.ts": "import {gone} from './missing.js';\n" + ky})
    (main, *_rest) = pr_cohorts(repo, "main", "feature")
    assert "source/core/Ky.ts: ./missing.js" in main.unresolved_imports


# -- property: a file is split only where its changed parts share no link ------------------


@st.composite
def _change(draw):
    """A Python module of up to 6 functions (some in a class) calling one another at random,
    and a random subset of them changed."""
    count = draw(st.integers(2, 6))
    in_class = draw(st.lists(st.booleans(), min_size=count, max_size=count))
    calls = draw(
        st.lists(st.lists(st.integers(0, count - 1), max_size=2), min_size=count, max_size=count)
    )
    changed = draw(st.sets(st.integers(0, count - 1), min_size=1))
    return count, in_class, calls, changed


def _module(count, in_class, calls, changed, version):
    top, methods = [], []
    for i in range(count):
        body = [f"f{j}()" if not in_class[j] else f"K.f{j}(None)" for j in calls[i] if j != i]
        lines = [f"    x = {version if i in changed else 0}", *(f"    {b}" for b in body)]
        if in_class[i]:
            methods.append(f"    def f{i}(self):\n" + "\n".join("    " + ln for ln in lines))
        else:
            top.append(f"def f{i}():\n" + "\n".join(lines))
    parts = top + (["class K:\n" + "\n\n".join(methods)] if methods else [])
    return "\n\n\n".join(parts) + "\n"


@settings(max_examples=40, deadline=None)
@given(_change())
def test_a_files_unconnected_parts_are_one_cohort_not_two_of_the_same_paths(change):
    count, in_class, calls, changed = change
    old, new = (_module(count, in_class, calls, changed, v) for v in (1, 2))
    diff = "diff --git a/m.py b/m.py\n" + "".join(
        difflib.unified_diff(old.splitlines(True), new.splitlines(True), "a/m.py", "b/m.py", n=0)
    )
    head = build_index({"m.py": new})
    cohorts = compute_cohorts(parse_unified_diff(diff), head, base=build_index({"m.py": old}))
    # One file: its unconnected parts would be cohorts of the same path list, which a reader
    # cannot tell apart; they are one cohort, whole.
    assert len(cohorts) == 1 and cohorts[0].paths == ("m.py",)
    assert cohorts[0].split_paths == ()
    changed_names = {f"f{i}" for i in changed}
    assert {s.rpartition(".")[2] for s in cohorts[0].symbols} >= changed_names


PY_BASE = {
    "shop/__init__.py": "",
    "shop/cart.py": (
        "class Cart:\n"
        "    def total(self):\n        return 1\n\n"
        "    def count(self):\n        return 2\n"
    ),
    "shop/mail.py": "def send():\n    return 'sent'\n",
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\n\n"
        "def test_total():\n    assert Cart().total() == 1\n\n\n"
        "def test_count(cart_fixture):\n    assert cart_fixture.count() == 2\n\n\n"
        "def test_other():\n    assert True\n"
    ),
}


def test_python_tests_follow_the_code_and_a_class_stays_whole(git_repo_factory):
    """Two methods of one class changed without calling each other stay one cohort; the test
    file (one test using the class, one calling a changed method through a fixture, one linked
    to nothing) joins it whole; the unrelated change is a cohort of its own."""
    repo = git_repo_factory()
    repo.commit("base", PY_BASE, branch="main")
    repo.checkout("feature", create_from="main")
    cart = PY_BASE["shop/cart.py"].replace("return 1", "return 10").replace("return 2", "return 20")
    test = PY_BASE["tests/test_cart.py"]
    test = test.replace("== 1", "== 10").replace("== 2", "== 20").replace("True", "1")
    repo.commit(
        "change",
        {
            "shop/cart.py": cart,
            "tests/test_cart.py": test,
            "shop/mail.py": PY_BASE["shop/mail.py"].replace("sent", "queued"),
        },
    )
    cohorts = pr_cohorts(repo, "main", "feature")
    by_path = {c.paths: c for c in cohorts}
    assert set(by_path) == {("shop/cart.py", "tests/test_cart.py"), ("shop/mail.py",)}
    cart_cohort = by_path[("shop/cart.py", "tests/test_cart.py")]
    assert {"shop.cart.Cart.total", "shop.cart.Cart.count"} <= set(cart_cohort.symbols)
    assert [s.path for s in cart_cohort.reading_order] == ["shop/cart.py", "tests/test_cart.py"]
    assert all(c.split_paths == () for c in cohorts)


def test_a_part_of_a_file_already_in_a_larger_cohort_joins_it():
    """a.f calls b.g; a.h is linked to neither. The a.h part would be a cohort of a.py alone,
    a fragment of the a.py + b.py one: it joins that cohort instead, and no file is split."""
    old = {
        "a.py": "from b import g\n\n\ndef f():\n    return g()\n\n\ndef h():\n    return 1\n",
        "b.py": "def g():\n    return 1\n",
    }
    new = {
        "a.py": old["a.py"].replace("return g()", "return g() + 1").replace("return 1", "return 2"),
        "b.py": old["b.py"].replace("return 1", "return 3"),
    }
    diff = "".join(
        f"diff --git a/{p} b/{p}\n"
        + "".join(
            difflib.unified_diff(
                old[p].splitlines(True), new[p].splitlines(True), f"a/{p}", f"b/{p}", n=0
            )
        )
        for p in ("a.py", "b.py")
    )
    cohorts = compute_cohorts(parse_unified_diff(diff), build_index(new), base=build_index(old))
    assert [c.paths for c in cohorts] == [("a.py", "b.py")]
    assert {"a.f", "a.h", "b.g"} <= set(cohorts[0].symbols)
    assert cohorts[0].split_paths == ()


def test_a_large_connected_change_is_read_directory_by_directory():
    """Fifteen modules in three packages all calling one changed helper: one connected change
    of 16 files, read as a cohort per directory, each saying it is part of a larger one; a
    connected change of a few files stays whole."""
    from reviews.index.cohorts import LARGE_COHORT_FILES, SPLIT_LABEL

    def files(version: int) -> dict[str, str]:
        out = {"core/__init__.py": "", "core/util.py": f"def f():\n    return {version}\n"}
        for package in ("billing", "orders", "search"):
            out[f"{package}/__init__.py"] = ""
            for i in range(5):
                out[f"{package}/m{i}.py"] = (
                    f"from core.util import f\n\n\ndef g{i}():\n    return f() + {version}\n"
                )
        return out

    old, new = files(1), files(2)
    changed = [p for p in new if old[p] != new[p]]
    assert len(changed) == 16 > LARGE_COHORT_FILES
    diff = "".join(
        f"diff --git a/{p} b/{p}\n"
        + "".join(
            difflib.unified_diff(
                old[p].splitlines(True), new[p].splitlines(True), f"a/{p}", f"b/{p}", n=0
            )
        )
        for p in changed
    )
    cohorts = compute_cohorts(parse_unified_diff(diff), build_index(new), base=build_index(old))
    by_directory = {c.paths[0].split("/")[0]: c for c in cohorts}
    assert set(by_directory) == {"core", "billing", "orders", "search"}
    assert all(c.label == SPLIT_LABEL for c in cohorts)
    assert all(len({p.split("/")[0] for p in c.paths}) == 1 for c in cohorts)
    assert sorted(p for c in cohorts for p in c.paths) == sorted(changed)  # each file once
    # The helper everything depends on is read first: the largest blast radius.
    assert cohorts[0].paths == ("core/util.py",)

    small = compute_cohorts(
        parse_unified_diff(diff.split("diff --git a/orders")[0]),
        build_index(new),
        base=build_index(old),
    )
    assert [c.label for c in small] == ["code graph"]
