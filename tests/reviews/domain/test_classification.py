"""Change classification for adaptive selection."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reviews.domain.classification import (
    _CONTENT_PATTERNS,
    ChangeStatus,
    FastExit,
    FileChange,
    RiskPattern,
    SizeClass,
    classify_change,
    detect_risks,
    is_formatting_only,
    iter_changed_lines,
    size_class,
)


def _diff(path: str, removed: list[str], added: list[str], start: int = 10) -> str:
    lines = [
        f"diff --git a/{path} b/{path}",
        f"--- a/{path}",
        f"+++ b/{path}",
        f"@@ -{start},{len(removed) + 1} +{start},{len(added) + 1} @@",
        " context",
    ]
    lines += [f"-{line}" for line in removed] + [f"+{line}" for line in added]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("files", "lines", "expected"),
    [
        (1, 1, SizeClass.TRIVIAL),
        (2, 49, SizeClass.TRIVIAL),
        (2, 50, SizeClass.NORMAL),
        (1, 400, SizeClass.NORMAL),
        (3, 5, SizeClass.NORMAL),
        (10, 900, SizeClass.NORMAL),
        (11, 11, SizeClass.LARGE),
    ],
)
def test_it_sizes_changes(files: int, lines: int, expected: SizeClass) -> None:
    """trivial = 1-2 files and < 50 lines; 1-2 files with ≥ 50 lines count as normal."""
    assert size_class(files, lines) is expected


def test_it_numbers_changed_lines_per_file() -> None:
    """Added lines carry new-file numbers, removed lines old-file numbers."""
    changed = list(iter_changed_lines(_diff("a.py", ["old"], ["new", "newer"], start=7)))
    assert [(c.path, c.line, c.sign, c.text) for c in changed] == [
        ("a.py", 8, "-", "old"),
        ("a.py", 8, "+", "new"),
        ("a.py", 9, "+", "newer"),
    ]


def test_it_fast_exits_docs_only_and_empty_changes() -> None:
    """Documentation-only and empty changes need no reviewer."""
    docs = [FileChange("README.md", 3, 1), FileChange("docs/setup.rst", 10, 0)]
    assert classify_change(docs, _diff("README.md", ["x"], ["password = y"])).fast_exit is (
        FastExit.DOCS_ONLY
    )
    assert classify_change([], "").fast_exit is FastExit.EMPTY


def test_it_fast_exits_formatting_only_changes() -> None:
    """Whitespace-only edits fast-exit; Python re-indentation does not (it is syntax)."""
    js = _diff("app.js", ["if(a){run( x )}"], ["if (a) {", "  run(x)", "}"])
    assert classify_change([FileChange("app.js", 3, 1)], js).fast_exit is FastExit.FORMATTING_ONLY
    spaced = _diff("a.py", ["x=foo( 1,2 )  "], ["x = foo(1, 2)"])
    assert is_formatting_only(spaced)
    dedented = _diff("a.py", ["        return x"], ["    return x"])
    assert not is_formatting_only(dedented)
    assert not is_formatting_only(_diff("a.py", ["x = 1"], ["x = 2"]))
    assert not is_formatting_only("")


@pytest.mark.parametrize(
    ("path", "line", "pattern"),
    [
        ("app/views.py", "request.session['uid'] = user.id", RiskPattern.AUTH),
        ("app/views.py", 'cursor.execute("SELECT * FROM t WHERE id=%s" % x)', RiskPattern.SQL),
        ("app/views.py", "qs = Order.objects.filter(owner=user)", RiskPattern.SQL),
        ("app/views.py", "digest = hashlib.md5(data).hexdigest()", RiskPattern.CRYPTO),
        ("app/views.py", "if not user.has_perm('app.delete'):", RiskPattern.PERMISSIONS),
        ("app/views.py", 'API_KEY = "sk-live-123"', RiskPattern.SECRETS),
        (
            "app/views.py",
            "requests.post(url, json={'email': user.email})",
            RiskPattern.EXTERNAL_CALLS,
        ),
        ("app/views.py", "client = anthropic.Anthropic()", RiskPattern.LLM),
    ],
)
def test_it_detects_high_risk_content_with_its_location(
    path: str, line: str, pattern: RiskPattern
) -> None:
    """Each high-risk pattern is found in changed lines, with path and line number."""
    change = classify_change([FileChange(path, 1, 0)], _diff(path, [], [line], start=20))
    matches = [m for m in change.risks if m.pattern is pattern]
    assert matches, change.risks
    assert matches[0].where == f"{path}:21"  # the hunk starts at 20 with one context line
    assert change.high_risk


def test_it_detects_risky_paths_and_stays_quiet_on_plain_code() -> None:
    """A file under auth/ is risky by its path; a plain arithmetic change is not."""
    risky = classify_change(
        [FileChange("app/auth/backends.py", 1, 1)],
        _diff("app/auth/backends.py", ["a = 1"], ["a = 2"]),
    )
    assert RiskPattern.AUTH in risky.risk_patterns
    assert any(m.line is None and m.where == "app/auth/backends.py" for m in risky.risks)
    plain = classify_change(
        [FileChange("app/maths.py", 1, 1)],
        _diff("app/maths.py", ["total = a + b"], ["total = a + b + c"]),
    )
    assert not plain.high_risk
    assert plain.size is SizeClass.TRIVIAL


def test_it_reads_domain_signals() -> None:
    """Data access, hot paths, new modules and public interfaces are detected."""
    changes = [
        FileChange("app/models.py", 5, 0),
        FileChange("app/new_module.py", 20, 0, status=ChangeStatus.ADDED),
        FileChange("app/util.py", 1, 1),
    ]
    diff = _diff("app/util.py", ["def helper(a):"], ["def helper(a, b):"])
    change = classify_change(changes, diff, hot_spots={"app/util.py"})
    assert change.touches_data_access
    assert change.touches_hot_path
    assert change.adds_or_moves_modules
    assert change.changes_public_interface
    quiet = classify_change(
        [FileChange("app/util.py", 1, 1)], _diff("app/util.py", ["    x = 1"], ["    x = 2"])
    )
    assert not (
        quiet.touches_data_access
        or quiet.touches_hot_path
        or quiet.adds_or_moves_modules
        or quiet.changes_public_interface
    )


def test_a_deleted_files_lines_keep_its_path_and_anchor_no_risk() -> None:
    """`+++ /dev/null` is not a path: the removed lines belong to the file the `---` line
    named, and a file that is gone from the head anchors no risk at a line."""
    deleted = "\n".join(
        [
            "diff --git a/app/run.py b/app/run.py",
            "deleted file mode 100644",
            "--- a/app/run.py",
            "+++ /dev/null",
            "@@ -1,2 +0,0 @@",
            "-import hashlib",
            "-digest = hashlib.md5(data)",
        ]
    )
    assert {c.path for c in iter_changed_lines(deleted)} == {"app/run.py"}
    change = classify_change([FileChange("app/run.py", 0, 2, ChangeStatus.DELETED)], deleted)
    assert not any(m.line is not None for m in change.risks), change.risks
    assert "/dev/null" not in str(change.risks)
    # The same lines in a file that stays are a risk at their line.
    kept = classify_change(
        [FileChange("app/run.py", 0, 2)], deleted.replace("+++ /dev/null", "+++ b/app/run.py")
    )
    assert any(m.where == "app/run.py:2" for m in kept.risks), kept.risks


# A match of every alternative of every content pattern, written as code writes it; what the
# needles must never miss.
_RISKY_WORDS = [
    *("authenticate", "login", "logout", "sessions", "session_id", "jwt", "oauth2", "bearer"),
    *("access_token", "refresh_token", "csrf_token", "set_cookie"),
    *("select a from b", "insert into t", "update t set", "delete from t", ".raw(", ".extra("),
    *("RawSQL", "cursor()", ".execute(", ".executemany(", ".objects.", ".filter(", ".exclude("),
    *(".annotate(", ".aggregate(", ".select_related(", ".prefetch_related("),
    *("hashlib", "hmac", "cryptography", "Crypto", "cipher_text", "encrypted", "decrypt", "aes"),
    *("rsa", "ecdsa", "md5", "sha1", "sha256", "bcrypt", "argon2", "pbkdf2_hmac", "nonce"),
    *("signing", "permission", "has_perm", "is_staff", "is_superuser", "authorized", "acl"),
    *("rbac", "roles", "access_control", "PermissionDenied", "Forbidden", "login_required"),
    *("api_key", "secret", "password", "passwd", "credential", "private-key", "token ="),
    *("requests.post", "httpx.", "aiohttp", "urlopen", "urllib", "fetch(", "axios"),
    *("send_mail", "smtplib", "webhooks", "openai", "anthropic", "llm_client", "prompts"),
    *("chat.completions", "messages.create", "langchain", "embeddings"),
    # Case-insensitive matching knows equivalences lower-casing does not: a long s, a dotless i.
    *("ſession", "ıogin"),
]


def _risks_searched_line_by_line(diff: str) -> set[tuple]:
    return {
        (pattern, line.line, found.group(0))
        for line in iter_changed_lines(diff)
        for pattern, regex in _CONTENT_PATTERNS.items()
        if (found := regex.search(line.text))
    }


def _risks_found(texts: list[str]) -> tuple[set[tuple], set[tuple]]:
    diff = _diff("app/code.py", [], texts)
    change = FileChange(path="app/code.py", added=len(texts), removed=0)
    found = {(r.pattern, r.line, r.evidence) for r in detect_risks([change], diff) if r.line}
    return found, _risks_searched_line_by_line(diff)


def test_every_risky_word_is_found_as_when_every_line_is_searched() -> None:
    found, expected = _risks_found(
        [variant for word in _RISKY_WORDS for variant in (word, word.upper(), word.title())]
    )
    assert len(expected) >= 3 * len(_RISKY_WORDS) - 10  # the words are risky
    assert found == expected


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from([*_RISKY_WORDS, " ", "_", ".", "(", "x", "=", "K", "é"]), max_size=6
        )
        .map("".join)
        .flatmap(lambda line: st.sampled_from([line, line.upper(), line[1:], line[:-1]])),
        min_size=1,
        max_size=12,
    )
)
def test_risky_lines_are_found_as_if_every_line_were_searched(texts: list[str]) -> None:
    """detect_risks searches only the lines holding a needle: it finds what searching every
    changed line with every pattern finds."""
    found, expected = _risks_found(texts)
    assert found == expected
