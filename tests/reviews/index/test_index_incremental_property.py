"""Random edit sequences on a small generated repository: after each step the incrementally
updated index (updated from the previous update, never rebuilt) equals a full build."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reviews.index import build_index, update_index

JAVA = "src/main/java/com/x/"
APP = "from lib import f\nfrom pkg import Base\n\n\nclass C(Base):\n    def run(self):\n"
# Every path's possible contents; None: the file is deleted (or not there yet).
VARIANTS: dict[str, list[str | None]] = {
    "app.py": [
        APP + "        self.m()\n        f()\n",
        "from pkg import *\n\n\ndef main():\n    f()\n    Base().m()\n",
        "import lib\nimport pkg.impl\n\n\ndef main():\n    lib.f()\n    pkg.impl.f()\n    pkg.f()\n",
    ],
    "lib.py": [
        "def f(): pass\n",
        "class f:\n    def m(self): pass\n",
        "from pkg import f\n",
        "from pkg.impl import *\n",
        "f = 1\n",
        "import os\n\nf = os.path\n",
        "class Base:\n    def m(self): pass\n\n\ndef f(): pass\n",
        None,
    ],
    "pkg/__init__.py": [
        "",
        "from .impl import f\n",
        "from .impl import *\n",
        "from .more import Base\n",
        None,
    ],
    "pkg/impl.py": [
        "def f(): pass\n",
        "class Base:\n    def m(self): pass\n",
        "from lib import *\n",
        "from ..lib import f\n",
        "from .more import Base as f\n",
        None,
    ],
    "pkg/more.py": [
        "class Base:\n    pass\n",
        "from lib import Base\n",
        "class Base(object):\n    def m(self): pass\n",
        None,
    ],
    "helpers.py": [
        "from app import *\nfrom tool.run import go\n\n\ndef h():\n    go()\n    f()\n    C().run()\n",
        "from pkg.more import *\n\n\nclass D(Base):\n    def n(self):\n        super().m()\n",
        None,
    ],
    "src/tool/__init__.py": ["", None],
    "src/tool/run.py": [
        "def go(): pass\n",
        "from lib import f as go\n",
        "import run\n\ngo = run\n",
        None,
    ],
    "src/tool/run2.py": ["import run\n\n\ndef x():\n    run.go()\n", None],
    "web/app.ts": [
        "import { tidy } from 'web/lib';\ntidy();\n",
        "import { tidy } from './index';\ntidy();\n",
        "import * as lib from './lib';\nlib.tidy();\n",
    ],
    "web/index.ts": ["export * from './lib';\n", "export { tidy } from './lib';\n", None],
    "web/lib.ts": ["export function tidy() {}\n", "export const other = 1;\n", None],
    "go.mod": ["module example.com/m\n", None, "module example.com/m\n\ngo 1.22\n"],
    "web/package.json": ['{"name": "web"}\n', '{"name": "web", "version": "2.0.0"}\n', None],
    "pkg/a.go": [
        "package pkg\n\nfunc NewThing() {}\n",
        "package pkg\n\ntype Thing struct{}\n\nfunc (t Thing) Run() {}\n",
        "package pkg\n\nfunc Other() {}\n",
    ],
    "pkg/b.go": [
        "package pkg\n\nfunc Use() { NewThing(); Thing{}.Run() }\n",
        "package pkg\n\nfunc NewThing() {}\n\nfunc Use() { Other() }\n",
    ],
    "cmd/main.go": [
        'package main\n\nimport "example.com/m/pkg"\n\nfunc main() { pkg.NewThing() }\n',
        None,
    ],
    JAVA + "App.java": [
        "package com.x;\n\nclass App extends Base {\n  void run() { Util.help(); helper(); }\n}\n"
    ],
    JAVA + "Util.java": [
        "package com.x;\n\nclass Util {\n  static void help() {}\n}\n",
        "package com.x;\n\nclass Base {\n  void helper() {}\n}\n",
        "package com.y;\n\nclass Util {\n  static void help() {}\n}\n",
        None,
    ],
    JAVA + "Base.java": [
        "package com.x;\n\nclass Base {\n  void helper() {}\n}\n",
        "package com.x;\n\nclass Util {\n  static void help() {}\n}\n",
        None,
    ],
    "Cargo.toml": ['[package]\nname = "demo"\nversion = "0.1.0"\n'],
    "src/lib.rs": [
        "mod a;\nmod b;\npub use self::a::Item;\nmod user;\n",
        "mod a;\nmod b;\npub use self::b::Item;\nmod user;\n",
        "mod a;\nmod b;\nmod user;\npub use self::a::*;\n",
    ],
    "src/a.rs": ["pub struct Item;\n", "pub use crate::b::Item;\n", "pub fn other() {}\n"],
    "src/b.rs": ["pub struct Item;\n", "pub fn other() {}\n"],
    "src/user.rs": ["use crate::Item;\n\nfn f() {\n    Item::new();\n}\n"],
}
PATHS = sorted(VARIANTS)

edits = st.dictionaries(
    st.sampled_from(PATHS), st.integers(min_value=0, max_value=7), min_size=1, max_size=3
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    start=st.lists(st.integers(min_value=0, max_value=7), min_size=len(PATHS), max_size=len(PATHS)),
    steps=st.lists(edits, min_size=1, max_size=6),
)
def test_random_edit_sequences_update_to_the_full_build(start, steps):
    files = {p: VARIANTS[p][n % len(VARIANTS[p])] for p, n in zip(PATHS, start, strict=True)}
    current = {p: t for p, t in files.items() if t is not None}
    index = build_index(current)
    for step in steps:
        change = {p: VARIANTS[p][n % len(VARIANTS[p])] for p, n in step.items()}
        current = {**current, **{p: t for p, t in change.items() if t is not None}}
        current = {p: t for p, t in current.items() if change.get(p, t) is not None}
        index = update_index(index, change)
        full = build_index(current)
        assert index.to_json() == full.to_json()
        assert index.references == full.references
