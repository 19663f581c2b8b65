"""The exported surface of TypeScript/JavaScript modules and Go packages, and its pure
comparison (with property tests), as the apiContract axis uses them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.types import AxisResult
from reviews.index.api_exports import Export
from reviews.index.api_surface import compare_surfaces, exported_surface
from reviews.index.axes_compute import compute_api_contract

TS = """import { helper } from './helper';
export function add(a: number, b?: string, ...rest: number[]): number { return helper(a); }
export const double = (x: number): number => x * 2;
export class Cart {
  addItem(sku: string, count = 1): void {}
  private recount(): void {}
  #secret(): void {}
}
export default function (q) {}
const total = 1;
function inner(x) { return x; }
export { total, inner as outer };
export * from './more';
export interface Item { sku: string }
export type Sku = string;
function hidden() {}
"""

GO = """package shop

// Add adds.
func Add(a, b int, rest ...string) (int, error) { return 0, nil }
func (c *Cart) Total() float64 { return 0 }
func (c Cart) recount() {}
type Cart struct { Items []string; count int }
type Pricer interface { Price(sku string) int }
const Pi, e = 3, 2
var Default Cart
func helper() {}
"""

JS = """module.exports = { a, b: 1, c(x) {} };
exports.foo = function (x, y = 2) {};
"""


def _signatures(surface):
    return {where: (e.kind, e.signature) for where, e in surface.items()}


def test_it_reads_typescript_exports_with_signatures_and_skips_private_members():
    surface, errors = exported_surface({"web/src/cart.ts": TS})
    assert errors == []
    assert _signatures(surface) == {
        "web/src/cart.ts:add": ("function", "(number, string?, ...number[]) -> number"),
        "web/src/cart.ts:double": ("function", "(number) -> number"),
        "web/src/cart.ts:Cart": ("class", ""),
        "web/src/cart.ts:Cart.addItem": ("method", "(string, any?) -> void"),
        "web/src/cart.ts:default": ("function", "(any)"),
        "web/src/cart.ts:total": ("variable", ""),
        "web/src/cart.ts:outer": ("function", "(any)"),
        "web/src/cart.ts:* from './more'": ("re-export", ""),
        "web/src/cart.ts:Item": ("interface", ""),
        "web/src/cart.ts:Sku": ("type", "string"),
    }


def test_it_reads_go_exports_per_package_and_ignores_main_tests_and_internal():
    surface, _ = exported_surface(
        {
            "shop/shop.go": GO,
            "shop/shop_test.go": "package shop\nfunc TestX() {}\n",
            "cmd/tool/main.go": "package main\nfunc Run() {}\n",
            "shop/internal/x/x.go": "package x\nfunc Hidden() {}\n",
        }
    )
    assert _signatures(surface) == {
        "shop:Add": ("function", "(int, int, ...string) -> (int, error)"),
        "shop:Cart": ("struct", ""),
        "shop:Cart.Items": ("field", "[]string"),
        "shop:Cart.Total": ("method", "() -> float64"),
        "shop:Pricer": ("interface", ""),
        "shop:Pricer.Price": ("method", "(string) -> int"),
        "shop:Pi": ("constant", ""),
        "shop:Default": ("variable", "Cart"),
    }


def test_it_reads_commonjs_exports_and_skips_test_files():
    surface, _ = exported_surface({"lib/x.js": JS, "lib/x.test.js": "export function t() {}"})
    assert _signatures(surface) == {
        "lib/x.js:a": ("binding", ""),
        "lib/x.js:b": ("value", ""),
        "lib/x.js:c": ("function", "(_)"),
        "lib/x.js:foo": ("function", "(_, _?)"),
    }


def _messages(details):
    return {(c["where"], c["message"], c["severity"]) for c in details["changes"]}


def test_removing_an_exported_go_function_fails_the_axis():
    head = GO.replace(
        "// Add adds.\nfunc Add(a, b int, rest ...string) (int, error) { return 0, nil }\n", ""
    )
    result, details = compute_api_contract(
        base_files={"shop/shop.go": GO}, head_files={"shop/shop.go": head}
    )
    assert result is AxisResult.FAIL
    assert _messages(details) == {("shop:Add", "exported function removed", "breaking")}
    assert details["languages"] == ["Go"] and "exports: shop" in details["checked"]


def test_typescript_signatures_fail_when_changed_and_pass_when_an_optional_parameter_is_added():
    base = {"web/src/cart.ts": TS}
    changed = {
        "web/src/cart.ts": TS.replace("(x: number): number => x * 2", "(x: string): number => 2")
    }
    result, details = compute_api_contract(base_files=base, head_files=changed)
    assert result is AxisResult.FAIL
    assert _messages(details) == {
        (
            "web/src/cart.ts:double",
            "signature changed from (number) -> number to (string) -> number",
            "breaking",
        )
    }
    grown = {
        "web/src/cart.ts": TS.replace("(x: number): number", "(x: number, y?: number): number")
    }
    result, details = compute_api_contract(base_files=base, head_files=grown)
    assert result is AxisResult.PASS
    assert _messages(details) == {
        ("web/src/cart.ts:double", "optional parameter added", "additive")
    }


def test_a_change_touching_no_public_surface_passes_with_the_evidence():
    """Private code, tests and documentation change; every source file is in a language the
    axis reads: pass, and the details say which languages were checked."""
    base = {"web/src/cart.ts": TS, "shop/shop.go": GO, "web/src/cart.test.ts": "test()"}
    head = {
        "web/src/cart.ts": TS.replace("function hidden() {}", "function hidden() { return 2; }"),
        "shop/shop.go": GO.replace("func helper() {}", "func helper() { _ = 1 }"),
        "web/src/cart.test.ts": "test(); test()",
    }
    result, details = compute_api_contract(
        base_files=base, head_files=head, changed=[*head, "README.md"]
    )
    assert result is AxisResult.PASS
    assert details["changes"] == [] and details["languages"] == ["Go", "TypeScript"]
    assert "3 changed source file(s)" in details["evidence"]
    assert details["to_clear"] == []


def test_a_known_break_fails_even_beside_a_language_the_axis_cannot_read():
    head = {"web/src/cart.ts": TS.replace("export type Sku = string;\n", "")}
    result, details = compute_api_contract(
        base_files={"web/src/cart.ts": TS},
        head_files=head,
        changed=["web/src/cart.ts", "src/Main.kt"],
    )
    assert result is AxisResult.FAIL
    assert details["unchecked_languages"] == ["Kotlin"]


# -- properties of the pure comparison -------------------------------------------------------

_names = st.text(alphabet="abcdefXYZ_.:/", min_size=1, max_size=12)
_types = st.sampled_from(["int", "string", "number", "any", "_", "[]byte"])
_params = st.lists(
    st.one_of(_types, _types.map(lambda t: t + "?"), _types.map(lambda t: "..." + t)),
    max_size=4,
).map(tuple)
_exports = st.one_of(
    st.builds(Export, st.sampled_from(["function", "method"]), _params, _types),
    st.builds(Export, st.sampled_from(["class", "interface", "variable", "constant"])),
)
_surfaces = st.dictionaries(_names, _exports, max_size=8)


@given(_surfaces)
def test_a_surface_compared_with_itself_has_no_changes(surface):
    assert compare_surfaces(surface, dict(surface)) == ()


@given(_surfaces, st.data())
def test_removing_any_exported_name_is_a_breaking_change_naming_it(surface, data):
    if not surface:
        return
    removed = data.draw(st.sampled_from(sorted(surface)))
    head = {k: v for k, v in surface.items() if k != removed}
    changes = compare_surfaces(surface, head)
    assert [(c.severity, c.where) for c in changes] == [("breaking", removed)]


@given(_surfaces, _surfaces)
def test_additions_alone_never_break_and_the_result_does_not_depend_on_order(base, extra):
    head = {**extra, **base}  # base's exports unchanged, new ones added
    changes = compare_surfaces(base, head)
    assert all(c.severity == "additive" for c in changes)
    assert {c.where for c in changes} == head.keys() - base.keys()
    reordered = dict(reversed(list(head.items())))
    assert compare_surfaces(dict(reversed(list(base.items()))), reordered) == changes


@given(_surfaces, _surfaces)
def test_every_removed_or_changed_export_is_reported_as_breaking_or_an_optional_addition(
    base, head
):
    changes = {c.where: c for c in compare_surfaces(base, head)}
    for where in base:
        if where not in head:
            assert changes[where].severity == "breaking"
        elif base[where] != head[where]:
            assert where in changes
            if changes[where].severity == "additive":
                old, new = base[where], head[where]
                assert new.params[: len(old.params)] == old.params
                assert all(
                    p.endswith("?") or p.startswith("...") for p in new.params[len(old.params) :]
                )
        else:
            assert where not in changes


# -- meaning, not text: comments, layout and separators do not change a type -------------------

_MEMBERS = st.lists(
    st.tuples(
        st.sampled_from(["url", "retries", "timeout", "headers", "signal"]),
        st.booleans(),
        st.sampled_from(["string", "number", "boolean", "Record<string, string>", "string[]"]),
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda m: m[0],
)


def _render(members, *, separator: str, comments: bool, indent: str) -> str:
    lines = []
    for name, optional, typ in members:
        doc = f"{indent}/** The {name}. **Warning:** read the docs. */\n" if comments else ""
        lines.append(f"{doc}{indent}{name}{'?' if optional else ''}: {typ}{separator}")
    return "export type Options = {\n" + "\n".join(lines) + "\n};\n"


@given(
    _MEMBERS,
    st.sampled_from([";", ",", ""]),
    st.sampled_from([";", ","]),
    st.booleans(),
    st.sampled_from(["  ", "\t", "    "]),
)
def test_a_type_written_another_way_is_the_same_type(members, sep_a, sep_b, comments, indent):
    """Doc comments, `;` or `,` between members and indentation are not part of the type."""
    base = {"a.ts": _render(members, separator=sep_a, comments=False, indent="  ")}
    head = {"a.ts": _render(members, separator=sep_b, comments=comments, indent=indent)}
    assert exported_surface(base)[0] == exported_surface(head)[0]


def test_a_doc_comment_only_change_passes_and_a_member_change_fails():
    base = {
        "src/a.ts": "export type Options = {\n  /** The URL */\n  url: string;\n  retries?: number;\n};\n"
    }
    doc_only = {
        "src/a.ts": "export type Options = {\n  /** The URL.\n   * **Warning:** absolute only. */\n"
        "  url: string,\n  retries?: number\n}\n"
    }
    required = {"src/a.ts": base["src/a.ts"].replace("retries?: number", "retries: number")}
    assert compute_api_contract(base_files=base, head_files=doc_only)[0] is AxisResult.PASS
    result, details = compute_api_contract(base_files=base, head_files=required)
    assert result is AxisResult.FAIL
    assert details["changes"][0]["message"] == (
        "signature changed from {url: string, retries?: number} to {url: string, retries: number}"
    )
