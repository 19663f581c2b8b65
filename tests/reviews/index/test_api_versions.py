"""A change that raises its major version (or the minor of a 0.x) breaks its API on purpose."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from reviews.domain.types import AxisResult
from reviews.index.api_versions import breaking_bump, intended_break, manifest_version
from reviews.index.axes_compute import compute_api_contract

versions = st.tuples(st.integers(0, 30), st.integers(0, 30))


@given(versions, versions)
def test_only_a_higher_major_or_a_0x_minor_announces_a_break(old, new):
    expected = new[0] > old[0] or (new[0] == old[0] == 0 and new[1] > old[1])
    assert breaking_bump(old, new) is expected


@given(versions)
def test_the_same_version_never_does(version):
    assert not breaking_bump(version, version)


def test_each_manifest_says_its_version():
    assert manifest_version("pyproject.toml", '[project]\nname = "x"\nversion = "2.1.0"\n') == (
        2,
        1,
    )
    assert manifest_version("setup.cfg", "[metadata]\nname = x\nversion = 0.9.3\n") == (0, 9)
    assert manifest_version("packages/ky/package.json", json.dumps({"version": "1.4.0"})) == (1, 4)
    assert manifest_version("Cargo.toml", '[package]\nname = "serde"\nversion = "1.0.210"\n') == (
        1,
        0,
    )
    assert manifest_version("go.mod", "module github.com/acme/lib/v3\n\ngo 1.22\n") == (3, 0)
    assert manifest_version("go.mod", "module github.com/acme/lib\n") == (1, 0)
    pom = (
        "<project><parent><version>9.9.9</version></parent>"
        "<version>4.2.0</version><dependencies><dependency><version>1.0</version>"
        "</dependency></dependencies></project>"
    )
    assert manifest_version("pom.xml", pom) == (4, 2)
    # A version the manifest does not spell out says nothing.
    assert manifest_version("pyproject.toml", '[project]\ndynamic = ["version"]\n') is None
    assert manifest_version("package.json", "{not json") is None


def test_a_major_bump_lists_the_breaks_as_expected_and_does_not_fail():
    lib = {"lib/__init__.py": "def run(x):\n    return x\n\n\ndef stop():\n    return None\n"}
    removed = {"lib/__init__.py": "def run(x):\n    return x\n"}
    manifest = '[project]\nname = "lib"\nversion = "{}"\n'
    base = {**lib, "pyproject.toml": manifest.format("1.4.0")}
    same_major = {**removed, "pyproject.toml": manifest.format("1.5.0")}
    major = {**removed, "pyproject.toml": manifest.format("2.0.0")}
    assert compute_api_contract(base_files=base, head_files=same_major)[0] is AxisResult.FAIL
    result, details = compute_api_contract(base_files=base, head_files=major)
    assert result is AxisResult.WARN
    assert details["expected_breaks"] == "pyproject.toml raises the version from 1.4 to 2.0"
    [change] = details["changes"]
    assert change["severity"] == "expected" and change["where"] == "lib.stop"
    assert intended_break(base, same_major) is None


def test_a_parse_error_in_a_file_the_change_does_not_touch_changes_nothing():
    broken = "export interface X<in T> { a: T }\nexport const = ;\n"
    base = {"src/old.ts": broken, "src/a.ts": "export function f(a: number): number { return a }\n"}
    head = {**base, "src/a.ts": base["src/a.ts"] + "export function g(): void {}\n"}
    result, details = compute_api_contract(base_files=base, head_files=head)
    assert result is AxisResult.PASS, details
    assert details["errors_in_untouched_files"]
    # Touched, it is compared as far as the grammar reads it: the axis warns and names it,
    # and what it could not read never counts as removed.
    touched = {**head, "src/old.ts": "export const = ;\n// touched\n"}
    result, details = compute_api_contract(base_files=base, head_files=touched)
    assert result is AxisResult.WARN, details
    assert details["unread_declarations"] == [
        "src/old.ts: syntax errors, exports may be incomplete"
    ]
    assert [c["severity"] for c in details["changes"] if c["where"] == "src/old.ts:X"] == [
        "unknown"
    ]
