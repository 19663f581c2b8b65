"""The public API of a repository's Python packages, compared between base and head.

griffe reads both versions statically (no import of the code under review, `allow_inspection`
off) from temporary directories written from the two commits' file contents. Its
`find_breaking_changes` reports what breaks callers; what it does not report — additions — is
found by walking both public trees: new public names and new optional parameters.

Which packages: top-level directories with an `__init__.py`, at the root or under `src/`, minus
test, documentation, example and migration trees, which are nobody's API. "Public" is griffe's
rule: no leading underscore, or listed in `__all__`; a name merely imported is not public; and
nothing under a private module or class (an underscore anywhere in its dotted path) is.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import griffe

from reviews.index.limits import SKIPPED_DIRS

NOT_API_DIRS = frozenset(
    {"tests", "test", "testing", "docs", "doc", "examples", "example", "benchmarks", "migrations"}
)
_SOURCE_ROOTS = ("", "src")

#: Griffe breakages that change a value rather than a signature: worth a warn, not a fail. A
#: parameter's default is one of them: every call still works (`context={}` → `context=None`
#: is the mutable-default fix), only what an omitted argument means may differ.
_ADVISORY_BREAKAGES = frozenset(
    {griffe.BreakageKind.ATTRIBUTE_CHANGED_VALUE, griffe.BreakageKind.PARAMETER_CHANGED_DEFAULT}
)


@dataclass(frozen=True, slots=True)
class ApiChange:
    severity: str  # "breaking" | "advisory" (a value changed) | "additive"
    where: str  # dotted path of the object
    message: str

    def to_json(self) -> dict[str, str]:
        return {"severity": self.severity, "where": self.where, "message": self.message}


@dataclass(frozen=True, slots=True)
class PythonApiReport:
    packages: tuple[str, ...]
    changes: tuple[ApiChange, ...]
    errors: tuple[str, ...]  # packages griffe could not load: the comparison is partial


def python_packages(files: Mapping[str, str]) -> dict[str, str]:
    """Top-level package name → the directory it lives in ("" or "src")."""
    found: dict[str, str] = {}
    for path in files:
        pure = PurePosixPath(path)
        if pure.name != "__init__.py":
            continue
        parts = pure.parts[:-1]
        for root in _SOURCE_ROOTS:
            prefix = (root,) if root else ()
            if len(parts) == len(prefix) + 1 and parts[: len(prefix)] == prefix:
                name = parts[-1]
                if name.isidentifier() and name not in NOT_API_DIRS | SKIPPED_DIRS:
                    found.setdefault(name, root)
    return found


def compare_python_api(
    base_files: Mapping[str, str], head_files: Mapping[str, str]
) -> PythonApiReport | None:
    """None when neither side has a Python package."""
    base_packages = python_packages(base_files)
    head_packages = python_packages(head_files)
    names = sorted(base_packages.keys() | head_packages.keys())
    if not names:
        return None
    changes: list[ApiChange] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="quorum-api-") as tmp:
        base_dir = _write(Path(tmp) / "base", base_files, base_packages)
        head_dir = _write(Path(tmp) / "head", head_files, head_packages)
        for name in names:
            if name not in head_packages:
                changes.append(ApiChange("breaking", name, "package removed"))
                continue
            if name not in base_packages:
                changes.append(ApiChange("additive", name, "package added"))
                continue
            try:
                old = _load(name, base_dir / base_packages[name])
                new = _load(name, head_dir / head_packages[name])
                changes.extend(_breaking(old, new))
                changes.extend(_additions(old, new))
            except Exception as exc:  # griffe on arbitrary code: any failure means "partial"
                errors.append(f"{name}: {type(exc).__name__}: {exc}")
    return PythonApiReport(tuple(names), tuple(changes), tuple(errors))


def _write(root: Path, files: Mapping[str, str], packages: Mapping[str, str]) -> Path:
    for path, text in files.items():
        pure = PurePosixPath(path)
        if pure.suffix not in (".py", ".pyi"):
            continue
        parts = pure.parts
        inside = any(
            parts[: len(prefix) + 1] == (*prefix, name)
            for name, package_root in packages.items()
            for prefix in [(package_root,) if package_root else ()]
        )
        if not inside or any(p in NOT_API_DIRS | SKIPPED_DIRS for p in parts[:-1]):
            continue
        target = root.joinpath(*parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    root.mkdir(parents=True, exist_ok=True)
    return root


def _load(name: str, search_path: Path) -> griffe.Object | griffe.Alias:
    # griffe logs every unresolvable import; a review does not need that noise.
    logging.getLogger("griffe").setLevel(logging.ERROR)
    return griffe.load(
        name,
        search_paths=[search_path],
        allow_inspection=False,
        try_relative_path=False,
        resolve_aliases=False,
    )


def internal_path(dotted: str) -> bool:
    """A name users cannot be meant to reach: some part of its dotted path starts with an
    underscore (`pkg._compat.shim`, `pkg.core._helpers`); dunder names (`__init__`) are not
    private."""
    return any(
        part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
        for part in dotted.split(".")
    )


def _breaking(
    old: griffe.Object | griffe.Alias, new: griffe.Object | griffe.Alias
) -> list[ApiChange]:
    out = []
    for breakage in griffe.find_breaking_changes(old, new):
        if internal_path(breakage.obj.path):
            continue  # private modules and names are nobody's API
        severity = "advisory" if breakage.kind in _ADVISORY_BREAKAGES else "breaking"
        detail = breakage.kind.value
        if breakage.kind.name.startswith("PARAMETER") and breakage.old_value is not None:
            detail += f" ({getattr(breakage.old_value, 'name', breakage.old_value)})"
        elif breakage.kind.name.startswith("PARAMETER") and breakage.new_value is not None:
            detail += f" ({getattr(breakage.new_value, 'name', breakage.new_value)})"
        out.append(ApiChange(severity, breakage.obj.path, detail))
    return out


def _public_members(obj: griffe.Object | griffe.Alias) -> dict[str, griffe.Object | griffe.Alias]:
    found: dict[str, griffe.Object | griffe.Alias] = {}
    stack = [obj]
    while stack:
        current = stack.pop()
        for member in current.members.values():
            try:
                if not member.is_public:
                    continue
            except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                continue
            found[member.path] = member
            if not member.is_alias and (member.is_module or member.is_class):
                stack.append(member)
    return found


def _additions(
    old: griffe.Object | griffe.Alias, new: griffe.Object | griffe.Alias
) -> list[ApiChange]:
    before = _public_members(old)
    after = _public_members(new)
    out = [
        ApiChange("additive", path, f"public {_kind(after[path])} added")
        for path in sorted(after.keys() - before.keys())
    ]
    for path in sorted(after.keys() & before.keys()):
        old_fn, new_fn = _function(before[path]), _function(after[path])
        if old_fn is None or new_fn is None:
            continue
        known = {p.name for p in old_fn.parameters}
        for parameter in new_fn.parameters:
            optional = parameter.default is not None or parameter.kind in (
                griffe.ParameterKind.var_positional,
                griffe.ParameterKind.var_keyword,
            )
            if parameter.name not in known and optional:
                out.append(
                    ApiChange("additive", path, f"optional parameter {parameter.name!r} added")
                )
    return out


def _function(obj: griffe.Object | griffe.Alias) -> griffe.Function | None:
    try:
        return obj if obj.is_function else None  # type: ignore[return-value]
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def _kind(obj: griffe.Object | griffe.Alias) -> str:
    try:
        return str(obj.kind.value)
    except (griffe.AliasResolutionError, griffe.CyclicAliasError):
        return "name"
