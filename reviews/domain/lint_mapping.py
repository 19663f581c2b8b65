"""A repository's flake8 and pylint settings read as ruff rule selectors (pure).

A project that lints with flake8 has said which rules it follows; ruff implements most of them
under the same codes (pycodestyle, pyflakes, mccabe and plugins such as bugbear `B`). Its
options map as flake8 applies them:

- `select` (flake8's own default when absent: E, F, W, C90) plus `extend-select`; `ignore`
  (flake8's default list when absent) plus `extend-ignore`. Ruff resolves the two lists like
  flake8 does: the more specific selector wins, so `ignore B` with `extend-select B006` keeps
  only B006.
- mccabe (C90) reports only when `max-complexity` is set; `max-line-length`,
  `max-doc-length`, `per-file-ignores` and `exclude` carry over.
- Selectors ruff does not know (W503, a plugin ruff lacks) are dropped and named, so ruff does
  not refuse the whole selection for one code.

Quorum's correctness rules join the selection (undefined names, syntax errors, bugbear, pylint
errors) unless the project ignores them. `asked` records what the project named itself: in test
code, bugbear and style findings are reported only for rules the project asked for.

pylint's `disable` list maps onto ruff's `PL` rules by code (`E0101` is `PLE0101`) or by name
(ruff names its pylint rules after pylint's message symbols).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

FLAKE8_DEFAULT_SELECT = ("E", "F", "W", "C90")
FLAKE8_DEFAULT_IGNORE = ("E121", "E123", "E126", "E226", "E24", "E704", "W503", "W504")
#: pylint's message categories as ruff's PL sub-prefixes (I and F have no ruff rules).
_PYLINT_CATEGORIES = {"C": "PLC", "R": "PLR", "W": "PLW", "E": "PLE"}
_PYLINT_CODE = re.compile(r"^([CRWE])(\d{4})$")
_SPLIT = re.compile(r"[\s,]+")
_COMMENT = re.compile(r"(?:^|\s)[#;].*$")
MAX_LINE_LENGTH = 320  # ruff's own limit


@dataclass(frozen=True)
class RuleTable:
    """What ruff knows: its rule codes, its linters' prefixes (with pylint's and pycodestyle's
    categories), and pylint's message symbols by ruff code."""

    codes: frozenset[str]
    prefixes: frozenset[str]
    pylint_names: Mapping[str, str] = field(default_factory=dict)

    def selectors(self, selector: str) -> tuple[str, ...]:
        """`selector` as ruff selectors: itself when ruff knows it, the linters it abbreviates
        (flake8's `C` is mccabe C90 and comprehensions C4), or nothing."""
        s = selector.strip().upper()
        if not s or not re.fullmatch(r"[A-Z]+\d*", s):
            return ()
        if s in self.prefixes or s in self.codes:
            return (s,)
        for prefix in self.prefixes:
            rest = s[len(prefix) :]
            if prefix and s.startswith(prefix) and rest.isdigit():
                return (s,) if any(code.startswith(s) for code in self.codes) else ()
        wider = sorted(
            p for p in self.prefixes if p.startswith(s) and p[len(s) :].isdigit() and p != s
        )
        return tuple(wider)


@dataclass(frozen=True)
class Flake8Options:
    """The options of a `[flake8]` section that change which findings are reported.
    None: the option is absent (flake8's default applies)."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] | None = None
    extend_ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    max_line_length: int | None = None
    max_doc_length: int | None = None
    max_complexity: int | None = None
    exclude: tuple[str, ...] = ()


@dataclass(frozen=True)
class RuffSelection:
    """Command-line arguments for ruff (used with `--isolated`), the selectors the project
    named itself, and the ones ruff does not know."""

    args: tuple[str, ...]
    asked: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()

    def asks_for(self, code: str) -> bool:
        return any(code.upper().startswith(s) for s in self.asked)


def split_list(value: str | None) -> tuple[str, ...]:
    """A flake8 list option: comma or whitespace separated, comments removed."""
    if value is None:
        return ()
    lines = (_COMMENT.sub("", line) for line in value.splitlines())
    return tuple(part for line in lines for part in _SPLIT.split(line) if part)


def parse_per_file_ignores(value: str | None) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`path: CODES` pairs as flake8 reads them (newlines, commas or spaces between them)."""
    pairs: list[tuple[str, list[str]]] = []
    for token in split_list(value):
        path, colon, codes = token.partition(":")
        if colon:
            if path:
                pairs.append((path, []))
            token = codes
            if not token:
                continue
        if pairs:
            pairs[-1][1].append(token)
    return tuple((path, tuple(codes)) for path, codes in pairs if codes)


def _number(value: str | None) -> int | None:
    try:
        number = int(split_list(value)[0]) if value else None
    except (ValueError, IndexError):
        return None
    return number if number is None or number > 0 else None


def flake8_options(section: Mapping[str, str]) -> Flake8Options:
    """A `[flake8]` INI section (keys with `-` or `_`, as flake8 accepts both)."""
    options = {key.replace("_", "-").lower(): value for key, value in section.items()}

    def listed(name: str) -> tuple[str, ...] | None:
        return split_list(options[name]) if name in options else None

    return Flake8Options(
        select=listed("select"),
        extend_select=listed("extend-select") or (),
        ignore=listed("ignore"),
        extend_ignore=listed("extend-ignore") or (),
        per_file_ignores=parse_per_file_ignores(options.get("per-file-ignores")),
        max_line_length=_number(options.get("max-line-length")),
        max_doc_length=_number(options.get("max-doc-length")),
        max_complexity=_number(options.get("max-complexity")),
        exclude=(*(listed("exclude") or ()), *(listed("extend-exclude") or ())),
    )


def _known(table: RuleTable, selectors: Iterable[str]) -> tuple[list[str], list[str]]:
    kept: list[str] = []
    dropped: list[str] = []
    for selector in selectors:
        mapped = table.selectors(selector)
        if mapped:
            kept.extend(s for s in mapped if s not in kept)
        elif selector.strip() and selector.strip().upper() not in dropped:
            dropped.append(selector.strip().upper())
    return kept, dropped


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def flake8_selection(
    options: Flake8Options,
    table: RuleTable,
    quorum_rules: Sequence[str],
    extra_ignore: Sequence[str] = (),
) -> RuffSelection:
    """The ruff arguments that report what flake8 would, plus Quorum's correctness rules the
    project does not ignore."""
    selected = options.select if options.select is not None else FLAKE8_DEFAULT_SELECT
    wanted = [*selected, *options.extend_select, *quorum_rules]
    select, dropped = _known(table, wanted)
    if options.max_complexity is None:  # mccabe is silent without a threshold
        select = [s for s in select if not s.startswith("C9")]
    # Security is bandit's (reviews/agents/bandit_analyzer.py): never selected through ruff.
    select = [s for s in select if not re.fullmatch(r"S\d*", s)]
    # flake8's own default ignores that ruff lacks (E121, W503…) are not the project's words.
    defaults, _ = _known(table, FLAKE8_DEFAULT_IGNORE if options.ignore is None else ())
    named, dropped_ignores = _known(
        table, [*(options.ignore or ()), *options.extend_ignore, *extra_ignore]
    )
    ignore = [*defaults, *(s for s in named if s not in defaults)]
    args = ["--select", ",".join(select)]
    if ignore:
        args += ["--ignore", ",".join(ignore)]
    if options.max_line_length:
        args += ["--line-length", str(min(options.max_line_length, MAX_LINE_LENGTH))]
    if options.max_doc_length:
        doc = min(options.max_doc_length, MAX_LINE_LENGTH)
        args += ["--config", f"lint.pycodestyle.max-doc-length = {doc}"]
    if options.max_complexity:
        args += ["--config", f"lint.mccabe.max-complexity = {options.max_complexity}"]
    per_file = []
    for path, codes in options.per_file_ignores:
        known, _ = _known(table, codes)
        if known:
            per_file.append(f"{_toml_string(path)} = [{', '.join(_toml_string(c) for c in known)}]")
    if per_file:
        args += ["--config", "lint.per-file-ignores = {" + ", ".join(per_file) + "}"]
    if options.exclude:
        args += ["--extend-exclude", ",".join(options.exclude)]
    explicit = [*(options.select or ()), *options.extend_select]
    asked, _ = _known(table, explicit)
    unknown = [d for d in [*dropped, *dropped_ignores] if d]
    return RuffSelection(args=tuple(args), asked=tuple(asked), dropped=tuple(unknown))


def pylint_ignores(disabled: Iterable[str], table: RuleTable) -> tuple[str, ...]:
    """pylint's disabled messages (codes, symbols, categories or `all`) as ruff selectors."""
    by_name = {name: code for code, name in table.pylint_names.items()}
    ignores: list[str] = []
    for raw in disabled:
        item = raw.strip()
        upper = item.upper()
        if upper == "ALL":
            selector = "PL"
        elif upper in _PYLINT_CATEGORIES:
            selector = _PYLINT_CATEGORIES[upper]
        elif match := _PYLINT_CODE.match(upper):
            selector = f"PL{match[1]}{match[2]}"
        else:
            selector = by_name.get(item.lower(), "")
        if selector and selector not in ignores and table.selectors(selector):
            ignores.append(selector)
    return tuple(ignores)


__all__ = [
    "FLAKE8_DEFAULT_IGNORE",
    "FLAKE8_DEFAULT_SELECT",
    "Flake8Options",
    "RuffSelection",
    "RuleTable",
    "flake8_options",
    "flake8_selection",
    "parse_per_file_ignores",
    "pylint_ignores",
    "split_list",
]
