"""The repository's own ruff, flake8, pylint and bandit configuration, and bandit's `# nosec`
comments.

A project that configured its linters told us which rules it follows: its configuration is
used, and the stream's coverage note names the file. Ruff's own file first; else a `[flake8]`
section mapped onto ruff's rules (reviews/domain/lint_mapping.py), with pylint's `disable`
list where it names rules ruff has. It is still untrusted input, so a file
that does not parse, or that `extend`s a file outside the checkout, is refused (Quorum's
defaults apply and the note says why), and a change that edits the configuration is said to.
Bandit's findings are filtered here rather than by bandit itself, so a `# nosec` cannot
silence a finding on the high-precision list (reviews/domain/precision.py) and the silenced
ones are counted.
"""

from __future__ import annotations

import configparser
import functools
import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from reviews.domain.lint_mapping import (
    RuffSelection,
    RuleTable,
    flake8_options,
    flake8_selection,
    pylint_ignores,
    split_list,
)
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
    # A configuration of another tool mapped onto this one (`flake8`, `pylint`): `args` run
    # with `--isolated`, and `selection` says what the project asked for itself.
    mapped_from: str = ""
    selection: RuffSelection | None = None
    also: str = ""  # a second file read (pylint's disable list beside a flake8 section)

    def asks_for(self, code: str) -> bool:
        """Whether the project itself asked for this rule (its own ruff configuration asks for
        everything it selects; Quorum's defaults ask for nothing)."""
        if self.selection is not None:
            return self.selection.asks_for(code)
        return self.path is not None

    def describe(self, tool: str, changed: Sequence[str] = ()) -> str:
        if self.path is None:
            note = f"{tool}: Quorum's default rules"
            return note + (f" ({self.refused})" if self.refused else "")
        if self.mapped_from:
            note = (
                f"{tool}: the repository's {self.mapped_from} configuration "
                f"({self.path}{self.section}) mapped onto ruff's rules"
            )
            if self.also:
                note += f", with {self.also}"
            if self.selection is not None and self.selection.dropped:
                note += " (no ruff rule for " + ", ".join(self.selection.dropped[:8]) + ")"
        else:
            note = f"{tool}: the repository's configuration ({self.path}{self.section})"
        if self.skips:
            note += ", skipping " + ", ".join(self.skips)
        if self.path in changed:
            note += "; the change edits this configuration"
        return note


#: A configuration file larger than this is not read (a checkout is untrusted input).
MAX_CONFIG_BYTES = 512 * 1024


def config_text(root: Path, name: str) -> tuple[str | None, str]:
    """(text, problem) of a configuration file in the checkout. A missing file is (None, "");
    one outside the checkout, too large or unreadable is (None, why)."""
    try:
        path = safe_join(root, name)
    except UnsafePath:
        return None, f"{name} leads outside the repository"
    if not path.is_file():
        return None, ""
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            return None, f"{name} is too large to read"
        return path.read_text(encoding="utf-8"), ""
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{name} could not be read: {str(exc)[:120]}"


def _read_toml(root: Path, name: str) -> tuple[dict[str, Any] | None, str]:
    """(document, problem). A missing file is (None, "")."""
    text, problem = config_text(root, name)
    if text is None:
        return None, problem
    try:
        return tomllib.loads(text), ""
    except tomllib.TOMLDecodeError as exc:
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


def ruff_config(
    root: Path, quorum_rules: Sequence[str] = (), quorum_ignore: Sequence[str] = ()
) -> ToolConfig:
    """The first of `.ruff.toml`, `ruff.toml`, `pyproject.toml` with `[tool.ruff]` (ruff's own
    order); else a flake8 configuration mapped onto ruff (with `quorum_rules` added, less
    `quorum_ignore` unless the project selects those itself) and pylint's disable list; else
    the defaults."""
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
    flake8, problem = _ini_section(root, FLAKE8_FILES, "flake8")
    if flake8 is None:
        flake8 = _pyproject_flake8(root)
    disabled, pylint_file = _pylint_disabled(root)
    table = ruff_rule_table() if flake8 is not None or pylint_file else None
    if table is not None and not table.codes:
        return ToolConfig(refused="ruff's rule list could not be read")
    extra = pylint_ignores(disabled, table) if table is not None else ()
    also = f"pylint's disable list from {pylint_file}" if pylint_file and extra else ""
    if flake8 is not None and table is not None:
        name, values = flake8
        options = flake8_options(values)
        explicit = [*(options.select or ()), *options.extend_select]
        habits = [c for c in quorum_ignore if not any(c.startswith(s) for s in explicit)]
        selection = flake8_selection(options, table, quorum_rules, [*extra, *habits])
        return ToolConfig(
            path=name,
            section=" [tool.flake8]" if name == "pyproject.toml" else " [flake8]",
            args=("--isolated", *selection.args),
            mapped_from="flake8",
            selection=selection,
            also=also,
        )
    if extra and table is not None and pylint_file:
        selection = RuffSelection(
            args=(
                "--select",
                ",".join(quorum_rules),
                "--ignore",
                ",".join([*extra, *quorum_ignore]),
            )
        )
        return ToolConfig(
            path=pylint_file,
            args=("--isolated", *selection.args),
            mapped_from="pylint",
            selection=selection,
        )
    return ToolConfig(refused=problem)


#: Where flake8 looks for its options, in its order.
FLAKE8_FILES = ("setup.cfg", "tox.ini", ".flake8")
PYLINT_FILES = (".pylintrc", "pylintrc", "setup.cfg", "tox.ini")
_PYLINT_SECTIONS = ("MESSAGES CONTROL", "messages control", "pylint.messages_control", "pylint")


def _read_ini(root: Path, name: str) -> tuple[configparser.ConfigParser | None, str]:
    text, problem = config_text(root, name)
    if text is None:
        return None, problem
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error as exc:
        return None, f"{name} could not be read: {str(exc)[:120]}"
    return parser, ""


def _ini_section(
    root: Path, names: Sequence[str], section: str
) -> tuple[tuple[str, dict[str, str]] | None, str]:
    """(file name, options) of the first file with the section, and a problem, if any."""
    problems = []
    for name in names:
        parser, problem = _read_ini(root, name)
        if problem:
            problems.append(problem)
        if parser is not None and parser.has_section(section):
            return (name, dict(parser[section])), ""
    return None, "; ".join(problems)


def _pyproject_flake8(root: Path) -> tuple[str, dict[str, str]] | None:
    """`[tool.flake8]` in pyproject.toml (the flake8-pyproject plugin), as INI-style values."""
    document, _ = _read_toml(root, "pyproject.toml")
    table = (document or {}).get("tool", {}).get("flake8")
    if not isinstance(table, dict):
        return None
    values = {
        str(key): ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
        for key, value in table.items()
        if isinstance(value, str | int | list)
    }
    return "pyproject.toml", values


def _pylint_disabled(root: Path) -> tuple[tuple[str, ...], str]:
    """pylint's `disable` list and the file it came from (an rc file, setup.cfg, tox.ini or
    `[tool.pylint]` in pyproject.toml)."""
    document, _ = _read_toml(root, "pyproject.toml")
    pylint = (document or {}).get("tool", {}).get("pylint")
    if isinstance(pylint, dict):
        for table in (pylint.get("messages_control"), pylint.get("MESSAGES CONTROL"), pylint):
            if isinstance(table, dict) and "disable" in table:
                value = table["disable"]
                names = value if isinstance(value, list) else split_list(str(value))
                return tuple(str(n) for n in names), "pyproject.toml [tool.pylint]"
    for name in PYLINT_FILES:
        parser, _ = _read_ini(root, name)
        if parser is None:
            continue
        for section in _PYLINT_SECTIONS:
            if parser.has_section(section) and parser.has_option(section, "disable"):
                return split_list(parser.get(section, "disable")), f"{name} [{section}]"
    return (), ""


@functools.cache
def ruff_rule_table() -> RuleTable:
    """Ruff's rules and linter prefixes, as the installed ruff lists them."""
    ruff = [sys.executable, "-m", "ruff"]
    try:
        rules = json.loads(
            subprocess.run(
                [*ruff, "rule", "--all", "--output-format", "json"],
                capture_output=True,
                timeout=60,
                check=True,
            ).stdout
        )
        linters = json.loads(
            subprocess.run(
                [*ruff, "linter", "--output-format", "json"],
                capture_output=True,
                timeout=60,
                check=True,
            ).stdout
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return RuleTable(codes=frozenset(), prefixes=frozenset())
    prefixes = set()
    for linter in linters:
        prefix = str(linter.get("prefix") or "")
        if prefix:
            prefixes.add(prefix)
        for category in linter.get("categories") or ():
            prefixes.add(prefix + str(category.get("prefix") or ""))
    return RuleTable(
        codes=frozenset(str(rule["code"]) for rule in rules),
        prefixes=frozenset(p for p in prefixes if p),
        pylint_names={
            str(rule["code"]): str(rule["name"])
            for rule in rules
            if str(rule.get("linter")) == "Pylint"
        },
    )


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
    parser, problem = _read_ini(root, ".bandit")
    if parser is None or not parser.has_section("bandit"):
        return ToolConfig(refused=problem)
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


__all__ = [
    "ToolConfig",
    "bandit_config",
    "config_text",
    "excluded",
    "nosec_silences",
    "ruff_config",
    "ruff_rule_table",
]
