"""Analyzer precision on real ruff and bandit runs: the repository's configuration, test code,
one finding per rule per file, defusing context and the high-precision list."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reviews.agents.analyzers import AnalyzerResult
from reviews.agents.bandit_analyzer import run_bandit
from reviews.agents.ruff_analyzer import run_ruff
from reviews.agents.secret_scan import run_secret_scan
from reviews.sources.diffs import parse_unified_diff
from tests.fakes.gitrepo import GitRepo


def _review(tmp_path: Path, files: dict[str, str], base_files: dict[str, str] | None = None):
    repo = GitRepo.init(tmp_path / "repo")
    base = repo.commit("base", base_files or {"README.md": "x\n"})
    head = repo.commit("head", files)
    changed = parse_unified_diff(repo.git("diff", base, head))
    return {
        r.reviewer: r
        for r in (
            run_ruff(repo.path, changed),
            run_bandit(repo.path, changed),
            run_secret_scan(repo.path, changed),
        )
    }


def _rules(result: AnalyzerResult) -> list[str]:
    return sorted(f.evidence["rule"] for f in result.findings)


def _line(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


PYPROJECT = """\
[project]
name = "shop"

[tool.ruff.lint]
select = ["F401", "E711"]

[tool.bandit]
skips = ["B101"]
"""

CODE = """\
import os
import json  # noqa: F401
import subprocess


def check(value, cmd):
    assert value, "a value is required"
    if value == None:
        return 1
    subprocess.call(cmd, shell=True)  # nosec B602
    subprocess.call(cmd + "x", shell=True)
    x = 1
    return os.sep
"""


def test_the_repository_configuration_decides_which_rules_report(tmp_path: Path) -> None:
    """Only the project's selected ruff rules and its non-skipped bandit tests report; a `# noqa`
    or `# nosec` line is silent; the coverage notes name the configuration."""
    results = _review(tmp_path, {"pyproject.toml": PYPROJECT, "app.py": CODE})
    ruff, bandit = results["ruff"], results["bandit"]
    # `json` is unused, but its line silences F401 with a noqa comment.
    assert _rules(ruff) == ["E711"], ruff.payloads
    assert "F841" not in _rules(ruff)  # ours reports the unused `x`; theirs does not select it
    assert "B101" not in _rules(bandit)
    shell_lines = [f.payload["anchor"]["start_line"] for f in bandit.findings]
    assert _line(CODE, "# nosec B602") not in shell_lines
    assert _line(CODE, 'cmd + "x"') in shell_lines
    assert any("pyproject.toml [tool.ruff]" in note for note in ruff.notes)
    assert any("pyproject.toml [tool.bandit]), skipping B101" in n for n in bandit.notes)
    assert any("the change edits this configuration" in n for n in bandit.notes)
    assert "1 match silenced by # nosec" in bandit.notes


def test_without_a_configuration_quorum_defaults_apply(tmp_path: Path) -> None:
    results = _review(tmp_path, {"app.py": CODE})
    assert "F841" in _rules(results["ruff"])
    assert "B101" in _rules(results["bandit"])
    assert results["ruff"].notes[0].startswith("ruff: Quorum's default rules")


def test_a_configuration_reaching_outside_the_checkout_is_refused(tmp_path: Path) -> None:
    """`extend` pointing outside the repository is not followed: defaults, and the note says
    why; a configuration ruff cannot use (a version pin) falls back the same way."""
    outside = {"ruff.toml": 'extend = "../../../etc/ruff.toml"\n', "app.py": CODE}
    ruff = _review(tmp_path / "a", outside)["ruff"]
    assert ruff.ok and "F841" in _rules(ruff)
    assert "extends a file outside the repository" in ruff.notes[0]
    pinned = {"ruff.toml": 'required-version = "==0.0.1"\n', "app.py": CODE}
    ruff = _review(tmp_path / "b", pinned)["ruff"]
    assert ruff.ok and "F841" in _rules(ruff)
    assert "ruff could not use ruff.toml" in ruff.notes[0]


FORTY_ASSERTS = "def test_totals():\n" + "".join(
    f"    assert {n} + 1 == {n + 1}\n" for n in range(40)
)


def test_test_code_is_not_reviewed_like_production_code(tmp_path: Path) -> None:
    """40 asserts in a test file and a fixture `SECRET_KEY = "dev"`: no assert finding, no
    credential finding for the fixture (the note counts it); the same shape as a live AWS key in
    settings.py stays P1 and high precision."""
    aws = "AKIA" + "Q7WE9RT2YU4IO6PA"
    results = _review(
        tmp_path,
        {
            "tests/test_totals.py": FORTY_ASSERTS,
            "tests/settings.py": 'SECRET_KEY = "dev"\n',
            "shop/settings.py": f'AWS_ACCESS_KEY_ID = "{aws}"\n',
        },
    )
    assert "B101" not in _rules(results["bandit"])
    assert "B105" not in _rules(results["bandit"])  # a test password is a fixture
    assert any("production-only rules in test code" in n for n in results["bandit"].notes)
    secrets = {f.payload["anchor"]["path"]: f for f in results["secrets"].findings}
    assert "tests/settings.py" not in secrets
    assert any("1 credential-shaped value(s) in test code" in n for n in results["secrets"].notes)
    live = secrets["shop/settings.py"]
    assert live.payload["priority"] in ("P0", "P1") and live.evidence["high_precision"] is True
    assert aws not in str(results["secrets"].payloads)


def test_a_live_key_in_test_code_stays_high(tmp_path: Path) -> None:
    token = "ghp_" + "Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b"
    finding = _review(tmp_path, {"tests/conftest.py": f'TOKEN = "{token}"\n'})["secrets"].findings
    assert [f.payload["priority"] for f in finding] == ["P1"]
    assert finding[0].evidence["high_precision"] is False  # test code: confirm before blocking


def test_repeated_hits_become_one_finding_listing_the_lines(tmp_path: Path) -> None:
    """Forty asserts in production code: one B101 finding anchored on the first, all lines
    listed in its body and evidence."""
    code = FORTY_ASSERTS.replace("def test_totals", "def totals")
    bandit = _review(tmp_path, {"shop/totals.py": code})["bandit"]
    asserts = [f for f in bandit.findings if f.evidence["rule"] == "B101"]
    assert len(asserts) == 1
    only = asserts[0]
    assert only.payload["anchor"]["start_line"] == 2
    assert only.evidence["lines"] == list(range(2, 42))
    assert "Also on lines 3, 4, 5" in only.payload["body"] and "(40 places" in only.payload["body"]
    assert any("40 matches reported as" in n for n in bandit.notes)


SIGNING = """\
import hashlib
import hmac


def _lazy_sha1(string=b""):
    return hashlib.sha1(string)


class SessionSigner:
    digest_method = staticmethod(_lazy_sha1)


def mac(key, message):
    return hmac.new(key, message, digestmod=hashlib.sha1).hexdigest()


def password_digest(password):
    return hashlib.sha1(password).hexdigest()


def run_fixed():
    import subprocess

    subprocess.call("ls -l", shell=True)
"""


def test_defusing_context_lowers_the_priority_with_the_reason(tmp_path: Path) -> None:
    """SHA-1 as an HMAC/signing digest is not P0: P3 with the reason; SHA-1 of a password
    stays high; a constant shell command does not take the injection floor."""
    bandit = _review(tmp_path, {"shop/signing.py": SIGNING})["bandit"]
    by_line: dict[int, dict[str, Any]] = {}
    for finding in bandit.findings:
        for line in finding.evidence["lines"]:
            by_line[line] = finding.payload
    signer = by_line[_line(SIGNING, "return hashlib.sha1(string)")]
    assert signer["priority"] == "P3" and "HMAC/signature" in signer["body"]
    assert "lowered because" in signer["reasoning"]
    password = by_line[_line(SIGNING, "hashlib.sha1(password)")]
    assert password["priority"] in ("P0", "P1")
    shell = by_line[_line(SIGNING, '"ls -l"')]
    assert shell["priority"] == "P3" and "constant string" in shell["body"]


TAINTED = """\
def search(request, cursor):
    term = request.GET["q"]
    cursor.execute("SELECT * FROM items WHERE name = '%s'" % term)  # nosec
"""


def test_a_nosec_cannot_silence_a_visible_injection(tmp_path: Path) -> None:
    """The high-precision list outranks a suppression comment: a request-fed SQL string is
    still reported, P0, and may block on its own."""
    bandit = _review(tmp_path, {"shop/views.py": TAINTED})["bandit"]
    sql = [f for f in bandit.findings if f.evidence["rule"] == "B608"]
    assert [f.payload["priority"] for f in sql] == ["P0"]
    assert sql[0].evidence["high_precision"] is True


SETTINGS_NOISE = """\
SESSION_KEY = "_auth_user_id"
EMAIL_HOST_PASSWORD = ""
ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
DB_PASSWORD = "Zq8#mW2!rT5x"


def describe(table):
    message = "SELECT postgis_lib_version() failed for %s" % table
    return message
"""


def test_names_that_sound_secret_need_values_that_look_secret(tmp_path: Path) -> None:
    """Known-good code's usual false alarms stay P3 (a key name, an empty default, a character
    set; a string that only mentions SELECT); a real-looking password stays P1."""
    results = _review(tmp_path, {"shop/settings.py": SETTINGS_NOISE})
    priorities: dict[int, set[str]] = {}
    for result in (results["bandit"], results["secrets"]):
        for finding in result.findings:
            for line in finding.evidence["lines"]:
                priorities.setdefault(line, set()).add(finding.payload["priority"])
    for needle in ("SESSION_KEY", "EMAIL_HOST_PASSWORD", "ALPHABET", "postgis_lib_version"):
        assert priorities.get(_line(SETTINGS_NOISE, needle), {"P3"}) <= {"P2", "P3"}, needle
    assert "P1" in priorities[_line(SETTINGS_NOISE, "DB_PASSWORD")]


def test_the_secret_scanner_reads_files_too_large_for_models(tmp_path: Path) -> None:
    """A file kept out of model prompts for its size is still scanned and counted as checked."""
    token = "ghp_" + "Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b"
    big = "".join(f"VALUE_{n} = {n}\n" for n in range(3_200)) + f'TOKEN = "{token}"\n'
    secrets = _review(tmp_path, {"shop/big.py": big})["secrets"]
    assert secrets.files_checked == ("shop/big.py",)
    assert [f.payload["anchor"]["start_line"] for f in secrets.findings] == [3_201]


DOCUMENTED = '''\
"""URL helpers.

    >>> parse("https://jo%40email.com:a%20secret@m\u00fcller.de/path")
    URL(user='jo@email.com', password='a secret')
"""


def login(password="a secret"):
    """Log in, e.g. login(password="hunter2-Xq9!"): never hard-code the real one."""
    return password

# The database in CI: postgres://postgres:postgres@localhost/test
ADMIN_URL = "postgres://admin:Zk8!vR2#qL5m@db.internal.acme:5432/app"
API_TOKEN = "<your-token>"
'''

WORKFLOW = """\
jobs:
  test:
    services:
      postgres:
        env:
          POSTGRES_PASSWORD: postgres
    env:
      DATABASE_URL: postgres://postgres:Hy7!kP2wQ9zX@localhost:5432/test
"""

CHANGELOG = "## 2.1\n\n- `connect(password=...)`: e.g. `https://user:Sx8!pass-Word@example.com`\n"


def test_documentation_ci_services_and_placeholders_are_not_credentials(tmp_path: Path) -> None:
    """Docstring and doctest examples, comments, a CI service's throw-away password, a
    changelog entry and a placeholder are not findings; a real-looking connection string in
    code still is, and without the "rotate it" advice a live format would get."""
    token = "ghp_" + "Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b"
    files = {
        "shop/urls.py": DOCUMENTED,
        ".github/workflows/ci.yml": WORKFLOW,
        "CHANGELOG.md": CHANGELOG,
        "docs/install.md": f"Set `GITHUB_TOKEN={token}` only in examples you never run.\n",
    }
    secrets = _review(tmp_path, files)["secrets"]
    where = {
        (f.payload["anchor"]["path"], line): f
        for f in secrets.findings
        for line in f.evidence["lines"]
    }
    assert set(where) == {
        ("shop/urls.py", _line(DOCUMENTED, "ADMIN_URL")),
        ("docs/install.md", 1),  # a live format counts even in documentation
    }
    code = where[("shop/urls.py", _line(DOCUMENTED, "ADMIN_URL"))].payload["body"]
    assert "Rotate" not in code
    assert "Rotate it" in where[("docs/install.md", 1)].payload["body"]


NARROWING = """\
try:
    import zstandard
except ImportError:
    zstandard = None


def _is_prepared(request):
    return hasattr(request, "prepared")


def send(request, level):
    assert zstandard is not None
    assert _is_prepared(request)
    assert isinstance(level, int)
    assert level > 0, "level must be positive"
    return zstandard.compress(request.body, level)
"""


def test_an_assert_that_narrows_a_type_is_not_b101_and_b101_swallows_nothing(tmp_path: Path):
    """Narrowing (`is not None`, a TypeGuard-like call, isinstance) is not reported; an assert
    that checks a value still is, with no swallowed-exception class."""
    bandit = _review(tmp_path, {"shop/codec.py": NARROWING})["bandit"]
    b101 = [f for f in bandit.findings if f.evidence["rule"] == "B101"]
    assert [f.evidence["lines"] for f in b101] == [[_line(NARROWING, "level > 0")]]
    assert "swallowed-exception" not in (b101[0].payload.get("tags") or {}).get(
        "defect_classes", []
    )
    assert any("narrowing a type" in note for note in bandit.notes)


LOCK = """{
  "packages": {
    "node_modules/commander": {
      "version": "14.0.3",
      "resolved": "https://registry.npmjs.org/commander/-/commander-14.0.3.tgz",
      "integrity": "sha512-ayVFHdtZ+hsq1t2Dy24wCmGXGe4q9Gu3smhLYALJrr473ZH27MsnSL+LKUlimp4BWJqMDMLmPpx/Q9R3OAlL4g=="
    }
  }
}
"""


def test_checksums_package_managers_write_are_not_credentials(tmp_path: Path) -> None:
    """A lock file's integrity hashes and a go.sum line held every commander.js release range
    as a committed credential; checksums anywhere are not one. A live token in a lock file
    still is."""
    token = "ghp_" + "Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b"
    files = {
        "package-lock.json": LOCK,
        "go.sum": "golang.org/x/text v0.14.0 h1:ScX5w1eTa3QqT8oi6+ziP7dTV1S2+ALU0bI+0zXKWiQ=\n",
        "vendor.json": '{"checksum": "9f2c1e4b7a3d5f6e8c0b2a4d6f8e0c2b4a6d8f0e2c4b6a8d0f2e4c6b8a0d2f4e"}\n',
        "yarn.lock": f'  resolved "https://x:{token}@registry.example.org/a.tgz"\n',
    }
    secrets = _review(tmp_path, files)["secrets"]
    assert [f.payload["anchor"]["path"] for f in secrets.findings] == ["yarn.lock"]


def test_a_credential_name_holding_nothing_is_not_a_finding(tmp_path: Path) -> None:
    settings = (
        "DEFAULTS = {\n    'UNAUTHENTICATED_USER': 'anon',\n    'UNAUTHENTICATED_TOKEN': None,\n}\n"
        'password = ""\n'
    )
    results = _review(tmp_path, {"api/settings.py": settings})
    assert not {"B105", "B106", "B107"} & set(_rules(results["bandit"]))
    assert any("credential rules on None or an empty string" in n for n in results["bandit"].notes)


def test_an_example_in_a_block_comment_is_documentation(tmp_path: Path) -> None:
    """A JSDoc example (no leading `*` on its lines) is documentation; the same assignment in
    code is a finding."""
    value = "f3Kq9xLmP2vR8sT1wZ"
    source = (
        "/**\nPass data to hooks.\n\n@example\n```\nconst api = ky.create({\n"
        f"  context: {{token: '{value}'}}\n}});\n```\n*/\n"
        f"export const client = {{token: '{value}'}};\n"
    )
    results = _review(tmp_path, {"source/options.ts": source})
    lines = [f.payload["anchor"]["start_line"] for f in results["secrets"].findings]
    assert lines == [_line(source, "export const client")]


def test_bugbear_habits_are_left_to_projects_that_ask(tmp_path: Path) -> None:
    module = "import warnings\n\n\ndef old():\n    warnings.warn('use new()')\n"
    quiet = _review(tmp_path / "default", {"lib/old.py": module})
    assert "B028" not in _rules(quiet["ruff"])
    asked = _review(
        tmp_path / "asked",
        {"lib/old.py": module},
        {"setup.cfg": "[flake8]\nextend-select = B028\n"},
    )
    assert "B028" in _rules(asked["ruff"])


def test_built_files_are_not_linted_and_hold_only_live_secrets(tmp_path: Path) -> None:
    """A bundle in dist/ and its source map repeat the sources: no lint finding there, and a
    credential-shaped name only when its value has a live format."""
    aws = "AKIA" + "Q7WE9RT2YU4IO6PA"
    bundle = (
        "import os\n\ndef f(x=[]):\n    return x == None\n"
        'isCredentialsSupported = "credentials"\n'
        f'AWS_ACCESS_KEY_ID = "{aws}"\n'
    )
    results = _review(
        tmp_path,
        {
            "dist/bundle.py": bundle,
            "dist/bundle.js.map": '{"sourcesContent": ["password = \\"k9Fq2LmZp8Xr\\""]}',
        },
    )
    assert not results["ruff"].findings and not results["bandit"].findings
    (secret,) = results["secrets"].findings
    assert (
        secret.payload["anchor"]["path"] == "dist/bundle.py" and secret.payload["priority"] == "P1"
    )
    assert any("built files" in n for n in results["secrets"].notes)


def test_a_name_that_sounds_secret_with_a_word_for_a_value_is_not_reported(tmp_path: Path) -> None:
    source = 'is_credentials_supported = "credentials"\napi_token = "Zq8Lm2Xr9Kp4Vt7N"\n'
    results = _review(tmp_path, {"lib/fetch.py": source})
    lines = [f.payload["anchor"]["start_line"] for f in results["secrets"].findings]
    assert lines == [2]
    assert any("does not look like one" in n for n in results["secrets"].notes)


def test_a_bandit_fix_says_what_to_change_not_what_was_matched(tmp_path: Path) -> None:
    source = (
        "import subprocess\n\n\ndef search(cursor, name):\n"
        "    cursor.execute(\"SELECT * FROM users WHERE name = '%s'\" % name)\n"
        "    try:\n        return 1\n    except Exception:\n        pass\n"
    )
    results = _review(tmp_path, {"shop/search.py": source})
    fixes = {f.evidence["rule"]: f.payload["fix"]["fix_prompt"] for f in results["bandit"].findings}
    assert "query parameters" in fixes["B608"]  # the SQL class's advice
    assert "log it" in fixes["B110"]  # the test's own entry
    for finding in results["bandit"].findings:
        message = finding.payload["title"].split(": ", 1)[1]
        assert message not in finding.payload["fix"]["fix_prompt"]
