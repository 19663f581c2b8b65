"""apiContract rules drawn from reading the axis on published releases (docs/api-contract.md):
each test is a shape found in a real package's release, reduced to a few lines."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.types import AxisResult
from reviews.index.axes_compute import compute_api_contract
from reviews.index.js_packages import Package, entry_files, public_modules, read_packages


def _breaks(base: dict[str, str], head: dict[str, str]) -> tuple[AxisResult, list[str]]:
    result, details = compute_api_contract(base_files=base, head_files=head)
    return result, sorted(c["where"] for c in details["changes"] if c["severity"] == "breaking")


# -- Go: aliases and named function types are what they stand for ----------------------------

GO_BEFORE = """package cobra
type ShellCompDirective int
type Command struct {
	ValidArgsFunction func(cmd *Command, args []string, toComplete string) ([]string, ShellCompDirective)
}
func (c *Command) RegisterFlagCompletionFunc(name string, f func(cmd *Command, args []string, toComplete string) ([]string, ShellCompDirective)) error { return nil }
func NoFileCompletions(cmd *Command, args []string, toComplete string) ([]string, ShellCompDirective) { return nil, 0 }
"""

GO_AFTER = """package cobra
type ShellCompDirective int
// Completion is one suggestion.
type Completion = string
type CompletionFunc = func(cmd *Command, args []string, toComplete string) ([]Completion, ShellCompDirective)
type Command struct {
	// ValidArgsFunction is documented now.
	ValidArgsFunction CompletionFunc
}
func (c *Command) RegisterFlagCompletionFunc(name string, f CompletionFunc) error { return nil }
func NoFileCompletions(c *Command, a []string, prefix string) ([]Completion, ShellCompDirective) { return nil, 0 }
"""


def test_a_go_alias_and_a_named_function_type_are_the_types_they_stand_for():
    base = {"go.mod": "module example.com/cobra\n", "cobra/command.go": GO_BEFORE}
    head = {**base, "cobra/command.go": GO_AFTER}
    assert _breaks(base, head) == (AxisResult.PASS, [])
    # A named (not alias) function type with the same underlying signature is accepted too.
    named = GO_AFTER.replace("type CompletionFunc = func", "type CompletionFunc func")
    assert _breaks(base, {**base, "cobra/command.go": named}) == (AxisResult.PASS, [])
    # The alias pointing elsewhere is a change to every signature that uses it.
    other = GO_AFTER.replace("type Completion = string", "type Completion = int")
    result, breaks = _breaks(base, {**base, "cobra/command.go": other})
    assert result is AxisResult.FAIL
    assert "cobra:NoFileCompletions" in breaks and "cobra:Command.ValidArgsFunction" in breaks


@given(
    st.sampled_from(["string", "int", "[]byte", "map[string]int", "*Node"]),
    st.sampled_from(["Value", "Key", "Payload"]),
)
def test_any_signature_written_through_an_alias_equals_the_one_written_out(target, alias):
    written_out = f"package p\ntype Node struct{{}}\nfunc Get(k {target}) ([]{target}, error) {{ return nil, nil }}\n"
    through = (
        f"package p\ntype Node struct{{}}\ntype {alias} = {target}\n"
        f"func Get(k {alias}) ([]{alias}, error) {{ return nil, nil }}\n"
    )
    base = {"p/p.go": written_out}
    assert _breaks(base, {"p/p.go": through}) == (AxisResult.PASS, [])


# -- TypeScript / JavaScript: enums and what a package's users can reach -----------------------


def test_a_member_added_to_an_enum_is_an_addition_and_one_removed_is_a_break():
    base = {"index.d.ts": "export enum Status { Ok = 200, NotFound = 404 }\n"}
    added = {
        "index.d.ts": "export enum Status { Ok = 200, ContentTooLarge = 413, NotFound = 404 }\n"
    }
    result, details = compute_api_contract(base_files=base, head_files=added)
    assert result is AxisResult.PASS
    assert [c["message"] for c in details["changes"]] == ["enum member(s) added: ContentTooLarge"]
    removed = {"index.d.ts": "export enum Status { Ok = 200 }\n"}
    assert _breaks(base, removed) == (AxisResult.FAIL, ["index.d.ts:Status"])
    renumbered = {"index.d.ts": "export enum Status { Ok = 201, NotFound = 404 }\n"}
    assert _breaks(base, renumbered)[0] is AxisResult.FAIL


PACKAGE = json.dumps(
    {
        "name": "dates",
        "version": "4.2.0",
        "exports": {".": {"types": "./dist/index.d.ts", "import": "./dist/index.js"}},
    }
)


def _dates(helper: str) -> dict[str, str]:
    return {
        "package.json": PACKAGE,
        "src/index.ts": "export * from './format.js';\nexport { parse } from './parse';\n",
        "src/format.ts": "import { tz } from './_lib/tz';\nexport function format(d: Date): string { return tz(d); }\n",
        "src/parse.ts": "export function parse(s: string): Date { return new Date(s); }\nexport function internalParse(s: string): void {}\n",
        "src/_lib/tz.ts": helper,
    }


def test_only_modules_reached_from_the_package_entry_points_are_api():
    base = _dates(
        "export function tz(d: Date): string { return ''; }\nexport function dst(): void {}\n"
    )
    # The helper module no entry re-exports loses an export: nobody outside could import it.
    head = _dates("export function tz(d: Date): string { return ''; }\n")
    assert _breaks(base, head) == (AxisResult.PASS, [])
    # A module re-exported from the entry (`export *`, build output mapped to src/) is API.
    changed = {**head, "src/format.ts": head["src/format.ts"].replace("d: Date", "d: number")}
    assert _breaks(head, changed) == (AxisResult.FAIL, ["src/format.ts:format"])
    # `export { parse } from` reaches the module: everything it exports is counted.
    dropped = {
        **head,
        "src/parse.ts": "export function parse(s: string): Date { return new Date(s); }\n",
    }
    assert _breaks(head, dropped) == (AxisResult.FAIL, ["src/parse.ts:internalParse"])


def test_a_private_package_of_a_monorepo_is_nobodys_api():
    docs = {
        "package.json": json.dumps({"private": True, "workspaces": ["packages/*"]}),
        "packages/docs/package.json": json.dumps({"name": "docs", "private": True}),
        "packages/docs/app/not-found.tsx": "export default function NotFound() { return null; }\n",
        "packages/lib/package.json": json.dumps(
            {"name": "lib", "version": "1.0.0", "main": "index.js"}
        ),
        "packages/lib/index.js": "export function run(a) {}\n",
    }
    gone = {k: v for k, v in docs.items() if k != "packages/docs/app/not-found.tsx"}
    assert _breaks(docs, gone) == (AxisResult.PASS, [])
    narrowed = {**docs, "packages/lib/index.js": "export function go(a) {}\n"}
    assert _breaks(docs, narrowed)[1] == ["packages/lib/index.js:run"]


def test_entry_points_read_conditions_patterns_and_build_output():
    files = {"dist/a.js": "", "src/b.ts": "", "lib/c/d.mjs": "", "other.js": ""}
    manifest = {
        "main": "./dist/a.js",
        "types": "./build/b.d.ts",
        "exports": {"./c/*": {"import": "./lib/c/*.mjs"}, "./package.json": "./package.json"},
    }
    [package] = read_packages({"package.json": json.dumps(manifest)}).values()
    assert entry_files(package, set(files)) == {"dist/a.js", "src/b.ts", "lib/c/d.mjs"}
    # No entry field and no index file: a layout the rule cannot read keeps every module.
    loose = Package(root="", private=False, entries=())
    assert public_modules(["x.ts", "y.ts"], {}, {"": loose}) == {"x.ts", "y.ts"}


# -- Python: what griffe reports that no caller can notice ------------------------------------


def _py(**modules: str) -> dict[str, str]:
    return {f"pkg/{name}.py": text for name, text in modules.items()}


def test_python_rules_for_protocol_methods_inherited_names_and_plumbing():
    base = _py(
        __init__='__version__ = "2.1"\n',
        errors=(
            "import logging\nfrom typing import ClassVar, TypeVar\nlog = logging.getLogger(__name__)\n"
            "T = TypeVar('T')\n"
            "class Frozen(AttributeError):\n    args: ClassVar[tuple] = ('frozen',)\n"
            "class Undefined:\n    def __getattr__(self, _):\n        return self\n"
            "    __getitem__ = __getattr__\n"
            "class Renderer:\n    def __init__(self, a, b=1):\n        pass\n"
        ),
    )
    head = _py(
        __init__="def __getattr__(name):\n    if name == '__version__':\n        return '2.2'\n    raise AttributeError(name)\n",
        errors=(
            "class Frozen(AttributeError):\n    def __init__(self):\n        super().__init__('frozen')\n"
            "class Undefined:\n    def __getattr__(self, name):\n        return self\n"
            "    def __getitem__(self, name):\n        return self\n"
            "class Renderer:\n    def __init__(self, b=1, a=None):\n        pass\n"
        ),
    )
    result, breaks = _breaks(base, head)
    # Only the constructor's moved positional parameter is a caller's problem.
    assert result is AxisResult.FAIL
    assert set(breaks) == {"pkg.errors.Renderer.__init__"}


def test_a_private_object_re_exported_under_a_public_name_is_api_by_that_name():
    base = {
        "pkg/__init__.py": "from ._client import Client\n__all__ = ['Client']\n",
        "pkg/_client.py": "class Client:\n    def __init__(self, proxies=None, proxy=None):\n        pass\n"
        "    def _helper(self, x):\n        pass\n",
    }
    head = {
        **base,
        "pkg/_client.py": "class Client:\n    def __init__(self, proxy=None):\n        pass\n"
        "    def _helper(self):\n        pass\n",
    }
    result, breaks = _breaks(base, head)
    assert result is AxisResult.FAIL and set(breaks) == {"pkg.Client.__init__"}


def test_packages_that_re_export_each_other_are_read_together():
    base = {
        "src/attr/__init__.py": "def field(default=None):\n    return default\n",
        "src/attrs/__init__.py": "from attr import field\n__all__ = ['field']\n",
    }
    head = {
        **base,
        "src/attr/__init__.py": "def field(default=None, alias=None):\n    return default\n",
    }
    result, details = compute_api_contract(base_files=base, head_files=head)
    assert details["errors"] == [] and result is AxisResult.PASS, details


# -- the repository's own word ----------------------------------------------------------------


def test_a_repository_declares_what_is_internal_at_its_base_commit():
    base = {
        "black/__init__.py": "def format_str(src, mode):\n    return src\n",
        "black/linegen.py": "def visit_paramspec(node):\n    pass\n",
        "cmd/tool/main.go": "package tool\nfunc Run(a int) {}\n",
    }
    head = {
        "black/__init__.py": base["black/__init__.py"],
        "black/linegen.py": "\n",
        "cmd/tool/main.go": "package tool\nfunc Run(a, b int) {}\n",
    }
    assert _breaks(base, head)[0] is AxisResult.FAIL
    config = '[api]\ninternal = ["black.linegen", "cmd/*"]\n'
    result, details = compute_api_contract(
        base_files={**base, ".quorum.toml": config}, head_files={**head, ".quorum.toml": config}
    )
    assert result is AxisResult.PASS, details
    assert {c["severity"] for c in details["changes"]} == {"internal"}
    assert details["internal_by_repository"] == ["black.linegen", "cmd/*"]
    # Declared only by the head (the change itself): it does not count.
    assert _breaks(base, {**head, ".quorum.toml": config})[0] is AxisResult.FAIL
    # A broken file declares nothing and says so.
    result, details = compute_api_contract(
        base_files={**base, ".quorum.toml": "[api\n"}, head_files=head
    )
    assert result is AxisResult.FAIL and "does not parse" in details["config_problem"]


# -- Rust and Java: what their users can reach ------------------------------------------------

CARGO = '[package]\nname = "errs"\nversion = "1.0.3"\n'
LIB = """//! Errors.
pub mod fmt;
mod imp;
pub use crate::imp::Chain;
pub(crate) fn helper() {}

/// The error.
pub struct Error { inner: Box<dyn std::error::Error> }

impl Error {
    pub fn context<C: Display>(self, context: C) -> Self where C: Send { self }
    fn private(&self) {}
}

pub enum Kind { Io, Parse }

#[non_exhaustive]
pub enum Flavor { Plain }

pub trait Context<T> { fn context(self, c: &str) -> Result<T, Error>; fn note(&self) {} }

#[macro_export]
macro_rules! bail { () => {} }
"""
IMP = "pub struct Chain { pub depth: usize }\nimpl Chain { pub fn next(&mut self) -> Option<u8> { None } }\npub fn unreachable_helper() {}\n"
FMT = "pub fn render(e: &crate::Error) -> String { String::new() }\n"


def _crate(lib: str = LIB, imp: str = IMP, fmt: str = FMT) -> dict[str, str]:
    return {"Cargo.toml": CARGO, "src/lib.rs": lib, "src/imp.rs": imp, "src/fmt.rs": fmt}


def test_a_rust_crate_is_read_from_lib_rs_through_pub_mod_and_pub_use():
    from reviews.index.api_surface import exported_surface

    surface, errors = exported_surface(_crate())
    assert errors == []
    assert set(surface) == {
        "errs:Error",
        "errs:Error.context",
        "errs:Kind",
        "errs:Flavor",
        "errs:Flavor.Plain",
        "errs:Context",
        "errs:Context.context",
        "errs:Context.note",
        "errs:Chain",
        "errs:Chain.depth",
        "errs:Chain.next",
        "errs:bail!",
        "errs::fmt:render",
    }
    # Doc comments, private items and a private module's unexported items change nothing.
    quiet = _crate(
        lib=LIB.replace("/// The error.", "/// The error, documented.").replace(
            "fn private(&self) {}", "fn private(&self, x: u8) {}"
        ),
        imp=IMP.replace("pub fn unreachable_helper() {}", ""),
    )
    assert _breaks(_crate(), quiet) == (AxisResult.PASS, [])


def test_rust_breaks_follow_cargo_semver_checks():
    base = _crate()
    cases = {
        "errs:Kind": LIB.replace("Io, Parse", "Io, Parse, Net"),  # exhaustive enum grew
        "errs:Context": LIB.replace("fn note(&self) {}", "fn note(&self);"),  # a required method
        "errs:Error.context": LIB.replace("C: Send", "C: Send + Sync"),  # a tighter bound
        "errs:bail!": LIB.replace("#[macro_export]\n", ""),
    }
    for where, lib in cases.items():
        result, breaks = _breaks(base, _crate(lib=lib))
        assert result is AxisResult.FAIL and breaks == [where], (where, breaks)
    # A variant added to a #[non_exhaustive] enum, and a pub(crate) change, break nobody.
    grown = LIB.replace("Flavor { Plain }", "Flavor { Plain, Spicy }").replace(
        "pub(crate) fn helper() {}", "pub(crate) fn helper(x: u8) {}"
    )
    assert _breaks(base, _crate(lib=grown)) == (AxisResult.PASS, [])
    # What a `pub use` brings in keeps its signature under its public name.
    changed = IMP.replace("Option<u8>", "Option<u16>")
    assert _breaks(base, _crate(imp=changed)) == (AxisResult.FAIL, ["errs:Chain.next"])


GSON = """package com.google.gson;

/** The entry point. */
public final class Gson {
  public static final String VERSION = "2";
  protected int depth;
  int packagePrivate;
  public Gson() {}
  public <T> T fromJson(String json, Class<T> type) { return null; }
  public <T> T fromJson(java.io.Reader json, Class<T> type) { return null; }
  private void helper() {}
  public static class Builder { public Builder lenient() { return this; } }
}
"""
INTERNAL = "package com.google.gson.internal;\npublic class Primitives { public static boolean isPrimitive(Object t) { return false; } }\n"


def test_java_public_types_and_members_outside_internal_packages_are_api():
    base = {
        "gson/src/main/java/com/google/gson/Gson.java": GSON,
        "gson/src/main/java/com/google/gson/internal/Primitives.java": INTERNAL,
    }
    # An overload added, a private method and an internal package changed: nobody breaks.
    head = {
        "gson/src/main/java/com/google/gson/Gson.java": GSON.replace(
            "private void helper() {}",
            "private void helper(int x) {}\n  public <T> T fromJson(byte[] json, Class<T> type) { return null; }",
        ),
        "gson/src/main/java/com/google/gson/internal/Primitives.java": INTERNAL.replace(
            "Object t", "Class<?> t"
        ),
    }
    assert _breaks(base, head) == (AxisResult.PASS, [])
    # One overload removed, a protected field retyped: both break.
    narrowed = {
        **base,
        "gson/src/main/java/com/google/gson/Gson.java": GSON.replace(
            "  public <T> T fromJson(java.io.Reader json, Class<T> type) { return null; }\n", ""
        ).replace("protected int depth", "protected long depth"),
    }
    assert _breaks(base, narrowed) == (
        AxisResult.FAIL,
        ["com.google.gson:Gson.depth", "com.google.gson:Gson.fromJson"],
    )
    # With a module descriptor, only the packages it exports are API.
    module = "module com.google.gson { exports com.google.gson.internal; }\n"
    described = {k: v for k, v in narrowed.items()}
    base_described = {**base, "gson/src/main/java/module-info.java": module}
    described["gson/src/main/java/module-info.java"] = module
    assert _breaks(base_described, described) == (AxisResult.PASS, [])


# -- TypeScript types the text can and cannot settle --------------------------------------------


def test_typescript_types_are_judged_by_where_the_value_flows():
    from reviews.index.ts_types import judge

    assert judge("number", "number | string", "input") == "compatible"
    assert judge("number | string", "number", "input") == "breaking"
    assert judge("string | null", "string", "output") == "compatible"
    assert judge("string", "string | null", "output") == "breaking"
    assert judge("'get' | 'post'", "'get' | 'post' | 'put'", "both") == "breaking"
    # A name the text cannot evaluate: neither proved safe nor proved a break.
    assert judge("'get' | 'post'", "LiteralUnion<Method, string>", "both") == "unknown"
    assert judge("error is A | B", "error is A | B | C", "output") == "unknown"
    assert judge("string[]", "Method[]", "input") == "unknown"
    # Objects member by member.
    assert judge("{url: string}", "{url: string, retries?: number}", "both") == "compatible"
    assert judge("{url: string, retries?: number}", "{url: string}", "both") == "breaking"
    assert judge("{retries?: number}", "{retries: number}", "input") == "breaking"
    assert judge("{retries?: number}", "{retries: number}", "output") == "compatible"
    assert judge("{cb: (x: number) => string}", "{cb: (x: number) => string | null}", "both") == (
        "unknown"
    )


primitives = st.sets(
    st.sampled_from(["string", "number", "null", "undefined", "'a'", "'b'", "1"]), min_size=1
)


@given(primitives, primitives)
def test_a_union_of_primitives_is_compatible_exactly_when_the_direction_allows(old, new):
    from reviews.index.ts_types import judge

    before, after = " | ".join(sorted(old)), " | ".join(sorted(new))
    as_input, as_output = judge(before, after, "input"), judge(before, after, "output")
    if old == new:
        assert as_input == as_output == "same"
        return
    assert as_input == ("compatible" if old <= new else "breaking")
    assert as_output == ("compatible" if new <= old else "breaking")
    assert judge(before, after, "both") == "breaking"


def test_a_declaration_the_grammar_cannot_read_is_unknown_and_the_rest_of_its_file_is_not():
    """TS 4.7 variance annotations are beyond the pinned grammar: that declaration is not
    trusted, but a real break elsewhere in the same file still blocks."""
    base = {
        "index.ts": "export interface Box<in T> { put(x: T): void }\n"
        "export function size(a: number): number { return a }\n"
        "export function keep(a: number): number { return a }\n"
    }
    head = {
        "index.ts": "export interface Box<in T> { put(x: T, y?: T): void }\n"
        "export function keep(a: number): number { return a }\n"
    }
    result, details = compute_api_contract(base_files=base, head_files=head)
    severities = {c["where"]: c["severity"] for c in details["changes"]}
    assert result is AxisResult.FAIL and severities["index.ts:size"] == "breaking"
    # A statement the grammar could not place may hide a declaration: a name missing from
    # such a file is unsure, a name changed in a clean declaration is not.
    hidden_base = {"index.ts": "export const = ;\nexport function go(a: number): void {}\n"}
    gone = {"index.ts": "export const = ;\n"}
    assert _breaks(hidden_base, gone)[0] is AxisResult.WARN
    retyped = {"index.ts": "export const = ;\nexport function go(a: string): void {}\n"}
    assert _breaks(hidden_base, retyped) == (AxisResult.FAIL, ["index.ts:go"])
