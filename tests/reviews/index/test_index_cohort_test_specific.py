"""Tests beside the most specific changed code they use: a touched definition before an
untouched function of a changed file (passed through to what it builds), and a class few tests
use on their changed lines before one every test uses, however large the cohorts around them."""

from __future__ import annotations

from tests.reviews.index.index_helpers import pr_cohorts

THROUGH = {
    "pkg/__init__.py": "",
    # The engine changes; `make` beside a changed `other` does not, and builds an Engine.
    "pkg/engine.py": "class Engine:\n    def go(self):\n        return 0\n",
    "pkg/api.py": (
        "from pkg.engine import Engine\n\n\n"
        "def make():\n    return Engine()\n\n\n"
        "def other():\n    return 0\n"
    ),
    "tests/__init__.py": "",
    "tests/test_api.py": (
        "from pkg.api import make\n\n\ndef test_go():\n    assert make().go() == 0\n"
    ),
}


def test_a_test_of_an_untouched_function_reads_with_the_changed_code_it_builds(
    git_repo_factory,
):
    """api.py changes in `other` only; the test calls `make`, which builds the changed Engine:
    it reads with the Engine, not with api.py for sharing a file with `other`."""
    repo = git_repo_factory()
    repo.commit("base", THROUGH, branch="main")
    repo.checkout("feature", create_from="main")
    repo.commit(
        "change",
        {
            "pkg/engine.py": THROUGH["pkg/engine.py"].replace("return 0", "return 1"),
            "pkg/api.py": THROUGH["pkg/api.py"].replace("return 0", "return 2"),
            "tests/test_api.py": THROUGH["tests/test_api.py"].replace("== 0", "== 1"),
        },
    )
    groups = {frozenset(c.paths) for c in pr_cohorts(repo, "main", "feature")}
    assert groups == {
        frozenset({"pkg/engine.py", "tests/test_api.py"}),
        frozenset({"pkg/api.py"}),
    }


def _test_module(name: str, body: str) -> str:
    imports = "from pkg.ctor import Ctor\n" if "Ctor" in body else ""
    imports += "from pkg.shared import helper\n" if "helper" in body else ""
    return f"{imports}from pkg.token import Token\n\n\ndef test_{name}():\n{body}    assert True\n"


SPECIFIC = {
    "pkg/__init__.py": "",
    "pkg/token.py": "class Token:\n    def get(self):\n        return 0\n",
    "pkg/shared.py": "def helper():\n    return 0\n",
    "pkg/ctor.py": (
        "from pkg.shared import helper\n\n\n"
        "class Ctor:\n    def make(self):\n        return helper()\n"
    ),
    "tests/__init__.py": "",
    **{
        f"tests/test_{n}.py": _test_module(n, "    Token()\n    helper()\n")
        for n in ("a", "b", "c")
    },
    "tests/test_ctor.py": _test_module(
        "ctor", "    Ctor()\n    Token()\n    Token()\n    Token()\n"
    ),
}


def test_a_test_reads_with_the_class_few_tests_use_on_their_changed_lines(git_repo_factory):
    """Every test builds Tokens on its changed lines; test_ctor also builds the Ctor once, and
    the others call the shared helper on an unchanged line. Ctor's cohort (Ctor with the
    helper it calls) is linked to as many tests as Token's, but the Ctor file is used by
    test_ctor alone: test_ctor reads there, not with its three Tokens; the others with Token."""
    repo = git_repo_factory()
    repo.commit("base", SPECIFIC, branch="main")
    repo.checkout("feature", create_from="main")
    changed = {p: t.replace("assert True", "assert 1") for p, t in SPECIFIC.items() if "test_" in p}
    for path in ("pkg/token.py", "pkg/shared.py", "pkg/ctor.py"):
        changed[path] = SPECIFIC[path].replace("return", "return  1 +")
    changed["pkg/ctor.py"] = SPECIFIC["pkg/ctor.py"].replace("return helper()", "return helper(1)")
    for path, text in changed.items():
        if "test_" in path:
            changed[path] = text.replace("    Token()\n", "    Token()  # changed\n")
            changed[path] = changed[path].replace("    Ctor()\n", "    Ctor()  # changed\n")
    repo.commit("change", changed)
    groups = {frozenset(c.paths) for c in pr_cohorts(repo, "main", "feature")}
    assert frozenset({"pkg/ctor.py", "pkg/shared.py", "tests/test_ctor.py"}) in groups
    assert frozenset({"pkg/token.py", "tests/test_a.py", "tests/test_b.py", "tests/test_c.py"}) in (
        groups
    )


ENTRY = {
    "package.json": '{"name": "kit", "type": "module"}\n',
    "src/client.ts": "export class Client {\n  send(): number {\n    return 0;\n  }\n}\n",
    "src/errors.ts": "".join(
        f"export class {n} extends Error {{}}\n" for n in ("Oops", "Boom", "Fail")
    ),
    "src/index.ts": (
        "import {Client} from './client.js';\n\n"
        "const create = (): Client => new Client();\n"
        "const kit = create();\n"
        "export default kit;\n"
    ),
    "test/main.ts": "import kit from '../src/index.js';\n\nexport const sent = kit.send();\n",
}


def test_a_test_of_a_changed_entry_module_reads_with_the_changed_code_behind_it(
    git_repo_factory,
):
    """index.ts changes by re-exporting three changed errors; the test imports the module whole for its
    default `kit`, built from the changed Client: it reads with the Client. A module imported
    whole is not a use of what changed in it, and its re-exports are not uses either."""
    repo = git_repo_factory()
    repo.commit("base", ENTRY, branch="main")
    repo.checkout("feature", create_from="main")
    repo.commit(
        "change",
        {
            "src/client.ts": ENTRY["src/client.ts"].replace("return 0", "return 1"),
            "src/errors.ts": ENTRY["src/errors.ts"].replace("{}", "{\n  code = 1;\n}"),
            "src/index.ts": ENTRY["src/index.ts"]
            + "export {Oops, Boom, Fail} from './errors.js';\n",
            "test/main.ts": ENTRY["test/main.ts"].replace("kit.send()", "kit.send() + 1"),
        },
    )
    groups = {frozenset(c.paths) for c in pr_cohorts(repo, "main", "feature")}
    assert frozenset({"src/client.ts", "test/main.ts"}) in groups


SHAPES = {
    "package.json": '{"name": "kit", "type": "module"}\n',
    "src/types.ts": "export interface Progress {\n  percent: number;\n}\n",
    "src/client.ts": (
        "import type {Progress} from './types.js';\n\n"
        "export class Client {\n  send(progress?: Progress): number {\n    return 0;\n  }\n}\n"
    ),
    "src/index.ts": "import {Client} from './client.js';\n\nexport default new Client();\n",
    "test/progress.ts": (
        "import kit from '../src/index.js';\nimport type {Progress} from '../src/types.js';\n\n"
        "const progress: Progress = {percent: 0};\nexport const sent = kit.send(progress);\n"
    ),
}


def test_a_test_naming_a_changed_interface_reads_with_the_changed_code_it_runs(
    git_repo_factory,
):
    """The Progress interface and the Client change; the test names Progress on its changed
    line and runs the Client through the default instance: an interface only declares a shape
    the compiler checks, so the test reads with the Client it runs."""
    repo = git_repo_factory()
    repo.commit("base", SHAPES, branch="main")
    repo.checkout("feature", create_from="main")
    repo.commit(
        "change",
        {
            "src/types.ts": SHAPES["src/types.ts"].replace("number;", "number;\n  total: number;"),
            "src/client.ts": SHAPES["src/client.ts"].replace("return 0", "return 1"),
            "test/progress.ts": SHAPES["test/progress.ts"].replace("{percent: 0}", "{percent: 1}"),
        },
    )
    groups = {frozenset(c.paths) for c in pr_cohorts(repo, "main", "feature")}
    assert frozenset({"src/client.ts", "test/progress.ts"}) in groups


def test_an_unchanged_constructor_of_a_changed_file_stands_for_the_changed_type_it_builds(
    git_repo_factory,
):
    """api.py changes in `other`; the test calls `make`, which calls `new_engine`, an unchanged
    function beside the changed Engine it builds: reached through `make`, `new_engine` stands
    for the Engine, and the test reads with it rather than with api.py."""
    tree = {
        **THROUGH,
        "pkg/engine.py": THROUGH["pkg/engine.py"] + "\n\ndef new_engine():\n    return Engine()\n",
        "pkg/api.py": THROUGH["pkg/api.py"]
        .replace("import Engine", "import new_engine")
        .replace("return Engine()", "return new_engine()"),
    }
    repo = git_repo_factory()
    repo.commit("base", tree, branch="main")
    repo.checkout("feature", create_from="main")
    repo.commit(
        "change",
        {
            "pkg/engine.py": tree["pkg/engine.py"].replace("return 0", "return 1"),
            "pkg/api.py": tree["pkg/api.py"].replace("return 0", "return 2"),
            "tests/test_api.py": tree["tests/test_api.py"].replace("== 0", "== 1"),
        },
    )
    groups = {frozenset(c.paths) for c in pr_cohorts(repo, "main", "feature")}
    assert frozenset({"pkg/engine.py", "tests/test_api.py"}) in groups
