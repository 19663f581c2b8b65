"""The repository's JavaScript/TypeScript lint configuration, as oxlint runs it.

Oxlint implements most of ESLint's core rules and its common plugins under the same names, so a
project's choices carry over: its `.oxlintrc.json` as it is; else the rules its ESLint
configuration (`.eslintrc.json`, `.eslintrc`, `package.json` `eslintConfig`, or a flat
`eslint.config.*`) or its Biome configuration (`biome.json`) turns off or on. A flat config is
JavaScript: it is read as text (rule names with `"off"`, `0`, `"warn"`, `"error"`), never run.

Quorum always writes the configuration oxlint receives (a JSON file outside the checkout) so
oxlint never picks up a file of the checkout by itself: a repository's `.oxlintrc.json` is
copied only when it loads no JavaScript plugins and extends nothing outside the checkout.
Without any configuration, Quorum's default is oxlint's correctness rules, less a few that
judge style more than behaviour.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviews.agents.tool_config import config_text

#: Correctness rules that say more about style than behaviour: off in Quorum's default.
QUIET_BY_DEFAULT = (
    "no-useless-escape",
    "no-useless-rename",
    "no-extra-boolean-cast",
    "no-unused-expressions",
    "no-control-regex",
    "no-empty-pattern",
    "no-irregular-whitespace",
    "no-unused-labels",
    "no-useless-catch",
)
# unicorn's correctness rules guess at intent (fetch options, thenables): not by default.
DEFAULT_PLUGINS = ("eslint", "typescript", "oxc")
ESLINT_FILES = (".eslintrc.json", ".eslintrc")
FLAT_FILES = (
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    "eslint.config.mts",
)
BIOME_FILES = ("biome.json", "biome.jsonc")

_LEVELS = {"off": "off", "0": "off", "warn": "warn", "1": "warn", "error": "error", "2": "error"}
# `"rule-name": "off"`, `'@typescript-eslint/x': ["error", {...}]`, `eqeqeq: 2` in a flat config.
_FLAT_RULE = re.compile(
    r"""(?P<q>["']?)(?P<name>(?:@[\w-]+/)?[\w-]+(?:/[\w-]+)?)(?P=q)\s*:\s*\[?\s*"""
    r"""(?:["'](?P<word>off|warn|error)["']|(?P<num>[012])\b)"""
)
_BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_LINE_COMMENT = re.compile(r"(?m)(?<![:\"'])//.*$")


@dataclass(frozen=True)
class JsLintConfig:
    """The configuration oxlint gets (a JSON document) and where it came from."""

    document: dict[str, Any]
    source: str = ""  # the repository's file, "" for Quorum's default
    kind: str = ""  # oxlint, eslint, eslint flat config, biome
    refused: str = ""
    rules_set: tuple[str, ...] = field(default=())  # rules the project named itself

    def asks_for(self, rule: str) -> bool:
        return self.kind == "oxlint" or rule in self.rules_set

    def describe(self, changed: tuple[str, ...] = ()) -> str:
        if not self.source:
            note = "oxlint: Quorum's default rules (correctness)"
            return note + (f" ({self.refused})" if self.refused else "")
        note = f"oxlint: the repository's {self.kind} configuration ({self.source})"
        if self.kind != "oxlint":
            note += f", {len(self.rules_set)} rule setting(s) mapped onto oxlint's"
        if self.source in changed:
            note += "; the change edits this configuration"
        return note


def default_document() -> dict[str, Any]:
    return {
        "plugins": list(DEFAULT_PLUGINS),
        "categories": {"correctness": "warn"},
        "rules": {
            **dict.fromkeys(QUIET_BY_DEFAULT, "off"),
            # `const {a, ...rest} = x` leaves out `a` on purpose (ESLint's XO and Airbnb agree).
            # A leading underscore says "unused on purpose"; options replace oxlint's defaults.
            "no-unused-vars": [
                "warn",
                {
                    "ignoreRestSiblings": True,
                    # A handler's signature is its contract (Express counts the arguments).
                    "args": "none",
                    "argsIgnorePattern": "^_",
                    "varsIgnorePattern": "^_",
                    "caughtErrorsIgnorePattern": "^_",
                },
            ],
        },
    }


def _json(text: str) -> Any:
    """JSON, or JSON with comments and trailing commas (jsonc), or None."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    stripped = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", text))
    stripped = re.sub(r",(\s*[}\]])", r"\1", stripped)
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def oxlint_rule_name(eslint_name: str) -> str:
    """An ESLint rule name as oxlint spells it (`@typescript-eslint/x` is `typescript/x`)."""
    name = eslint_name.strip()
    if name.startswith("@typescript-eslint/"):
        return "typescript/" + name.split("/", 1)[1]
    if name.startswith("@"):
        return name[1:]
    return name


def _level(value: Any) -> str | None:
    if isinstance(value, list) and value:
        value = value[0]
    if isinstance(value, dict):
        value = value.get("level")
    return _LEVELS.get(str(value).strip().lower()) if value is not None else None


def _with_rules(rules: dict[str, Any]) -> dict[str, Any]:
    document = default_document()
    document["rules"] = {**document["rules"], **rules}
    return document


def eslint_rules(config: Any) -> dict[str, Any]:
    """The rule settings of an ESLint JSON configuration (top level and `overrides`): the
    level, with the rule's options when it has them."""
    found: dict[str, Any] = {}
    if not isinstance(config, dict):
        return found
    for table in [config, *[o for o in config.get("overrides") or () if isinstance(o, dict)]]:
        for name, value in (table.get("rules") or {}).items():
            level = _level(value)
            if level is None:
                continue
            options = value[1:] if isinstance(value, list) and level != "off" else []
            found[oxlint_rule_name(str(name))] = [level, *options] if options else level
    return found


def flat_config_rules(text: str) -> dict[str, str]:
    """The rule levels written literally in a flat config's source (it is never run)."""
    source = _LINE_COMMENT.sub("", _BLOCK_COMMENT.sub("", text))
    found: dict[str, str] = {}
    for match in _FLAT_RULE.finditer(source):
        name = match["name"]
        if "-" not in name and "/" not in name and name not in ("eqeqeq", "curly", "camelcase"):
            continue  # `files: …`, `level: …`: a key, not a rule
        level = _LEVELS[match["word"] or match["num"]]
        found[oxlint_rule_name(name)] = level
    return found


def _kebab(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def biome_rules(config: Any) -> dict[str, str]:
    """Biome's rule levels (`linter.rules.<group>.<ruleName>`) under ESLint's names where the
    two agree (`noDebugger` is `no-debugger`)."""
    found: dict[str, str] = {}
    rules = ((config or {}).get("linter") or {}).get("rules") if isinstance(config, dict) else None
    if not isinstance(rules, dict):
        return found
    for group in rules.values():
        if not isinstance(group, dict):
            continue
        for name, value in group.items():
            level = _level(value)
            if level is not None and level != "info":
                found[_kebab(str(name))] = level
    return found


def _oxlintrc(root: Path) -> JsLintConfig | None:
    for name in (".oxlintrc.json", "oxlintrc.json"):
        text, problem = config_text(root, name)
        if problem:
            return JsLintConfig(default_document(), refused=problem)
        if text is None:
            continue
        document = _json(text)
        if not isinstance(document, dict):
            return JsLintConfig(default_document(), refused=f"{name} is not a JSON object")
        if document.get("jsPlugins"):
            return JsLintConfig(default_document(), refused=f"{name} loads JavaScript plugins")
        for extended in document.get("extends") or ():
            return JsLintConfig(
                default_document(), refused=f"{name} extends another file ({str(extended)[:60]})"
            )
        return JsLintConfig(document, source=name, kind="oxlint")
    return None


def js_lint_config(root: Path) -> JsLintConfig:
    """The first configuration found: oxlint's, ESLint's (JSON, package.json, flat), Biome's;
    else Quorum's default."""
    if (own := _oxlintrc(root)) is not None:
        return own
    problems = []
    candidates: list[tuple[str, str]] = [(n, "eslint") for n in ESLINT_FILES]
    candidates += [("package.json", "eslint")]
    candidates += [(n, "eslint flat config") for n in FLAT_FILES]
    candidates += [(n, "biome") for n in BIOME_FILES]
    for name, kind in candidates:
        text, problem = config_text(root, name)
        if problem:
            problems.append(problem)
        if text is None:
            continue
        if kind == "eslint flat config":
            rules = flat_config_rules(text)
        else:
            parsed = _json(text)
            if parsed is None:
                problems.append(f"{name} is not JSON")
                continue
            if name == "package.json":
                # ESLint's own key, or XO's (an ESLint wrapper with the same rule format).
                key = next((k for k in ("eslintConfig", "xo") if k in (parsed or {})), None)
                if not isinstance(parsed, dict) or key is None:
                    continue
                kind = "eslint" if key == "eslintConfig" else "xo"
                parsed = parsed[key]
            rules = biome_rules(parsed) if kind == "biome" else eslint_rules(parsed)
        return JsLintConfig(_with_rules(rules), source=name, kind=kind, rules_set=tuple(rules))
    return JsLintConfig(default_document(), refused="; ".join(problems))


__all__ = [
    "JsLintConfig",
    "biome_rules",
    "default_document",
    "eslint_rules",
    "flat_config_rules",
    "js_lint_config",
    "oxlint_rule_name",
]
