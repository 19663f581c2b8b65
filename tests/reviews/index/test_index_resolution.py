"""Import resolution on realistic layouts: what an import names, and what stays unresolved."""

from __future__ import annotations

from reviews.index import build_index
from reviews.index.resolution import import_resolution, unresolved_imports

TS_LIBRARY = {
    "package.json": (
        '{"name": "fetchy", "type": "module",\n'
        ' "exports": {".": {"types": "./dist/index.d.ts", "default": "./dist/index.js"},\n'
        '             "./utils/*": "./dist/utils/*.js"},\n'
        ' "devDependencies": {"ava": "^6.0.0"}}\n'
    ),
    "tsconfig.json": (
        "{\n"
        "  // comments and trailing commas, as tsconfig allows\n"
        '  "compilerOptions": {\n'
        '    "outDir": "dist", "rootDir": "source", "baseUrl": ".",\n'
        '    "paths": {"@core/*": ["source/core/*"]},\n'
        "  },\n"
        "}\n"
    ),
    "source/index.ts": (
        "export * from './core/client.js';\nexport {deepMerge as merge} from './utils/merge.js';\n"
    ),
    "source/core/client.ts": (
        "import {deepMerge} from '../utils/merge.js';\n"
        "import {LIMIT} from './constants.mjs';\n"
        "import {Options} from './types';\n"
        "import {trace} from '../utils';\n"
        "import {got} from 'got';\n"
        "import {nothing} from './nowhere.js';\n"
        "export class Client {\n"
        "  send(options: Options) { return deepMerge(options, LIMIT, trace()); }\n"
        "}\n"
        "export function create() { return new Client(); }\n"
    ),
    "source/core/constants.mts": "export function LIMIT() { return 3; }\n",
    "source/core/types.ts": "export interface Options { retry: number }\n",
    "source/utils/merge.ts": "export function deepMerge(...parts: object[]) { return parts; }\n",
    "source/utils/index.ts": "export function trace() { return 1; }\n",
    "test/client.ts": (
        "import {create, merge} from 'fetchy';\n"
        "import {deepMerge} from 'fetchy/utils/merge';\n"
        "import {Client} from '@core/client';\n"
        "import test from 'ava';\n"
        "test('sends', () => { create().send(merge(deepMerge({}))); new Client(); });\n"
    ),
}


def _targets(index, path):
    return {r.name: r.target for r in index.references if r.path == path and r.kind == "import"}


def test_esm_specifiers_name_typescript_sources_and_index_files():
    """`.js` names the `.ts` source, `.mjs` the `.mts`, no extension and a directory's index
    resolve; a dependency ('got') is not the repository's and is neither resolved nor counted."""
    index = build_index(TS_LIBRARY)
    targets = _targets(index, "source/core/client.ts")
    assert targets["../utils/merge.js#deepMerge"] == "source/utils/merge.ts:deepMerge"
    assert targets["./constants.mjs#LIMIT"] == "source/core/constants.mts:LIMIT"
    assert targets["./types#Options"] == "source/core/types.ts:Options"
    assert targets["../utils#trace"] == "source/utils/index.ts:trace"
    assert targets["got#got"] is None
    calls = {r.name: r.target for r in index.references if r.kind == "call"}
    assert calls["deepMerge"] == "source/utils/merge.ts:deepMerge"


def test_own_package_name_tsconfig_paths_and_reexports():
    """The test imports the library by its package name (exports → the build directory →
    rootDir's sources), through a tsconfig `paths` alias, and through `export * from` and
    `export {a as b} from` in the entry point: each lands on the definition."""
    index = build_index(TS_LIBRARY)
    targets = _targets(index, "test/client.ts")
    assert targets["fetchy#create"] == "source/core/client.ts:create"
    assert targets["fetchy#merge"] == "source/utils/merge.ts:deepMerge"
    assert targets["fetchy/utils/merge#deepMerge"] == "source/utils/merge.ts:deepMerge"
    assert targets["@core/client#Client"] == "source/core/client.ts:Client"
    assert targets["ava"] is None


def test_unresolved_own_imports_are_counted_never_guessed():
    """An import of the repository's own code that names no file stays unresolved and is
    listed; the rate counts own imports only (dependencies excluded)."""
    index = build_index(TS_LIBRARY)
    assert _targets(index, "source/core/client.ts")["./nowhere.js#nothing"] is None
    assert unresolved_imports(index, ["source/core/client.ts", "test/client.ts"]) == (
        "source/core/client.ts: ./nowhere.js",
    )
    rate = import_resolution(index)["js"]
    assert (rate.resolved, rate.total) == (10, 11)


def test_a_broken_manifest_resolves_nothing_through_it():
    broken = {**TS_LIBRARY, "package.json": '{"name": "fetchy", '}
    index = build_index(broken)
    assert _targets(index, "test/client.ts")["fetchy#create"] is None
    assert index.indexed and not index.failed


def test_go_module_path_from_go_mod():
    """With a go.mod, the module path maps imports to directories; another module's package of
    the same directory name is not taken for the repository's."""
    files = {
        "go.mod": "module example.com/shop\n\ngo 1.22\n",
        "internal/price/price.go": "package price\n\nfunc Total(n int) int { return n }\n",
        "cmd/api/main.go": (
            "package main\n\n"
            'import (\n\t"example.com/shop/internal/price"\n\t"github.com/x/price"\n)\n\n'
            "func main() { price.Total(1) }\n"
        ),
    }
    index = build_index(files)
    targets = _targets(index, "cmd/api/main.go")
    assert targets["example.com/shop/internal/price"] == "internal/price/price.go"
    assert targets["github.com/x/price"] is None
    assert import_resolution(index)["go"].rate == 1.0


def test_go_embedding_promotes_the_embedded_types_methods():
    """`type Server struct{ *base.Handler }`: the embedded type is a base, so `s.Log()` in a
    method of Server resolves to Handler.Log in the other package."""
    files = {
        "go.mod": "module example.com/app\n",
        "base/handler.go": (
            "package base\n\ntype Handler struct{}\n\nfunc (h *Handler) Log() {}\n"
        ),
        "server/server.go": (
            'package server\n\nimport "example.com/app/base"\n\n'
            "type Server struct {\n\t*base.Handler\n\tname string\n}\n\n"
            "func (s *Server) Run() {\n\ts.Log()\n}\n"
        ),
    }
    index = build_index(files)
    inherits = {(r.source, r.target) for r in index.references if r.kind == "inherit"}
    assert ("server/server.go:Server", "base/handler.go:Handler") in inherits
    calls = {r.name: r.target for r in index.references if r.kind == "call"}
    assert calls["self.Log"] == "base/handler.go:Handler.Log"


def test_java_imports_of_own_packages_are_counted_and_wildcards_are_not_holes():
    """`import com.shop.Cart` resolves to the class; `import com.shop.*` names a package, not a
    missing class; `import java.util.List` is the JDK's, not counted."""
    files = {
        "src/main/java/com/shop/Cart.java": (
            "package com.shop;\n\npublic class Cart {\n    public int total() { return 1; }\n}\n"
        ),
        "src/main/java/com/app/Main.java": (
            "package com.app;\n\nimport com.shop.Cart;\nimport com.shop.*;\n"
            "import java.util.List;\n\nclass Main {\n"
            "    int run() { return new Cart().total(); }\n}\n"
        ),
    }
    index = build_index(files)
    targets = _targets(index, "src/main/java/com/app/Main.java")
    assert targets["com.shop.Cart"] == "src/main/java/com/shop/Cart.java:Cart"
    rate = import_resolution(index)["java"]
    assert (rate.resolved, rate.total) == (1, 1)
    assert unresolved_imports(index, ["src/main/java/com/app/Main.java"]) == ()


def test_java_same_package_classes_resolve_across_source_roots_and_only_when_unique():
    """A test in src/test/java reaches a class of its package in src/main/java without an
    import (the declared package, not the directory, decides); a name two modules declare in
    one package stays unresolved; a class of a same-named directory in another package is not
    reached. A constant read (`Api.LIMIT`) uses its type; a local's field (`p.x`) is not
    resolved."""
    files = {
        "core/src/main/java/com/kit/Api.java": (
            "package com.kit;\n\npublic class Api {\n    public static int run() { return 1; }\n}\n"
        ),
        "core/src/main/java/com/kit/Twice.java": "package com.kit;\n\npublic class Twice {}\n",
        "extras/src/main/java/com/kit/Twice.java": "package com.kit;\n\npublic class Twice {}\n",
        "other/src/test/java/com/kit/Lone.java": "package com.other;\n\npublic class Lone {}\n",
        "core/src/test/java/com/kit/ApiTest.java": (
            "package com.kit;\n\nclass ApiTest {\n    void runs() {\n        new Api();\n"
            "        Api.run();\n        new Twice();\n        new Lone();\n"
            "        int n = Api.LIMIT + p.x;\n    }\n}\n"
        ),
    }
    index = build_index(files)
    calls = [
        (r.name, r.target)
        for r in index.references_by_path["core/src/test/java/com/kit/ApiTest.java"]
        if r.kind == "call"
    ]
    api = "core/src/main/java/com/kit/Api.java:Api"
    assert calls == [
        ("Api", api),
        ("Api.run", f"{api}.run"),
        ("Twice", None),
        ("Lone", None),
        ("Api", api),
        ("p", None),
    ]


def test_go_the_module_root_package_from_a_subpackage_and_its_external_tests():
    """`import "github.com/x/cli"` from `doc/` and from the root's `package cli_test` names the
    package at the repository's root."""
    files = {
        "go.mod": "module github.com/x/cli\n",
        "command.go": "package cli\n\nfunc Run() int { return 1 }\n",
        "doc/man.go": 'package doc\n\nimport "github.com/x/cli"\n\nfunc Gen() int { return cli.Run() }\n',
        "command_test.go": (
            'package cli_test\n\nimport "github.com/x/cli"\n\nfunc TestRun() { cli.Run() }\n'
        ),
    }
    index = build_index(files)
    assert _targets(index, "doc/man.go")["github.com/x/cli"] == "command.go"
    assert _targets(index, "command_test.go")["github.com/x/cli"] == "command.go"
    assert import_resolution(index)["go"].rate == 1.0


RUST_CRATE = {
    "Cargo.toml": '[package]\nname = "my-lib"\nversion = "0.1.0"\n',
    "src/lib.rs": (
        "mod de;\nmod error;\npub mod macros;\n\n"
        "pub use crate::error::Error;\n"
        "pub use std::error::Error as StdError;\n"
        "pub type Result<T> = core::result::Result<T, Error>;\n"
    ),
    "src/error.rs": "pub struct Error;\n\nimpl Error {\n    pub fn new() -> Self { Error }\n}\n",
    "src/de/mod.rs": (
        "use crate::Result;\nuse crate::StdError;\nuse super::error::Error;\n"
        "use self::num::parse;\nmod num;\n\npub struct Deserializer;\n"
    ),
    "src/de/num.rs": "use super::Deserializer;\n\npub fn parse() -> u8 { 1 }\n",
    "src/macros.rs": "#[macro_export]\nmacro_rules! bail {\n    () => {};\n}\n",
    "tests/test_api.rs": (
        "use my_lib::Error;\nuse my_lib::bail;\nuse my_lib::Result;\n\n"
        "#[test]\nfn builds() { let _ = Error::new(); }\n"
    ),
}


def test_rust_paths_follow_modules_reexports_aliases_macros_and_the_crate_name():
    """`crate::`, `self::`, `super::` walk the crate's module files (`de/mod.rs`, `de/num.rs`);
    an item re-exported by `pub use`, a type alias, a re-exported std trait and an exported
    macro resolve; an integration test reaches the library by the crate's name."""
    index = build_index(RUST_CRATE)
    de = _targets(index, "src/de/mod.rs")
    assert de["crate::Result"] == "src/lib.rs"  # a type alias: the module that declares it
    assert de["crate::StdError"] == "src/lib.rs"  # std's, handed on by the crate root
    assert de["super::error::Error"] == "src/error.rs:Error"
    assert de["self::num::parse"] == "src/de/num.rs:parse"
    assert _targets(index, "src/de/num.rs")["super::Deserializer"] == "src/de/mod.rs:Deserializer"
    test = _targets(index, "tests/test_api.rs")
    assert test["my_lib::Error"] == "src/error.rs:Error"  # through lib.rs's `pub use`
    assert test["my_lib::bail"] == "src/macros.rs"  # `#[macro_export]`: at the crate's root
    assert test["my_lib::Result"] == "src/lib.rs"
    assert import_resolution(index)["rust"].rate == 1.0
