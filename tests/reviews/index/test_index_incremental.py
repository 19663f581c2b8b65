"""An incremental update equals a full build of the same tree, also where a changed file
changes what an unchanged file's reference resolves to (each case checks that it does)."""

from __future__ import annotations

import dataclasses

import pytest

from reviews.index import build_index, update_index
from reviews.index.model import CodeIndex

CARGO = '[package]\nname = "demo"\nversion = "0.1.0"\n'


def _apply(files: dict[str, str], change: dict[str, str | None]) -> dict[str, str]:
    out = {**files, **{p: t for p, t in change.items() if t is not None}}
    return {p: t for p, t in out.items() if change.get(p, t) is not None}


def _target(index: CodeIndex, path: str, name: str) -> str | None:
    return next(r.target for r in index.references if r.path == path and r.name == name)


def assert_update_equals_build(
    files: dict[str, str], change: dict[str, str | None], path: str, name: str
) -> None:
    """The update equals the full build, and it changed the target of `name` in `path`, a file
    the change did not touch."""
    assert path not in change
    before = build_index(files)
    updated = update_index(before, change)
    full = build_index(_apply(files, change))
    assert updated.to_json() == full.to_json()
    assert updated.references == full.references
    assert _target(before, path, name) != _target(full, path, name)
    # From the index stored and read back, and from one with nothing known of what was read.
    stored = CodeIndex.from_json(before.to_json())
    assert update_index(stored, change).to_json() == full.to_json()
    blind = dataclasses.replace(stored, depends=None)
    assert update_index(blind, change).to_json() == full.to_json()
    # And the updated index updates on: the change undone gives the first build again.
    undo = {p: files.get(p) for p in change}
    assert update_index(updated, undo).to_json() == before.to_json()


PYTHON_CASES = {
    "a definition added where an import looked in vain": (
        {"app.py": "from lib import f\n\n\ndef main():\n    f()\n", "lib.py": "def g(): pass\n"},
        {"lib.py": "def g(): pass\n\n\ndef f(): pass\n"},
        "app.py",
        "f",
    ),
    "a definition removed": (
        {"app.py": "import lib\n\n\ndef main():\n    lib.f()\n", "lib.py": "def f(): pass\n"},
        {"lib.py": "X = 1\n"},
        "app.py",
        "lib.f",
    ),
    "a definition renamed, the old name kept as an alias": (
        {"app.py": "from lib import f\n", "lib.py": "def f(): pass\n"},
        {"lib.py": "def _f(): pass\n\n\nf = _f\n"},
        "app.py",
        "lib.f",
    ),
    "a re-export added to a package": (
        {
            "app.py": "from pkg import run\n",
            "pkg/__init__.py": "",
            "pkg/impl.py": "def run(): pass\n",
        },
        {"pkg/__init__.py": "from .impl import run\n"},
        "app.py",
        "pkg.run",
    ),
    "a name a star import brings": (
        {
            "app.py": "from helpers import *\n\n\ndef main():\n    tidy()\n",
            "helpers.py": "from core import *\n",
            "core.py": "def other(): pass\n",
        },
        {"core.py": "def other(): pass\n\n\ndef tidy(): pass\n"},
        "app.py",
        "tidy",
    ),
    "a method moved out of a base class": (
        {
            "app.py": (
                "from base import Base\n\n\nclass Child(Base):\n"
                "    def run(self):\n        self.helper()\n"
            ),
            "base.py": "class Base:\n    def helper(self): pass\n",
        },
        {"base.py": "class Base:\n    pass\n"},
        "app.py",
        "self.helper",
    ),
    "a base class appearing, its bases resolved once for two subclasses": (
        {
            "a.py": "from mid import Mid\n\n\nclass A(Mid):\n    def run(self):\n"
            "        self.helper()\n",
            "b.py": "from mid import Mid\n\n\nclass B(Mid):\n    def run(self):\n"
            "        self.helper()\n",
            "mid.py": "from base import *\n\n\nclass Mid(Base):\n    pass\n",
            "base.py": "",
        },
        {"base.py": "class Base:\n    def helper(self): pass\n"},
        "b.py",
        "self.helper",
    ),
    "a deleted module": (
        {"app.py": "from lib import f\n", "lib.py": "def f(): pass\n"},
        {"lib.py": None},
        "app.py",
        "lib.f",
    ),
    "an __init__.py added makes a src/ package": (
        {
            "app.py": "from pkg.mod import f\n",
            "src/pkg/__init__.py": "",
            "src/pkg/mod.py": "def f(): pass\n",
        },
        {"src/__init__.py": ""},
        "app.py",
        "pkg.mod.f",
    ),
    "a module added in a src/ package": (
        {"app.py": "from pkg.mod import f\n", "src/pkg/__init__.py": ""},
        {"src/pkg/mod.py": "def f(): pass\n"},
        "app.py",
        "pkg.mod.f",
    ),
}


@pytest.mark.parametrize("case", sorted(PYTHON_CASES))
def test_python_update_equals_full_build(case):
    assert_update_equals_build(*PYTHON_CASES[case])


OTHER_CASES = {
    "typescript: a name added behind an `export *` chain": (
        {
            "src/app.ts": "import { tidy } from './lib';\ntidy();\n",
            "src/lib/index.ts": "export * from './strings';\n",
            "src/lib/strings.ts": "export function other() {}\n",
        },
        {"src/lib/strings.ts": "export function other() {}\nexport function tidy() {}\n"},
        "src/app.ts",
        "./lib#tidy",
    ),
    "typescript: the package renamed in package.json": (
        {
            "web/package.json": '{"name": "web", "version": "1.0.0"}\n',
            "web/app.ts": "import { tidy } from 'web/lib';\n",
            "web/lib.ts": "export function tidy() {}\n",
        },
        {"web/package.json": '{"name": "site", "version": "1.0.0"}\n'},
        "web/app.ts",
        "web/lib#tidy",
    ),
    "typescript: a deleted module": (
        {
            "src/app.ts": "import { tidy } from './lib';\n",
            "src/lib.ts": "export function tidy() {}\n",
        },
        {"src/lib.ts": None},
        "src/app.ts",
        "./lib#tidy",
    ),
    "go: a function moved to a new file of another package": (
        {
            "go.mod": "module example.com/m\n",
            "pkg/use.go": "package pkg\n\nfunc Use() { NewThing() }\n",
            "pkg/a.go": "package pkg\n\nfunc NewThing() {}\n",
        },
        {
            "pkg/a.go": "package pkg\n\nfunc Other() {}\n",
            "sub/b.go": "package sub\n\nfunc NewThing() {}\n",
        },
        "pkg/use.go",
        "NewThing",
    ),
    "go: a function moved between two files of the package": (
        {
            "go.mod": "module example.com/m\n",
            "pkg/use.go": "package pkg\n\nfunc Use() { NewThing() }\n",
            "pkg/a.go": "package pkg\n\nfunc NewThing() {}\n",
            "pkg/c.go": "package pkg\n\nfunc Other() {}\n",
        },
        {
            "pkg/a.go": "package pkg\n\nfunc Other2() {}\n",
            "pkg/c.go": "package pkg\n\nfunc Other() {}\n\nfunc NewThing() {}\n",
        },
        "pkg/use.go",
        "NewThing",
    ),
    "java: a class moved between files of one package": (
        {
            "src/main/java/com/x/App.java": (
                "package com.x;\n\nclass App {\n  void run() { Util.help(); }\n}\n"
            ),
            "src/main/java/com/x/Util.java": (
                "package com.x;\n\nclass Util {\n  static void help() {}\n}\n"
            ),
        },
        {
            "src/main/java/com/x/Util.java": None,
            "src/main/java/com/x/Tools.java": (
                "package com.x;\n\nclass Tools {}\nclass Util {\n  static void help() {}\n}\n"
            ),
        },
        "src/main/java/com/x/App.java",
        "Util.help",
    ),
    "rust: a `pub use` changed": (
        {
            "Cargo.toml": CARGO,
            "src/lib.rs": "mod a;\nmod b;\npub use self::a::Item;\nmod user;\n",
            "src/a.rs": "pub struct Item;\n",
            "src/b.rs": "pub struct Item;\n",
            "src/user.rs": "use crate::Item;\n",
        },
        {"src/lib.rs": "mod a;\nmod b;\npub use self::b::Item;\nmod user;\n"},
        "src/user.rs",
        "crate::Item",
    ),
    "rust: a module's file chosen by `#[path]`": (
        {
            "Cargo.toml": CARGO,
            "src/lib.rs": '#[path = "platform/unix.rs"]\nmod sys;\nmod user;\n',
            "src/platform/unix.rs": "pub struct Handle;\n",
            "src/platform/windows.rs": "pub struct Handle;\n",
            "src/user.rs": "use crate::sys::Handle;\n",
        },
        {"src/lib.rs": '#[path = "platform/windows.rs"]\nmod sys;\nmod user;\n'},
        "src/user.rs",
        "crate::sys::Handle",
    ),
}


@pytest.mark.parametrize("case", sorted(OTHER_CASES))
def test_other_languages_update_equals_full_build(case):
    assert_update_equals_build(*OTHER_CASES[case])


def test_a_version_bump_in_a_manifest_links_nothing_again():
    files = {
        "web/package.json": '{"name": "web", "version": "1.0.0"}\n',
        "web/app.ts": "import { tidy } from 'web/lib';\n",
        "web/lib.ts": "export function tidy() {}\n",
    }
    before = build_index(files)
    bump = {"web/package.json": '{"name": "web", "version": "1.0.1"}\n'}
    updated = update_index(before, bump)
    assert updated == build_index({**files, **bump})
    assert updated.references[0] is before.references[0]


def test_an_unrelated_change_links_only_the_changed_file_again():
    """What makes the update cheap: an unchanged file's references are the same objects."""
    files = {
        "app.py": "from lib import f\n\n\ndef main():\n    f()\n",
        "lib.py": "def f(): pass\n",
        "other.py": "def g(): pass\n",
    }
    before = build_index(files)
    updated = update_index(before, {"other.py": "def g(): pass\n\n\ndef h(): pass\n"})
    assert updated == build_index({**files, "other.py": "def g(): pass\n\n\ndef h(): pass\n"})
    kept = [r for r in updated.references if r.path == "app.py"]
    assert all(any(k is r for r in before.references) for k in kept)
