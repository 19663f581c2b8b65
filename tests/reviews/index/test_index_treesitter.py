"""The code index on JavaScript/TypeScript, Go, Java and Rust (tree-sitter, name-based)."""

from __future__ import annotations

from reviews.index import build_index
from tests.reviews.index.index_helpers import edges_of

WEB = {
    "web/util.ts": (
        "export function formatName(n: string): string {\n"
        "  return n.trim();\n"
        "}\n"
        "\n"
        "export interface Named { name(): string }\n"
        "\n"
        "export class Base {\n"
        "  greet() { return 'hi'; }\n"
        "}\n"
    ),
    "web/app.tsx": (
        "import { formatName, Base } from './util';\n"
        "import * as util from './util';\n"
        "\n"
        "export class Widget extends Base implements util.Named {\n"
        "  render() {\n"
        "    return formatName(this.title()) + util.formatName(this.greet());\n"
        "  }\n"
        "  title() { return 'x'; }\n"
        "  name() { return 'w'; }\n"
        "}\n"
        "\n"
        "export const Page = () => <Widget />;\n"
    ),
    "web/legacy.js": (
        "const { formatName } = require('./util');\n"
        "function show() { return formatName('a'); }\n"
        "module.exports = { show };\n"
    ),
}

GO = {
    "svc/util/strings.go": "package util\n\nfunc Clean(s string) string {\n\treturn s\n}\n",
    "svc/main.go": (
        "package main\n"
        "\n"
        'import "example.com/svc/util"\n'
        "\n"
        "type Server struct{ prefix string }\n"
        "\n"
        "func (s *Server) Handle() string {\n"
        "\treturn s.name()\n"
        "}\n"
        "\n"
        "func (s *Server) name() string {\n"
        '\treturn util.Clean(s.prefix + "x")\n'
        "}\n"
        "\n"
        "func main() {\n"
        "\tsrv := &Server{}\n"
        "\tsrv.Handle()\n"
        "\thelper()\n"
        "}\n"
    ),
    "svc/helper.go": "package main\n\nfunc helper() {}\n",
}


def test_it_indexes_typescript_and_javascript_definitions_and_calls():
    """Functions, classes, methods, interfaces and arrow components are definitions; named,
    namespace and require() imports, this-calls, JSX and inheritance resolve by name."""
    index = build_index(WEB)
    defs = index.definitions
    assert defs["web/util.ts:formatName"].kind == "function"
    assert (defs["web/util.ts:formatName"].start_line, defs["web/util.ts:formatName"].end_line) == (
        1,
        3,
    )
    assert defs["web/util.ts:Named"].kind == "interface"
    assert defs["web/app.tsx:Widget.render"].kind == "method"
    assert defs["web/app.tsx:Page"].kind == "function"
    calls = edges_of(index, "call")
    assert ("web/app.tsx:Widget.render", "web/util.ts:formatName") in calls
    assert ("web/app.tsx:Widget.render", "web/app.tsx:Widget.title") in calls
    assert ("web/app.tsx:Widget.render", "web/util.ts:Base.greet") in calls  # via the base class
    assert ("web/app.tsx:Page", "web/app.tsx:Widget") in calls  # <Widget />
    assert ("web/legacy.js:show", "web/util.ts:formatName") in calls
    inherits = edges_of(index, "inherit")
    assert ("web/app.tsx:Widget", "web/util.ts:Base") in inherits
    assert ("web/app.tsx", "web/util.ts:formatName") in edges_of(index, "import")
    assert index.failed == {}


def test_it_indexes_go_packages_receivers_and_imports():
    """Go: receiver methods are named after their type; calls through the receiver, through an
    imported package and to a function in another file of the same package resolve."""
    index = build_index(GO)
    defs = index.definitions
    assert defs["svc/main.go:Server"].kind == "class"
    assert defs["svc/main.go:Server.Handle"].kind == "method"
    assert defs["svc/main.go:Server.Handle"].parent == "svc/main.go:Server"
    calls = edges_of(index, "call")
    assert ("svc/main.go:Server.Handle", "svc/main.go:Server.name") in calls
    assert ("svc/main.go:Server.name", "svc/util/strings.go:Clean") in calls
    assert ("svc/main.go:main", "svc/helper.go:helper") in calls
    assert ("svc/main.go:main", "svc/main.go:Server") in calls  # &Server{}
    assert ("svc/main.go", "svc/util/strings.go") in edges_of(index, "import")


def test_it_indexes_java_and_rust():
    """Java classes/methods with imports and inheritance; Rust items, impl methods, `use`."""
    index = build_index(
        {
            "src/main/java/com/acme/Util.java": (
                "package com.acme;\n"
                "public class Util {\n"
                "  public static int twice(int x) { return x * 2; }\n"
                "}\n"
            ),
            "src/main/java/com/acme/app/App.java": (
                "package com.acme.app;\n"
                "import com.acme.Util;\n"
                "public class App extends Base {\n"
                "  int run() { return Util.twice(helper()); }\n"
                "  int helper() { return this.base(); }\n"
                "}\n"
            ),
            "src/main/java/com/acme/app/Base.java": (
                "package com.acme.app;\nclass Base {\n  int base() { return 1; }\n}\n"
            ),
            "crate/src/util.rs": "pub fn helper() -> u32 {\n    1\n}\n",
            "crate/src/main.rs": (
                "mod util;\n"
                "use crate::util::helper;\n"
                "struct S;\n"
                "impl S {\n"
                "    fn new() -> S { S }\n"
                "    fn go(&self) -> u32 { self.step() + helper() }\n"
                "    fn step(&self) -> u32 { 0 }\n"
                "}\n"
                "fn main() { let s = S::new(); s.go(); }\n"
            ),
        }
    )
    calls = edges_of(index, "call")
    app = "src/main/java/com/acme/app/App.java"
    assert (f"{app}:App.run", "src/main/java/com/acme/Util.java:Util.twice") in calls
    assert (f"{app}:App.run", f"{app}:App.helper") in calls
    assert (f"{app}:App.helper", "src/main/java/com/acme/app/Base.java:Base.base") in calls
    assert (f"{app}:App", "src/main/java/com/acme/app/Base.java:Base") in edges_of(index, "inherit")
    assert index.definitions["crate/src/main.rs:S.go"].kind == "method"
    assert ("crate/src/main.rs:S.go", "crate/src/main.rs:S.step") in calls
    assert ("crate/src/main.rs:S.go", "crate/src/util.rs:helper") in calls
    assert ("crate/src/main.rs:main", "crate/src/main.rs:S.new") in calls
