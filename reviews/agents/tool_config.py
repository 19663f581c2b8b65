"""The repository's own ruff and bandit configuration, and bandit's `# nosec` comments.

A project that configured its linters told us which rules it follows: its configuration is
used, and the stream's coverage note names the file. It is still untrusted input, so a file
that does not parse, or that `extend`s a file outside the checkout, is refused (Quorum's
defaults apply and the note says why), and a change that edits the configuration is said to.
Bandit's findings are filtered here rather than by bandit itself, so a `# nosec` cannot
silence a finding on the high-precision list (reviews/domain/precision.py) and the silenced
ones are counted.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from reviews.sources.worktrees import UnsafePath, safe_join


@dataclass(frozen=True)
class ToolConfig:
    """Which configuration a tool runs with. `path` None: Quorum's defaults."""

    path: str | None = None
    section: str = ""
    args: tuple[str, ...] = ()
    refused: str = ""  # why the repository's file was not used
    skips: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def describe(self, tool: str, changed: Sequence[str] = ()) -> str:
        if self.path is None:
            note = f"{tool}: Quorum's default rules"
            return note + (f" ({self.refused})" if self.refused else "")
        note = f"{tool}: the repository's configuration ({self.path}{self.section})"
        if self.skips:
            note += ", skipping " + ", ".join(self.skips)
        if self.path in changed:
            note += "; the change edits this configuration"
        return note


def _read_toml(root: Path, name: str) -> tuple[dict[str, Any] | None, str]:
    """(document, problem). A missing file is (None, "")."""
    try:
        path = safe_join(root, name)
    except UnsafePath:
        return None, f"{name} leads outside the repository"
    if not path.is_file():
        return None, ""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8")), ""
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        return None, f"{name} could not be read: {str(exc)[:120]}"


def _extend_escapes(root: Path, config_name: str, table: dict[str, Any]) -> bool:
    extend = table.get("extend")
    if extend is None:
        return False
    if not isinstance(extend, str):
        return True
    try:
        target = safe_join(root, str(Path(config_name).parent / extend))
    except UnsafePath:
        return True
    return not target.is_file()


def ruff_config(root: Path) -> ToolConfig:
    """The first of `.ruff.toml`, `ruff.toml`, `pyproject.toml` with `[tool.ruff]` (ruff's own
    order), or the defaults."""
    for name, section in ((".ruff.toml", ""), ("ruff.toml", ""), ("pyproject.toml", "tool.ruff")):
        document, problem = _read_toml(root, name)
        if problem:
            return ToolConfig(refused=problem)
        if document is None:
            continue
        table = document.get("tool", {}).get("ruff") if section else document
        if not isinstance(table, dict):
            continue
        if _extend_escapes(root, name, table):
            return ToolConfig(refused=f"{name} extends a file outside the repository")
        return ToolConfig(
            path=name, section=f" [{section}]" if section else "", args=("--config", name)
        )
    return ToolConfig()


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list):
        return ()
    return tuple(str(v).strip() for v in value if str(v).strip())


def bandit_config(root: Path) -> ToolConfig:
    """`[tool.bandit]` in pyproject.toml, else a `.bandit` INI file, else the defaults."""
    document, problem = _read_toml(root, "pyproject.toml")
    if problem:
        return ToolConfig(refused=problem)
    table = (document or {}).get("tool", {}).get("bandit")
    if isinstance(table, dict):
        return ToolConfig(
            path="pyproject.toml",
            section=" [tool.bandit]",
            args=("-c", "pyproject.toml"),
            skips=_names(table.get("skips")),
            exclude=_names(table.get("exclude_dirs")),
        )
    try:
        ini = safe_join(root, ".bandit")
    except UnsafePath:
        return ToolConfig(refused=".bandit leads outside the repository")
    if not ini.is_file():
        return ToolConfig()
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(ini.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        return ToolConfig(refused=f".bandit could not be read: {str(exc)[:120]}")
    if not parser.has_section("bandit"):
        return ToolConfig()
    section = parser["bandit"]
    return ToolConfig(
        path=".bandit",
        section=" [bandit]",
        args=("--ini", ".bandit"),
        skips=_names(section.get("skips", "")),
        exclude=_names(section.get("exclude", "")),
    )


def excluded(path: str, patterns: Sequence[str]) -> bool:
    """Whether a repository path falls under one of bandit's `exclude_dirs` entries."""
    for raw in patterns:
        pattern = raw.strip().removeprefix("./").rstrip("/")
        if not pattern:
            continue
        if path == pattern or path.startswith(pattern + "/") or fnmatch(path, pattern):
            return True
        if fnmatch(path, pattern + "/*") or fnmatch(path, "*/" + pattern + "/*"):
            return True
    return False


_NOSEC = re.compile(r"#\s*nosec\b:?(?P<ids>[^#\n]*)", re.I)
_TEST_REF = re.compile(r"\b(B\d{3}|[a-z\d]+(?:_[a-z\d]+)+)\b", re.I)


def nosec_silences(lines: Sequence[str], span: Sequence[int], test_id: str, name: str) -> bool:
    """Whether a `# nosec` on one of the statement's lines covers this test (a bare `# nosec`
    covers every test; `# nosec B602, B607` or test names only those)."""
    for number in span:
        if not 1 <= number <= len(lines):
            continue
        match = _NOSEC.search(lines[number - 1])
        if not match:
            continue
        # Like bandit: words that name no test (`# nosec - reviewed`) leave a bare `# nosec`.
        ids = {part.upper() for part in _TEST_REF.findall(match["ids"])}
        if not ids or test_id.upper() in ids or name.upper() in ids:
            return True
    return False


__all__ = ["ToolConfig", "bandit_config", "excluded", "nosec_silences", "ruff_config"]
