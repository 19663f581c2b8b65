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
from typing import Any

import griffe

from reviews.domain.indexed_files import SKIPPED_DIRS

NOT_API_DIRS = frozenset(
    {
        "tests",
        "test",
        "testing",
        "docs",
        "doc",
        "examples",
        "example",
        "benchmarks",
        "migrations",
        "scripts",
    }
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
        # One loader per side holds all of that side's packages, so a name one package
        # re-exports from another (`attrs.field` is `attr.field`) resolves.
        base_loader = _loader(base_dir, base_packages)
        head_loader = _loader(head_dir, head_packages)
        for name in names:
            if name not in head_packages:
                changes.append(ApiChange("breaking", name, "package removed"))
                continue
            if name not in base_packages:
                changes.append(ApiChange("additive", name, "package added"))
                continue
            try:
                old = _load(base_loader, name)
                new = _load(head_loader, name)
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


def _loader(root: Path, packages: Mapping[str, str]) -> griffe.GriffeLoader:
    # griffe logs every unresolvable import; a review does not need that noise.
    logging.getLogger("griffe").setLevel(logging.ERROR)
    roots = sorted({root / package_root for package_root in packages.values()})
    loader = griffe.GriffeLoader(search_paths=roots, allow_inspection=False)
    # A package that re-exports another's names loads once that one is in; a failure here is
    # retried when the comparison asks for it, and reported then.
    waiting = sorted(packages)
    for _ in range(2):
        failed = []
        for name in waiting:
            try:
                _load(loader, name)
            except Exception:  # retried, then reported by the comparison
                loader.modules_collection.members.pop(name, None)  # not half a package
                failed.append(name)
        waiting = failed
    return loader


def _load(loader: griffe.GriffeLoader, name: str) -> griffe.Object | griffe.Alias:
    if name in loader.modules_collection:
        return loader.modules_collection[name]
    return loader.load(name, try_relative_path=False)


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
    exposed = _reexported(old)
    for breakage in griffe.find_breaking_changes(old, new):
        where = breakage.obj.path
        if internal_path(where):
            where = _public_name(where, exposed)
            if not where:
                continue  # private modules and names are nobody's API
        if _dunder(breakage.obj.name) and breakage.kind is not griffe.BreakageKind.OBJECT_REMOVED:
            # The interpreter calls special methods positionally and by protocol: their
            # parameter names, and whether one is an alias of another, are nobody's contract.
            continue
        if breakage.kind is griffe.BreakageKind.OBJECT_REMOVED and (
            _foreign_reexport(breakage.obj)
            or _still_inherited(breakage.obj)
            or _module_serves(new, breakage.obj)
            or _plumbing(breakage.obj)
        ):
            continue
        severity = "advisory" if breakage.kind in _ADVISORY_BREAKAGES else "breaking"
        detail = breakage.kind.value
        if breakage.kind.name.startswith("PARAMETER") and breakage.old_value is not None:
            detail += f" ({getattr(breakage.old_value, 'name', breakage.old_value)})"
        elif breakage.kind.name.startswith("PARAMETER") and breakage.new_value is not None:
            detail += f" ({getattr(breakage.new_value, 'name', breakage.new_value)})"
        out.append(ApiChange(severity, where, detail))
    return out


def _reexported(root: griffe.Object | griffe.Alias) -> dict[str, str]:
    """Private objects a public module hands out under a public name, target path → public
    path: `httpx.Client` is `httpx._client.Client`, so a change to `_client.Client` reaches
    every user of `httpx.Client`. A re-export counts when the module lists it in `__all__`,
    or, without `__all__`, when the module is a package's `__init__`."""
    out: dict[str, str] = {}
    stack = [root]
    while stack:
        module = stack.pop()
        listed = getattr(module, "exports", None)
        names = {str(n) for n in listed} if listed else None
        for member in list(module.members.values()):
            if member.is_alias:
                target = str(getattr(member, "target_path", "") or "")
                offered = (
                    member.name in names
                    if names is not None
                    else getattr(module, "is_init_module", False)
                )
                if (
                    offered
                    and not member.name.startswith("_")
                    and internal_path(target)
                    and not internal_path(member.path)
                ):
                    out.setdefault(target, member.path)
            elif member.is_module and not internal_path(member.path):
                stack.append(member)
    return out


def _public_name(path: str, exposed: Mapping[str, str]) -> str:
    """The public name a private path is reached by, or "" when it is not re-exported."""
    for target, public in exposed.items():
        if path == target or path.startswith(target + "."):
            return public + path[len(target) :]
    return ""


def _foreign_reexport(obj: griffe.Object | griffe.Alias) -> bool:
    """A name imported from outside the project (`from typing import ClassVar`) that the
    module never listed in `__all__`: nobody imports `ClassVar` from this package."""
    if not obj.is_alias:
        return False
    current: griffe.Object | griffe.Alias = obj
    for _ in range(20):  # a chain of re-exports, up to where it leaves the project
        if not current.is_alias:
            return False
        target = str(getattr(current, "target_path", "") or "")
        if target.split(".", 1)[0] not in obj.modules_collection:
            break
        try:
            current = obj.modules_collection.get_member(target)
        except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
            return False
    else:
        return False
    parent = obj.parent
    listed = getattr(parent, "exports", None) if parent is not None else None
    return not (listed and obj.name in {str(name) for name in listed})


#: Special methods a caller passes its own arguments to (`Cart(sku, 2)`, `pricer(cart)`).
_CALLED_BY_USERS = frozenset({"__init__", "__new__", "__call__", "__init_subclass__"})


def _dunder(name: str) -> bool:
    """A special method the interpreter calls by protocol."""
    return (
        len(name) > 4
        and name.startswith("__")
        and name.endswith("__")
        and name not in _CALLED_BY_USERS
    )


#: Members of the built-in types a class commonly extends, directly or through a base from
#: another package (werkzeug's `CallbackDict` is a `dict`).
#: What every class has from `object`, and the finaliser nobody calls.
_OBJECT_MEMBERS = frozenset({*dir(object), "__del__"})
_BUILTIN_MEMBERS = frozenset(
    name for kind in (object, dict, list, set, str, bytes, BaseException) for name in dir(kind)
)


def _still_inherited(obj: griffe.Object | griffe.Alias) -> bool:
    """A class member removed from the class body but still there for every caller: a
    built-in base provides it (`args` on an exception subclass), or the class extends a base
    from outside the project and the name is one a built-in type provides (`get` and
    `__getitem__` of a dict subclass)."""
    import builtins

    parent = obj.parent
    if parent is None or not getattr(parent, "is_class", False):
        return False
    if obj.name in _OBJECT_MEMBERS:
        return True  # every class has `object`'s (`__repr__`, `__eq__`, …)
    pending: list[Any] = [parent]
    seen: set[int] = set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        for base in getattr(current, "bases", ()):
            name = str(base).rsplit(".", 1)[-1]
            builtin = getattr(builtins, name, None)
            if isinstance(builtin, type) and hasattr(builtin, obj.name):
                return True
        try:
            resolved = list(getattr(current, "resolved_bases", []))
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            resolved = []
        if len(resolved) < len(getattr(current, "bases", ())) and obj.name in _BUILTIN_MEMBERS:
            return True  # a base outside the project: it may well provide the name
        pending.extend(resolved)
    return False


def _module_serves(
    new_root: griffe.Object | griffe.Alias, obj: griffe.Object | griffe.Alias
) -> bool:
    """A module attribute removed from a module that now defines `__getattr__` (PEP 562):
    the module can still answer it (`__version__` served with a deprecation warning)."""
    parent = obj.parent
    if parent is None or not getattr(parent, "is_module", False):
        return False
    try:
        module = new_root.modules_collection.get_member(parent.path)
    except (KeyError, ValueError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return False
    return "__getattr__" in getattr(module, "members", {})


_PLUMBING_CALLS = ("getLogger(", "TypeVar(", "ParamSpec(", "TypeVarTuple(")


def _plumbing(obj: griffe.Object | griffe.Alias) -> bool:
    """A module-level logger or type variable (`log = logging.getLogger(...)`,
    `T = TypeVar("T")`): what the module uses to log and to annotate, not what it offers."""
    value = str(getattr(obj, "value", "") or "") if not obj.is_alias else ""
    return any(call in value for call in _PLUMBING_CALLS)


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
