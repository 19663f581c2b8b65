"""The code index on Python: definitions, resolved references, limits, JSON, incremental update."""

from __future__ import annotations

import json

from reviews.domain.indexed_files import MAX_FILE_BYTES
from reviews.index import (
    CodeIndex,
    build_index,
    changed_texts,
    files_at_commit,
    files_in_directory,
    parse_file,
    update_index,
)
from reviews.index.resolution import import_resolution
from reviews.sources.git_local import LocalGitSource
from tests.reviews.index.index_helpers import edges_of

PACKAGE = {
    "pkg/__init__.py": "from .impl import exported\n",
    "pkg/impl.py": "def exported():\n    return 1\n",
    "pkg/util.py": (
        "import os\n"
        "\n"
        "\n"
        "def helper(x):\n"
        "    return os.path.join(x)\n"
        "\n"
        "\n"
        "class Base:\n"
        "    def hook(self):\n"
        "        return 0\n"
        "\n"
        "    def run(self):\n"
        "        return self.hook()\n"
    ),
    "pkg/sub/__init__.py": "",
    "pkg/sub/child.py": (
        "from ..util import Base, helper\n"
        "from pkg import exported\n"
        "import pkg.util\n"
        "from . import sibling as sib\n"
        "\n"
        "\n"
        "class Child(Base):\n"
        "    @staticmethod\n"
        "    def make():\n"
        "        return helper(1)\n"
        "\n"
        "    def go(self):\n"
        "        def inner():\n"
        "            return pkg.util.helper(2)\n"
        "        return self.run() + super().hook() + inner() + exported() + sib.twice()\n"
    ),
    "pkg/sub/sibling.py": "def twice():\n    return 2\n",
    "src/lib/__init__.py": "",
    "src/lib/core.py": "from pkg.util import helper\n\n\ndef api():\n    return helper(3)\n",
    "scripts/run.py": "from lib.core import api\nimport tool\n\n\ndef main():\n    return api() + tool.go()\n",
    "scripts/tool.py": "def go():\n    return 0\n",
}


def test_it_records_definitions_with_qualified_names_and_spans():
    """Modules, classes, methods and nested functions get dotted names and 1-based spans;
    decorators belong to the span of what they decorate."""
    index = build_index(PACKAGE)
    defs = index.definitions
    assert defs["pkg.sub.child"].kind == "module"
    assert defs["pkg"].path == "pkg/__init__.py"
    child = defs["pkg.sub.child.Child"]
    assert (child.kind, child.start_line, child.end_line) == ("class", 7, 15)
    make = defs["pkg.sub.child.Child.make"]
    assert (make.kind, make.start_line, make.end_line) == ("method", 8, 10)
    assert defs["pkg.sub.child.Child.go.inner"].kind == "function"
    assert defs["pkg.sub.child.Child.go.inner"].parent == "pkg.sub.child.Child.go"


def test_it_resolves_imports_calls_self_super_and_bases():
    """Absolute, relative and aliased imports, re-exports, `self.`/`super().` through bases,
    attribute chains on imported modules and base classes all resolve to definitions."""
    index = build_index(PACKAGE)
    calls = edges_of(index, "call")
    assert ("pkg.sub.child.Child.make", "pkg.util.helper") in calls
    assert ("pkg.sub.child.Child.go.inner", "pkg.util.helper") in calls
    assert ("pkg.sub.child.Child.go", "pkg.util.Base.run") in calls
    assert ("pkg.sub.child.Child.go", "pkg.util.Base.hook") in calls
    assert ("pkg.sub.child.Child.go", "pkg.sub.child.Child.go.inner") in calls
    # `from pkg import exported` goes through pkg/__init__.py's re-export to the definition.
    assert ("pkg.sub.child.Child.go", "pkg.impl.exported") in calls
    assert ("pkg.sub.child.Child.go", "pkg.sub.sibling.twice") in calls
    assert ("pkg.util.Base.run", "pkg.util.Base.hook") in calls
    assert ("pkg.sub.child.Child", "pkg.util.Base") in edges_of(index, "inherit")
    imports = edges_of(index, "import")
    assert ("pkg.sub.child", "pkg.util.Base") in imports
    assert ("pkg.sub.child", "pkg.util") in imports
    # src/ layout: `lib.core` is the import name of src/lib/core.py; scripts import siblings.
    assert ("scripts.run.main", "src.lib.core.api") in calls
    assert ("scripts.run.main", "scripts.tool.go") in calls
    # The standard library is outside the repository: left unresolved, not guessed.
    helper_calls = [r for r in index.references if r.source == "pkg.util.helper"]
    assert [r.target for r in helper_calls] == [None]


def test_it_skips_vendored_huge_and_binary_files():
    """Limits are documented in reviews.domain.indexed_files and recorded per path."""
    files = {
        "app.py": "def f():\n    return 1\n",
        "node_modules/lib/index.js": "function x() {}\n",
        "vendor/dep.py": "def g():\n    pass\n",
        "static/app.min.js": "function y(){}",
        "big.py": "x = 1\n" * (MAX_FILE_BYTES // 5),
        "blob.py": "abc\x00def",
        "README.md": "# not code\n",
    }
    index = build_index(files)
    assert set(index.files) == {"app.py"}
    assert index.skipped == {
        "node_modules/lib/index.js": "vendored",
        "vendor/dep.py": "vendored",
        "static/app.min.js": "minified",
        "big.py": "huge",
        "blob.py": "binary",
    }
    assert index.indexed


def test_it_applies_the_failure_threshold_exactly():
    """20% failures still index; one more file failing crosses the threshold."""
    good = {f"m{i}.py": "def ok():\n    return 1\n" for i in range(8)}
    bad = {f"old{i}.py": 'print "python 2"\n' for i in range(3)}
    at_limit = build_index({**good, **dict(list(bad.items())[:2])})  # 2 of 10 = 20%
    assert at_limit.indexed
    over = build_index({**good, **bad})  # 3 of 11 ≈ 27%
    assert not over.indexed
    assert over.reason == "3 of 11 source files failed to parse (more than 20%)"
    nothing = build_index({"README.md": "hi", "data.csv": "1,2"})
    assert not nothing.indexed
    assert nothing.reason is not None and nothing.reason.startswith("no supported source files")


def test_it_round_trips_through_json():
    """to_json → JSON text → from_json gives an equal index, resolved targets included."""
    index = build_index(PACKAGE)
    restored = CodeIndex.from_json(json.loads(json.dumps(index.to_json())))
    assert restored.to_json() == index.to_json()
    assert restored.references == index.references
    assert restored.definitions == index.definitions
    assert restored.stats() == index.stats()


def test_it_updates_incrementally_parsing_only_changed_files():
    """update_index parses only files whose text changed, re-resolves every reference, and
    yields exactly what a full build of the new tree yields."""
    parsed: list[str] = []

    def counting(path: str, text: str):
        parsed.append(path)
        return parse_file(path, text)

    index = build_index(PACKAGE, parser=counting)
    assert len(parsed) == len(PACKAGE)
    parsed.clear()
    changed: dict[str, str | None] = {
        # helper renamed: callers in unchanged files must lose their target.
        "pkg/util.py": PACKAGE["pkg/util.py"].replace("def helper(", "def assist("),
        "pkg/sub/sibling.py": None,  # deleted
        "pkg/new.py": "from pkg.util import assist\n\n\ndef fresh():\n    return assist(0)\n",
        "pkg/impl.py": PACKAGE["pkg/impl.py"],  # "changed" to the same text: not parsed
    }
    updated = update_index(index, changed, parser=counting)
    assert sorted(parsed) == ["pkg/new.py", "pkg/util.py"]

    new_tree = {p: t for p, t in {**PACKAGE, **changed}.items() if t is not None}
    assert updated.to_json() == build_index(new_tree).to_json()
    calls = edges_of(updated, "call")
    assert ("pkg.new.fresh", "pkg.util.assist") in calls
    assert not any(target == "pkg.util.helper" for _, target in calls)
    assert "pkg.sub.sibling.twice" not in updated.definitions


def test_it_updates_from_a_git_diff_like_a_full_build_at_head(git_repo_factory):
    """changed_texts(files) + update_index(base index) equals indexing the head commit."""
    repo = git_repo_factory()
    repo.commit("base", PACKAGE)
    repo.checkout("feature", create_from="main")
    repo.rename("pkg/sub/sibling.py", "pkg/sub/brother.py")
    repo.commit(
        "edit",
        {
            "pkg/util.py": PACKAGE["pkg/util.py"] + "\n\ndef more():\n    return helper(0)\n",
            "pkg/sub/child.py": PACKAGE["pkg/sub/child.py"].replace("sibling", "brother"),
            "pkg/impl.py": None,
        },
    )
    source = LocalGitSource(repo.path)
    diff = source.diff("main", "feature")
    base = build_index(files_at_commit(source, diff.merge_base_sha))
    updated = update_index(base, changed_texts(source, diff.head_sha, diff.files))
    assert updated.to_json() == build_index(files_at_commit(source, diff.head_sha)).to_json()
    assert "pkg.sub.brother.twice" in updated.definitions
    assert "pkg.impl" not in updated.definitions


def test_it_reads_a_directory_without_walking_vendored_trees(tmp_path):
    """files_in_directory returns supported files by relative path and skips vendored dirs."""
    (tmp_path / "node_modules" / "x").mkdir(parents=True)
    (tmp_path / "node_modules" / "x" / "i.js").write_text("function a() {}\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text("def f():\n    return 1\n")
    (tmp_path / "notes.txt").write_text("hello\n")
    assert files_in_directory(tmp_path) == {"src/m.py": "def f():\n    return 1\n"}


def test_module_constants_and_settings_objects_resolve_to_their_module():
    """`from pkg.settings import api_settings` names a value the module assigns, and
    `from pkg.compat import urlparse` one it imports from outside and hands on: each import
    resolves to that module, the own-import rate counts it, and an attribute of the value
    (`api_settings.reload()`) is not followed to a same-named function of the module."""
    files = {
        "pkg/__init__.py": "from .version import VERSION as __version__\n",
        "pkg/version.py": "VERSION, BUILD = '1.0', 7\n",
        "pkg/compat.py": "from urllib.parse import urlparse\n",
        "pkg/settings.py": (
            "from typing import Final\n\n"
            "TIMEOUT: Final = 5\n"
            "api_settings = object()\n\n\n"
            "def reload():\n    return 1\n"
        ),
        "pkg/client.py": (
            "from pkg.settings import TIMEOUT, api_settings\n"
            "from pkg.version import BUILD\n"
            "from pkg import __version__\n"
            "from pkg.settings import MISSING\n"
            "from pkg.compat import urlparse\n\n\n"
            "def call():\n    api_settings.reload()\n    return TIMEOUT\n"
        ),
    }
    index = build_index(files)
    imports = {
        r.name: r.target
        for r in index.references
        if r.kind == "import" and r.path == "pkg/client.py"
    }
    assert imports["pkg.settings.TIMEOUT"] == "pkg.settings"
    assert imports["pkg.settings.api_settings"] == "pkg.settings"
    assert imports["pkg.version.BUILD"] == "pkg.version"  # a tuple target
    assert imports["pkg.__version__"] == "pkg.version"  # re-exported under another name
    assert imports["pkg.settings.MISSING"] is None  # never assigned: unresolved, not guessed
    # Imported by the module from the standard library and handed on: defined there, for us.
    assert imports["pkg.compat.urlparse"] == "pkg.compat"
    calls = [r for r in index.references if r.kind == "call" and r.source == "pkg.client.call"]
    assert [r.target for r in calls] == [None]
    # Six of seven own imports (pkg/__init__.py's of VERSION too); MISSING is the hole.
    rate = import_resolution(index)["python"]
    assert (rate.resolved, rate.total) == (6, 7)
