"""Quorum's ast-grep rules, each with a case it must report and a near miss it must not (the real
ast-grep binary from PyPI, on a real git change)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reviews.agents.pattern_analyzer import RULES_CONFIG, run_patterns
from reviews.domain.nodes import Accepted, parse_node_payload
from reviews.sources.diffs import parse_unified_diff
from tests.fakes.gitrepo import GitRepo

# rule id → (file, a line it reports, a line it must not report). Each line sits in a body
# that parses in its language.
CASES: dict[str, tuple[str, str, str]] = {
    "go-tls-verification-off": (
        "client.go",
        "\tcfg := &tls.Config{InsecureSkipVerify: true}",
        "\tcfg := &tls.Config{InsecureSkipVerify: insecureFlag}",
    ),
    "go-sql-built-from-strings": (
        "store.go",
        "\trows, err := db.Query(fmt.Sprintf(\"SELECT * FROM users WHERE name = '%s'\", name))",
        '\trows, err := db.Query("SELECT * FROM users WHERE name = $1", name)',
    ),
    "go-shell-runs-built-command": (
        "run.go",
        '\tout, err := exec.Command("sh", "-c", "tar czf "+name).Output()',
        '\tout, err := exec.Command("tar", "czf", name).Output()',
    ),
    "go-append-result-dropped": (
        "list.go",
        "\tappend(items, item)",
        "\titems = append(items, item)",
    ),
    "rust-tls-verification-off": (
        "src/client.rs",
        "    let client = Client::builder().danger_accept_invalid_certs(true).build()?;",
        "    let client = Client::builder().danger_accept_invalid_certs(false).build()?;",
    ),
    "rust-sql-built-from-strings": (
        "src/store.rs",
        "    sqlx::query(&format!(\"SELECT * FROM users WHERE name = '{}'\", name)).fetch_all(&pool);",
        '    sqlx::query("SELECT * FROM users WHERE name = $1").bind(name).fetch_all(&pool);',
    ),
    "rust-shell-runs-built-command": (
        "src/run.rs",
        '    Command::new("sh").arg("-c").arg(line).status()?;',
        '    Command::new("sh").arg("-c").arg("make all").status()?;',
    ),
    "java-sql-built-from-strings": (
        "src/Store.java",
        '    rs = st.executeQuery("SELECT * FROM users WHERE name = \'" + name + "\'");',
        '    rs = st.executeQuery("SELECT * FROM users WHERE name = ?");',
    ),
    "java-shell-runs-built-command": (
        "src/Run.java",
        '    new ProcessBuilder("sh", "-c", line).start();',
        '    new ProcessBuilder("make", "all").start();',
    ),
    "java-hostname-verification-off": (
        "src/Client.java",
        "    conn.setHostnameVerifier((host, session) -> true);",
        "    conn.setHostnameVerifier(verifier);",
    ),
    "java-unsafe-deserialization": (
        "src/Load.java",
        "    Object state = new ObjectInputStream(in).readObject();",
        "    Object state = mapper.readValue(in, State.class);",
    ),
    "java-string-compared-by-reference": (
        "src/Role.java",
        '    if (role == "admin") { grant(); }',
        "    if (role == null) { grant(); }",
    ),
    "js-tls-verification-off": (
        "src/agent.ts",
        "const agent = new https.Agent({ rejectUnauthorized: false });",
        "const agent = new https.Agent({ rejectUnauthorized: true });",
    ),
    "js-shell-runs-built-command": (
        "src/run.js",
        "exec(`git log ${branch}`);",
        'execFile("git", ["log", branch]);',
    ),
    "js-sql-built-from-strings": (
        "src/store.ts",
        "await db.query(`SELECT * FROM users WHERE id = ${id}`);",
        "await db.query(sql`SELECT * FROM users WHERE id = ${id}`);",
    ),
}


def _wrap(path: str, line: str) -> str:
    if path.endswith(".go"):
        return f"package main\n\nfunc f() {{\n{line}\n}}\n"
    if path.endswith(".rs"):
        return f"fn f() -> Result<(), E> {{\n{line}\n    Ok(())\n}}\n"
    if path.endswith(".java"):
        return f"class C {{\n  void f() throws Exception {{\n{line}\n  }}\n}}\n"
    return f"{line}\n"


def _rule_ids() -> set[str]:
    ids = set()
    for rules in (RULES_CONFIG.parent / "rules").glob("*.yml"):
        ids |= {doc["id"] for doc in yaml.safe_load_all(rules.read_text()) if doc}
    return ids


def test_every_rule_has_a_case() -> None:
    assert _rule_ids() == set(CASES)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory):
    """One change adds every positive line (in `bad/`) and every near miss (in `good/`)."""
    repo = GitRepo.init(tmp_path_factory.mktemp("patterns") / "repo")
    base = repo.commit("base", {"README.md": "x\n"})
    files = {}
    for path, bad, good in CASES.values():
        files[f"bad/{path}"] = _wrap(path, bad)
        files[f"good/{path}"] = _wrap(path, good)
    files["tests/run_test.go"] = _wrap("run_test.go", CASES["go-shell-runs-built-command"][1])
    files["tests/list_test.go"] = _wrap("list_test.go", CASES["go-append-result-dropped"][1])
    head = repo.commit("head", files)
    result = run_patterns(repo.path, parse_unified_diff(repo.git("diff", base, head)))
    assert result.ok, result.error
    return result


@pytest.mark.parametrize("rule", sorted(CASES))
def test_the_rule_reports_its_case_and_not_the_near_miss(results, rule: str) -> None:
    path = CASES[rule][0]
    where = {f.payload["anchor"]["path"] for f in results.findings if f.evidence["rule"] == rule}
    assert f"bad/{path}" in where
    assert f"good/{path}" not in where


def test_security_rules_carry_their_class_floor_and_correctness_is_p2(results) -> None:
    by_rule = {
        f.evidence["rule"]: f
        for f in results.findings
        if f.payload["anchor"]["path"].startswith("bad/")
    }
    sql = by_rule["go-sql-built-from-strings"]
    assert sql.payload["priority"] == "P1" and sql.payload["triage"]["category"] == "security"
    assert "Class: SQL injection." in sql.payload["body"]
    assert sql.evidence["high_precision"] is False  # it can hold, never block alone
    assert by_rule["go-append-result-dropped"].payload["priority"] == "P2"
    for finding in results.findings:
        assert isinstance(parse_node_payload(finding.payload), Accepted)


def test_in_test_code_security_rules_are_silent_and_correctness_is_p3(results) -> None:
    in_tests = {
        f.evidence["rule"]: f.payload["priority"]
        for f in results.findings
        if f.payload["anchor"]["path"].startswith("tests/")
    }
    assert in_tests == {"go-append-result-dropped": "P3"}
    assert any("1 match of security rules in test code" in n for n in results.notes)


def test_a_repository_sgconfig_is_never_used(tmp_path: Path) -> None:
    """A checkout's own ast-grep configuration (which could load a parser library) is ignored:
    Quorum's rules run, the repository's rule does not."""
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit(
        "base",
        {
            "sgconfig.yml": "ruleDirs: [rules]\n",
            "rules/any.yml": "id: everything\nlanguage: go\nrule: {kind: identifier}\n",
        },
    )
    head = repo.commit("head", {"main.go": _wrap("main.go", "\tx := 1\n\t_ = x")})
    result = run_patterns(repo.path, parse_unified_diff(repo.git("diff", base, head)))
    assert result.ok and not result.findings and result.files_checked == ("main.go",)


def test_a_command_choosing_between_literals_is_not_built_from_a_value(tmp_path: Path) -> None:
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", {"README.md": "x\n"})
    script = (
        "await exec(`echo \"changed=${changed ? 'true' : 'false'}\" >> $GITHUB_OUTPUT`);\n"
        "await exec(`git checkout ${branch}`);\n"
    )
    head = repo.commit("head", {"bin/release.js": script})
    result = run_patterns(repo.path, parse_unified_diff(repo.git("diff", base, head)))
    assert [f.payload["anchor"]["start_line"] for f in result.findings] == [2]
