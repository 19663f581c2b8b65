"""Oxlint as the offline reviewer of JavaScript and TypeScript: the real binary from PyPI on real
git changes, with Quorum's default and with the repository's ESLint, flat, Biome or oxlint
configuration."""

from __future__ import annotations

import json
from pathlib import Path

from reviews.agents.js_analyzer import rule_of, run_oxlint
from reviews.agents.js_lint_config import biome_rules, flat_config_rules, oxlint_rule_name
from reviews.domain.nodes import Accepted, parse_node_payload
from reviews.sources.diffs import parse_unified_diff
from tests.fakes.gitrepo import GitRepo

BASE_TS = """\
export function total(xs: number[]): number {
  if (xs.length === NaN) { return 0 }
  return xs.reduce((a, b) => a + b, 0);
}
"""
# Added: a NaN comparison (use-isnan), a misspelt typeof (valid-typeof), a debugger statement,
# and an escape that changes nothing (no-useless-escape: style, quiet by default).
ADDED_TS = """
export function mean(xs: number[]): number {
  const m = total(xs) / xs.length;
  if (m === NaN) { return 0 }
  if (typeof m === "nubmer") { debugger; }
  return Number("\\.5") + m;
}
"""
TEST_TS = """\
import { mean } from "../src/stats";
it("is not a number for nothing", () => {
  expect(mean([]) === NaN).toBe(false);
});
"""


def _run(tmp_path: Path, config: dict[str, str] | None = None):
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"src/stats.ts": BASE_TS, **(config or {})})
    head = repo.commit("head", {"src/stats.ts": BASE_TS + ADDED_TS, "test/stats.test.ts": TEST_TS})
    result = run_oxlint(repo.path, parse_unified_diff(repo.git("diff", base, head)))
    assert result.ok, result.error
    return result


def _rules(result, path: str = "src/stats.ts") -> dict[str, str]:
    return {
        f.evidence["rule"]: f.payload["priority"]
        for f in result.findings
        if f.payload["anchor"]["path"] == path
    }


def test_the_default_reports_correctness_on_added_lines_only(tmp_path: Path) -> None:
    result = _run(tmp_path)
    found = _rules(result)
    assert found == {"use-isnan": "P2", "valid-typeof": "P2", "no-debugger": "P2"}
    # The NaN comparison the base already had (line 2) is not the change's.
    lines = {f.payload["anchor"]["start_line"] for f in result.findings}
    assert 2 not in lines
    assert any("Quorum's default rules (correctness)" in n for n in result.notes)
    for finding in result.findings:
        assert isinstance(parse_node_payload(finding.payload), Accepted)


def test_in_test_code_a_finding_is_at_most_p3(tmp_path: Path) -> None:
    found = _rules(_run(tmp_path), "test/stats.test.ts")
    assert found == {"use-isnan": "P3"}


def test_an_eslint_json_configuration_switches_rules_off_and_on(tmp_path: Path) -> None:
    eslintrc = {
        "root": True,
        "rules": {"no-debugger": "off", "use-isnan": ["error"], "no-useless-escape": 2},
    }
    result = _run(tmp_path, {".eslintrc.json": json.dumps(eslintrc)})
    found = _rules(result)
    assert "no-debugger" not in found
    assert found["no-useless-escape"] == "P2"  # the project turned it on
    assert any("eslint configuration (.eslintrc.json)" in n for n in result.notes)


def test_a_flat_config_is_read_as_text_never_run(tmp_path: Path) -> None:
    witness = tmp_path / "flat-config-ran"
    flat = """\
import js from "@eslint/js";
// "valid-typeof": "error" in a comment is not a setting
export default [
  js.configs.recommended,
  { files: ["**/*.ts"], rules: { "valid-typeof": "off", 'no-debugger': 0 } },
];
require("fs").writeFileSync("WITNESS", "x");
""".replace("WITNESS", str(witness))
    result = _run(tmp_path, {"eslint.config.mjs": flat})
    assert set(_rules(result)) == {"use-isnan"}
    assert not witness.exists()
    assert flat_config_rules(flat) == {"valid-typeof": "off", "no-debugger": "off"}


def test_a_biome_configuration_maps_by_name(tmp_path: Path) -> None:
    biome = {"linter": {"rules": {"suspicious": {"noDebugger": "off"}}}}
    assert biome_rules(biome) == {"no-debugger": "off"}
    result = _run(tmp_path, {"biome.json": json.dumps(biome)})
    assert set(_rules(result)) == {"use-isnan", "valid-typeof"}
    assert any("biome configuration (biome.json)" in n for n in result.notes)


def test_an_oxlint_configuration_is_used_unless_it_loads_javascript(tmp_path: Path) -> None:
    own = {"rules": {"use-isnan": "off"}}
    result = _run(tmp_path / "own", {".oxlintrc.json": json.dumps(own)})
    assert "use-isnan" not in _rules(result)
    plugins = {"jsPlugins": ["./evil.js"], "rules": {"use-isnan": "off"}}
    refused = _run(tmp_path / "plugins", {".oxlintrc.json": json.dumps(plugins)})
    assert "use-isnan" in _rules(refused)
    assert any(".oxlintrc.json loads JavaScript plugins" in n for n in refused.notes)


def test_names_as_oxlint_spells_them() -> None:
    assert rule_of("eslint(no-debugger)") == "no-debugger"
    assert rule_of("typescript-eslint(no-explicit-any)") == "typescript/no-explicit-any"
    assert rule_of("eslint-plugin-unicorn(no-thenable)") == "unicorn/no-thenable"
    assert oxlint_rule_name("@typescript-eslint/no-unused-vars") == "typescript/no-unused-vars"


def test_a_change_without_javascript_runs_nothing(tmp_path: Path) -> None:
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"README.md": "x\n"})
    head = repo.commit("head", {"main.go": "package main\n"})
    result = run_oxlint(repo.path, parse_unified_diff(repo.git("diff", base, head)))
    assert result.ok and not result.findings and not result.files_checked


def test_xo_settings_in_package_json_and_rest_siblings(tmp_path: Path) -> None:
    """ky's layout: XO's rules in package.json; `const {a, ...rest} = x` leaves `a` out on
    purpose, which the default does not report either."""
    omit = "export function strip(o: {a: number; b: number}) {\n  const {a, ...rest} = o;\n  return rest;\n}\n"
    package = {"name": "ky", "xo": {"rules": {"no-debugger": "off"}}}
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"package.json": json.dumps(package)})
    head = repo.commit("head", {"src/omit.ts": omit + "debugger;\n"})
    result = run_oxlint(repo.path, parse_unified_diff(repo.git("diff", base, head)))
    assert result.ok and not result.findings
    assert any("xo configuration (package.json)" in n for n in result.notes)


def test_a_leading_underscore_marks_unused_on_purpose(tmp_path: Path) -> None:
    source = (
        "export const after = (_request: Request, response: Response) => response;\n"
        "export function unused(x: number) {\n  const y = x * 2;\n  return x;\n}\n"
    )
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"README.md": "x\n"})
    head = repo.commit("head", {"src/hooks.ts": source})
    result = run_oxlint(repo.path, parse_unified_diff(repo.git("diff", base, head)))
    assert [(f.evidence["rule"], f.payload["anchor"]["start_line"]) for f in result.findings] == [
        ("no-unused-vars", 3)
    ]
