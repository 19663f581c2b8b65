"""Tests beside their code in Java: a test of a public facade joins the cohort of the changed
implementation behind it, a test reaches its package's classes without an import, and a test
the graph does not connect stays in the group without a link (counted, never guessed)."""

from __future__ import annotations

from reviews.index.cohorts import UNLINKED_TESTS_LABEL
from tests.reviews.index.index_helpers import pr_cohorts

_MAIN = "lib/src/main/java/com/kit"
_TEST = "lib/src/test/java/com/kit"


def _java(package: str, imports: str, body: str) -> str:
    return f"package {package};\n\n{imports}public class {body}\n"


FACADE = {
    # The public facade, unchanged by the pull request.
    f"{_MAIN}/Api.java": _java(
        "com.kit",
        "import com.kit.internal.Engine;\n\n",
        "Api {\n    public String run(String s) {\n        return new Engine().go(s);\n    }\n}",
    ),
    f"{_MAIN}/internal/Engine.java": _java(
        "com.kit.internal",
        "",
        "Engine {\n    public String go(String s) {\n        return s.trim();\n    }\n}",
    ),
    f"{_MAIN}/internal/Cache.java": _java(
        "com.kit.internal", "", "Cache {\n    public int size() {\n        return 0;\n    }\n}"
    ),
    # Three unchanged files between a test and the engine: too far to be a link.
    f"{_MAIN}/Deep.java": _java(
        "com.kit", "", "Deep {\n    void a() {\n        new Deeper().b();\n    }\n}"
    ),
    f"{_MAIN}/Deeper.java": _java(
        "com.kit", "", "Deeper {\n    void b() {\n        new Deepest().c();\n    }\n}"
    ),
    f"{_MAIN}/Deepest.java": _java(
        "com.kit",
        "import com.kit.internal.Engine;\n\n",
        'Deepest {\n    void c() {\n        new Engine().go("");\n    }\n}',
    ),
    # Only the facade: `api.run(…)` is a call through an instance, not resolved.
    f"{_TEST}/ApiTest.java": _java(
        "com.kit",
        "import static org.junit.Assert.assertEquals;\n\n",
        'ApiTest {\n    void runs() {\n        Api api = new Api();\n        assertEquals("x", '
        'api.run(" x "));\n    }\n}',
    ),
    # The same package as Cache, in the test source root: no import.
    f"{_TEST}/internal/CacheTest.java": _java(
        "com.kit.internal",
        "import static org.junit.Assert.assertNotNull;\n\n",
        "CacheTest {\n    void empty() {\n        assertNotNull(new Cache());\n    }\n}",
    ),
    f"{_TEST}/DeepTest.java": _java(
        "com.kit", "", "DeepTest {\n    void deep() {\n        new Deep().a();\n    }\n}"
    ),
}


def test_a_facade_test_joins_the_changed_implementation_and_a_package_test_its_class(
    git_repo_factory,
):
    """Engine and Cache change, Api does not: ApiTest (which only builds an Api) reads with the
    Engine through Api; CacheTest (same package, no import) with the Cache; DeepTest, three
    unchanged files away from the Engine, stays without a link."""
    repo = git_repo_factory()
    repo.commit("base", FACADE, branch="main")
    repo.checkout("feature", create_from="main")
    change = {
        f"{_MAIN}/internal/Engine.java": ("s.trim()", "s.strip()"),
        f"{_MAIN}/internal/Cache.java": ("return 0;", "return 1;"),
        f"{_TEST}/ApiTest.java": ('" x "', '"  x "'),
        f"{_TEST}/internal/CacheTest.java": ("new Cache()", "new Cache() "),
        f"{_TEST}/DeepTest.java": ("a();", "a(); "),
    }
    repo.commit("change", {p: FACADE[p].replace(old, new) for p, (old, new) in change.items()})
    cohorts = pr_cohorts(repo, "main", "feature")
    groups = {frozenset(c.paths) for c in cohorts if c.label != UNLINKED_TESTS_LABEL}
    assert groups == {
        frozenset({f"{_MAIN}/internal/Engine.java", f"{_TEST}/ApiTest.java"}),
        frozenset({f"{_MAIN}/internal/Cache.java", f"{_TEST}/internal/CacheTest.java"}),
    }
    unlinked = [c.paths for c in cohorts if c.label == UNLINKED_TESTS_LABEL]
    assert unlinked == [(f"{_TEST}/DeepTest.java",)]
    engine = next(c for c in cohorts if f"{_TEST}/ApiTest.java" in c.paths)
    assert [s.path for s in engine.reading_order] == [
        f"{_MAIN}/internal/Engine.java",
        f"{_TEST}/ApiTest.java",
    ]


def test_a_test_using_two_changed_parts_reads_with_the_one_its_change_uses(git_repo_factory):
    """ReaderTest builds three Readers and one Engine, and its change is the Engine's line: it
    reads with the Engine, and does not make the two unrelated changes one cohort."""
    reader = f"{_MAIN}/internal/Reader.java"
    tree = {
        f"{_MAIN}/internal/Engine.java": FACADE[f"{_MAIN}/internal/Engine.java"],
        reader: _java(
            "com.kit.internal", "", "Reader {\n    public int peek() {\n        return 0;\n    }\n}"
        ),
        f"{_TEST}/internal/ReaderTest.java": _java(
            "com.kit.internal",
            "",
            "ReaderTest {\n    void reads() {\n        new Reader();\n        new Reader();\n"
            "        new Reader();\n        new Engine();\n    }\n}",
        ),
    }
    repo = git_repo_factory()
    repo.commit("base", tree, branch="main")
    repo.checkout("feature", create_from="main")
    test = tree[f"{_TEST}/internal/ReaderTest.java"]
    repo.commit(
        "change",
        {
            f"{_MAIN}/internal/Engine.java": tree[f"{_MAIN}/internal/Engine.java"].replace(
                "s.trim()", "s.strip()"
            ),
            reader: tree[reader].replace("return 0;", "return 1;"),
            f"{_TEST}/internal/ReaderTest.java": test.replace("new Engine();", "new Engine(); "),
        },
    )
    cohorts = pr_cohorts(repo, "main", "feature")
    assert {frozenset(c.paths) for c in cohorts} == {
        frozenset({reader}),
        frozenset({f"{_MAIN}/internal/Engine.java", f"{_TEST}/internal/ReaderTest.java"}),
    }


def test_tests_sharing_a_changed_fixture_each_read_with_their_own_code(git_repo_factory):
    """ReaderTest and EngineTest both use a changed Fixture of the test tree (one component of
    tests): each reads with the code it exercises, the Fixture (linked to no code itself) with
    one of them, and nothing is left without a link."""
    engine, reader = f"{_MAIN}/internal/Engine.java", f"{_MAIN}/internal/Reader.java"
    fixture = f"{_TEST}/internal/Fixture.java"

    def test_of(name: str) -> str:
        return _java(
            "com.kit.internal",
            "",
            f"{name}Test {{\n    void uses() {{\n        new Fixture();\n        new {name}();\n"
            "    }\n}",
        )

    tree = {
        engine: FACADE[engine],
        reader: _java(
            "com.kit.internal", "", "Reader {\n    int peek() {\n        return 0;\n    }\n}"
        ),
        fixture: _java(
            "com.kit.internal", "", "Fixture {\n    int value() {\n        return 0;\n    }\n}"
        ),
        f"{_TEST}/internal/EngineTest.java": test_of("Engine"),
        f"{_TEST}/internal/ReaderTest.java": test_of("Reader"),
    }
    repo = git_repo_factory()
    repo.commit("base", tree, branch="main")
    repo.checkout("feature", create_from="main")
    changed = {p: t.replace("new Fixture();", "new Fixture(); ") for p, t in tree.items()}
    changed[engine] = tree[engine].replace("s.trim()", "s.strip()")
    for path in (reader, fixture):
        changed[path] = tree[path].replace("return 0;", "return 1;")
    repo.commit("change", changed)
    cohorts = pr_cohorts(repo, "main", "feature")
    assert all(c.label != UNLINKED_TESTS_LABEL for c in cohorts)
    groups = {frozenset(c.paths) - {fixture} for c in cohorts}
    assert groups == {
        frozenset({engine, f"{_TEST}/internal/EngineTest.java"}),
        frozenset({reader, f"{_TEST}/internal/ReaderTest.java"}),
    }
    assert sum(fixture in c.paths for c in cohorts) == 1


def test_a_test_reads_with_the_class_it_is_about_not_the_facade_every_test_builds(
    git_repo_factory,
):
    """Three changed tests build the changed Facade; ReaderTest builds it twice and the changed
    Reader once (its changed line uses neither): the Reader, which no other test uses, says more
    about it than the Facade every test builds."""
    facade, reader = f"{_MAIN}/Facade.java", f"{_MAIN}/Reader.java"

    def test_of(name: str, body: str) -> str:
        return _java(
            "com.kit", "", f"{name} {{\n    void t() {{\n{body}        int n = 1;\n    }}\n}}"
        )

    tree = {
        facade: _java("com.kit", "", "Facade {\n    int run() {\n        return 0;\n    }\n}"),
        reader: _java("com.kit", "", "Reader {\n    int peek() {\n        return 0;\n    }\n}"),
        f"{_TEST}/ATest.java": test_of("ATest", "        new Facade();\n"),
        f"{_TEST}/BTest.java": test_of("BTest", "        new Facade();\n"),
        f"{_TEST}/ReaderTest.java": test_of(
            "ReaderTest", "        new Facade();\n        new Facade();\n        new Reader();\n"
        ),
    }
    repo = git_repo_factory()
    repo.commit("base", tree, branch="main")
    repo.checkout("feature", create_from="main")
    repo.commit(
        "change",
        {p: t.replace("return 0;", "return 1;").replace("n = 1", "n = 2") for p, t in tree.items()},
    )
    cohorts = pr_cohorts(repo, "main", "feature")
    assert {frozenset(c.paths) for c in cohorts} == {
        frozenset({facade, f"{_TEST}/ATest.java", f"{_TEST}/BTest.java"}),
        frozenset({reader, f"{_TEST}/ReaderTest.java"}),
    }
