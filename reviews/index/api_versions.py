"""Whether a change says, in its own manifest, that it breaks its API on purpose.

Semantic versioning is how every ecosystem the index reads announces a break: a new major
version, or a new minor while the major is 0 (`0.4 → 0.5`). A change that raises its manifest's
version that way lists its breaks as expected instead of failing on them. The manifests read:
`pyproject.toml` (`[project] version`), `setup.cfg` (`[metadata] version`), `package.json`,
`Cargo.toml` (`[package] version`), `pom.xml` (the project's own `<version>`), `go.mod`,
whose module path carries the major version (`example.com/lib/v2`), and the `PKG-INFO` of a
Python source distribution (its `Version:` line: what a build wrote for a dynamic version).
A version the manifest does not spell out (dynamic, a variable) says nothing, and nothing is
assumed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

VERSION_MANIFESTS = frozenset(
    {"pyproject.toml", "setup.cfg", "package.json", "Cargo.toml", "pom.xml", "go.mod", "PKG-INFO"}
)

_SEMVER = re.compile(r"^\s*v?(\d+)(?:\.(\d+))?")
_PYPROJECT = re.compile(r"^\[project\][^\[]*?^\s*version\s*=\s*[\"']([^\"']+)[\"']", re.M | re.S)
_SETUP_CFG = re.compile(r"^\[metadata\][^\[]*?^\s*version\s*=\s*([^\s#;]+)", re.M | re.S)
_PKG_INFO = re.compile(r"^Version:\s*(\S+)", re.M)
_CARGO = re.compile(r"^\[package\][^\[]*?^\s*version\s*=\s*\"([^\"]+)\"", re.M | re.S)
_GO_MODULE = re.compile(r"^\s*module\s+\"?(\S+?)\"?\s*$", re.M)
_GO_MAJOR = re.compile(r"/v(\d+)$")
# The project's own version: the first <version> outside <parent> and <dependencies>.
_POM_NOISE = re.compile(
    r"<(parent|dependencies|dependencyManagement|build|profiles)>.*?</\1>", re.S
)
_POM_VERSION = re.compile(r"<version>\s*([^<\s]+)\s*</version>")


def is_version_manifest(path: str) -> bool:
    return PurePosixPath(path).name in VERSION_MANIFESTS


def manifest_version(path: str, text: str) -> tuple[int, int] | None:
    """(major, minor) as the manifest states it; None when it states none."""
    name = PurePosixPath(path).name
    raw: str | None = None
    if name == "go.mod":
        module = _GO_MODULE.search(text)
        if module is None:
            return None
        major = _GO_MAJOR.search(module.group(1))
        return (int(major.group(1)) if major else 1, 0)
    if name == "package.json":
        try:
            data = json.loads(text)
        except ValueError:
            return None
        value = data.get("version") if isinstance(data, dict) else None
        raw = value if isinstance(value, str) else None
    elif name == "pyproject.toml":
        found = _PYPROJECT.search(text)
        raw = found.group(1) if found else None
    elif name == "setup.cfg":
        found = _SETUP_CFG.search(text)
        raw = found.group(1) if found else None
    elif name == "PKG-INFO":
        found = _PKG_INFO.search(text)
        raw = found.group(1) if found else None
    elif name == "Cargo.toml":
        found = _CARGO.search(text)
        raw = found.group(1) if found else None
    elif name == "pom.xml":
        found = _POM_VERSION.search(_POM_NOISE.sub("", text))
        raw = found.group(1) if found else None
    if raw is None:
        return None
    parsed = _SEMVER.match(raw)
    if parsed is None:
        return None
    return int(parsed.group(1)), int(parsed.group(2) or 0)


def breaking_bump(old: tuple[int, int], new: tuple[int, int]) -> bool:
    """A version that announces breaking changes: a higher major, or a higher minor in 0.x."""
    if new[0] != old[0]:
        return new[0] > old[0]
    return new[0] == 0 and new[1] > old[1]


@dataclass(frozen=True, slots=True)
class IntendedBreak:
    manifest: str
    old: str
    new: str

    def reason(self) -> str:
        return f"{self.manifest} raises the version from {self.old} to {self.new}"


def intended_break(
    base_files: Mapping[str, str], head_files: Mapping[str, str]
) -> IntendedBreak | None:
    """The manifest (shallowest first) whose version bump announces breaking changes."""
    for path in sorted(head_files.keys() & base_files.keys(), key=lambda p: (p.count("/"), p)):
        if not is_version_manifest(path):
            continue
        old = manifest_version(path, base_files[path])
        new = manifest_version(path, head_files[path])
        if old is not None and new is not None and breaking_bump(old, new):
            return IntendedBreak(path, f"{old[0]}.{old[1]}", f"{new[0]}.{new[1]}")
    return None
