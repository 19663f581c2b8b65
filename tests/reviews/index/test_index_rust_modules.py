"""Rust modules whose file is not where the module's name puts it: `#[path]` on a `mod x;`, in an
inline `mod`, and on an inline `mod`; cfg variants of one module. Each import names the item in
the file rustc would read, or stays unresolved and counted."""

from __future__ import annotations

from reviews.index import build_index
from reviews.index.resolution import import_resolution, unresolved_imports

CARGO = '[package]\nname = "demo"\nversion = "0.1.0"\n'


def _targets(index, path):
    return {r.name: r.target for r in index.references if r.path == path and r.kind == "import"}


def test_a_path_attribute_names_the_file_relative_to_the_declaring_files_directory():
    """`#[path = "core.rs"] mod imp;` in `io/mod.rs` is `io/core.rs`, whose own `mod` sits next
    to it; in a non-mod-rs file `a.rs` the path starts in a.rs's directory, not in `a/`; a test
    crate including library files by `#[path]` reaches their modules through its own
    `crate::`."""
    index = build_index(
        {
            "Cargo.toml": CARGO,
            "src/lib.rs": "mod io;\nmod a;\npub mod parse;\npub use self::io::Write;\n",
            "src/io/mod.rs": (
                '#[cfg(not(feature = "std"))]\n#[path = "core.rs"]\n// no std: our own\nmod imp;\n'
                "pub use self::imp::{Error, Kind, Write};\n"
            ),
            "src/io/core.rs": "mod detail;\npub use self::detail::Kind;\npub struct Error;\n"
            "pub trait Write {}\n",
            "src/io/detail.rs": "pub enum Kind {}\n",
            "src/a.rs": '#[path = "shared/b.rs"]\nmod b;\nuse self::b::B;\n',
            "src/shared/b.rs": "pub struct B;\n",
            "src/a/shared/b.rs": "pub struct B;\n",  # where the path does not lead
            "src/parse/mod.rs": "pub mod digits;\npub struct Parser;\n",
            "src/parse/digits.rs": "pub fn count() {}\n",
            "tests/parse.rs": (
                '#[path = "../src/parse/mod.rs"]\nmod parse;\n'
                '#[path = "parse/cases.rs"]\nmod cases;\n'
            ),
            "tests/parse/cases.rs": "use crate::parse::digits::count;\nuse crate::parse::Parser;\n",
        }
    )
    io = _targets(index, "src/io/mod.rs")
    assert io["self::imp::Error"] == "src/io/core.rs:Error"
    assert io["self::imp::Write"] == "src/io/core.rs:Write"
    assert io["self::imp::Kind"] == "src/io/detail.rs:Kind"  # re-exported by core.rs
    assert _targets(index, "src/a.rs")["self::b::B"] == "src/shared/b.rs:B"
    cases = _targets(index, "tests/parse/cases.rs")
    assert cases["crate::parse::digits::count"] == "src/parse/digits.rs:count"
    assert cases["crate::parse::Parser"] == "src/parse/mod.rs:Parser"
    assert import_resolution(index)["rust"].rate == 1.0


def test_a_path_attribute_inside_an_inline_module_and_on_one():
    """In an inline `mod m { … }` a `#[path]` starts in m's directory (`m/` next to `lib.rs`,
    `net/m/` for `net.rs`); an inline `mod`'s own `#[path]` is the directory of its modules;
    `self` and `super` inside an inline `mod` start from it."""
    index = build_index(
        {
            "Cargo.toml": CARGO,
            "src/lib.rs": (
                'mod platform {\n    #[path = "unix_impl.rs"]\n    mod sys;\n'
                "    pub use self::sys::Handle;\n}\n"
                '#[path = "arch"]\nmod cpu {\n    mod x86;\n    pub use self::x86::Cpu;\n}\n'
                "mod net;\n"
            ),
            "src/platform/unix_impl.rs": "pub struct Handle;\n",
            "src/arch/x86.rs": "pub struct Cpu;\n",
            "src/net.rs": (
                'mod inner {\n    #[path = "tcp.rs"]\n    mod stream;\n'
                "    pub use self::stream::Stream;\n}\n"
                "mod small {\n    pub fn grow() {\n        use super::large::Big;\n    }\n}\n"
                "mod large {\n    pub struct Big;\n}\n"
            ),
            "src/net/inner/tcp.rs": "pub struct Stream;\n",
        }
    )
    lib = _targets(index, "src/lib.rs")
    assert lib["self::sys::Handle"] == "src/platform/unix_impl.rs:Handle"
    assert lib["self::x86::Cpu"] == "src/arch/x86.rs:Cpu"
    net = _targets(index, "src/net.rs")
    assert net["self::stream::Stream"] == "src/net/inner/tcp.rs:Stream"
    assert net["super::large::Big"] == "src/net.rs:large.Big"
    assert import_resolution(index)["rust"].rate == 1.0


def test_cfg_variants_of_one_module_are_each_looked_in():
    """Two inline `mod lexical { … }` under opposite cfgs, a file module with an inline
    fallback, a `#[cfg_attr(…, path = …)]` next to the file the name gives, two `#[path]`
    variants: a name is found in whichever variant holds it. A `#[path]` to no file and a
    module nobody declares stay unresolved and counted."""
    index = build_index(
        {
            "Cargo.toml": CARGO,
            "src/lib.rs": (
                '#[cfg(feature = "fast")]\nmod lexical {\n    pub fn parse_fast() {}\n}\n'
                '#[cfg(not(feature = "fast"))]\nmod lexical {\n    pub fn parse_slow() {}\n}\n'
                "#[cfg(unix)]\nmod sys;\n#[cfg(not(unix))]\nmod sys {\n    pub struct Fallback;\n}\n"
                '#[cfg_attr(windows, path = "os_windows.rs")]\nmod os;\n'
                '#[cfg(unix)]\n#[path = "imp/unix.rs"]\nmod imp;\n'
                '#[cfg(windows)]\n#[path = "imp/windows.rs"]\nmod imp;\n'
                '#[path = "nowhere.rs"]\nmod gone;\n'
                "use self::lexical::{parse_fast, parse_slow};\n"
                "use self::sys::{Fallback, Native};\nuse self::os::{Unix, Windows};\n"
                "use self::imp::{Pipe, Socket};\nuse self::gone::Thing;\nuse crate::missing::It;\n"
            ),
            "src/sys.rs": "pub struct Native;\n",
            "src/os.rs": "pub struct Unix;\n",
            "src/os_windows.rs": "pub struct Windows;\n",
            "src/imp/unix.rs": "pub struct Socket;\n",
            "src/imp/windows.rs": "pub struct Pipe;\n",
        }
    )
    lib = _targets(index, "src/lib.rs")
    assert lib["self::lexical::parse_fast"] == "src/lib.rs:lexical.parse_fast"
    assert lib["self::lexical::parse_slow"] == "src/lib.rs:lexical.parse_slow"
    assert lib["self::sys::Native"] == "src/sys.rs:Native"
    assert lib["self::sys::Fallback"] == "src/lib.rs:sys.Fallback"
    assert lib["self::os::Unix"] == "src/os.rs:Unix"
    assert lib["self::os::Windows"] == "src/os_windows.rs:Windows"
    assert lib["self::imp::Socket"] == "src/imp/unix.rs:Socket"
    assert lib["self::imp::Pipe"] == "src/imp/windows.rs:Pipe"
    assert unresolved_imports(index, ["src/lib.rs"]) == (
        "src/lib.rs: self::gone::Thing",
        "src/lib.rs: crate::missing::It",
    )
    rate = import_resolution(index)["rust"]
    assert (rate.resolved, rate.total) == (8, 10)


def test_a_crate_whose_lib_path_cargo_toml_names_is_rooted_there():
    """A test harness crate (`tests/crate/Cargo.toml` with `[lib] path = "test.rs"`, depending on
    the library) is rooted at that file: its glob re-export of the library and its own
    `crate::` paths resolve."""
    index = build_index(
        {
            "Cargo.toml": CARGO,
            "src/lib.rs": "pub mod parse;\n",
            "src/parse.rs": "pub struct Parser;\n",
            "tests/crate/Cargo.toml": (
                '[package]\nname = "demo_test"\nversion = "0.0.0"\n\n[lib]\npath = "test.rs"\n\n'
                '[dependencies]\ndemo = { path = "../.." }\n'
            ),
            "tests/crate/test.rs": "mod extra;\npub use demo::*;\nuse crate::extra::Extra;\n",
            "tests/crate/extra.rs": "pub struct Extra;\n",
        }
    )
    harness = _targets(index, "tests/crate/test.rs")
    assert harness["demo"] == "src/lib.rs"
    assert harness["crate::extra::Extra"] == "tests/crate/extra.rs:Extra"
    assert import_resolution(index)["rust"].rate == 1.0
