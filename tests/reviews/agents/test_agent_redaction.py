"""Secret redaction: no planted secret survives, ordinary code is left alone, twice is once."""

from __future__ import annotations

import base64
import math
import re
import string
from collections import Counter

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from reviews.domain.redaction import redact

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64URL = ALNUM + "-_"


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def _chars(alphabet: str, size: int, max_size: int | None = None) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=size, max_size=max_size or size)


def _password() -> st.SearchStrategy[str]:
    # A realistic password: letters and at least one digit, with some punctuation.
    return st.builds(
        lambda a, d, b: a + d + b,
        _chars(string.ascii_letters, 3, 10),
        _chars(string.digits, 1, 3),
        _chars(ALNUM + "!#%&*+-./:;?@^_~", 0, 12),
    )


def _high_entropy_literal() -> st.SearchStrategy[str]:
    def make(raw: bytes) -> str:
        return base64.b64encode(raw).decode().rstrip("=").replace("/", "_")

    return st.binary(min_size=24, max_size=48).map(make)


# (kind, strategy of the secret itself)
TOKENS = {
    "aws": st.builds(lambda body: "AKIA" + body, _chars(UPPER_DIGITS, 16)),
    "github_classic": st.builds(
        lambda p, body: p + body, st.sampled_from(["ghp_", "gho_", "ghs_"]), _chars(ALNUM, 36)
    ),
    "github_pat": st.builds(lambda body: "github_pat_" + body, _chars(ALNUM + "_", 22, 82)),
    "openai": st.builds(
        lambda p, body: p + body, st.sampled_from(["sk-", "sk-proj-"]), _chars(ALNUM + "-_", 24, 60)
    ),
    "anthropic": st.builds(lambda body: "sk-ant-api03-" + body, _chars(ALNUM + "-_", 24, 90)),
    "slack": st.builds(
        lambda p, a, b: f"{p}{a}-{b}",
        st.sampled_from(["xoxb-", "xoxp-"]),
        _chars(string.digits, 12),
        _chars(ALNUM, 24),
    ),
    "jwt": st.builds(
        lambda h, p, s: f"eyJ{h}.eyJ{p}.{s}",
        _chars(B64URL, 10, 40),
        _chars(B64URL, 10, 60),
        _chars(B64URL, 20, 43),
    ),
}

CONTEXTS = [
    "{secret}",
    'client = Client("{secret}")',
    "export VALUE={secret}",
    "headers = {{'X-Key': '{secret}'}}",
    "# deploy with {secret} until rotated",
    '  "value": "{secret}",',
]

ORDINARY_LINES = [
    "import os",
    "from django.conf import settings",
    "def handler(request):",
    '    password = request.POST["password"]',
    "    token = get_token(user)",
    "    api_key: str | None = None",
    "    max_tokens = 4096",
    "    SECRET_KEY = settings.SECRET_KEY",
    '    author = "Jane Doe"',
    '    sha = "d41d8cd98f00b204e9800998ecf8427e"',
    '    commit = "0123456789abcdef0123456789abcdef01234567"',
    '    MIDDLEWARE = ["django.contrib.auth.middleware.AuthenticationMiddleware"]',
    '    url = "https://example.com/api/v1/users?page=2"',
    "    tokens = tokenize(source)",
    '    template = "reviews/partials/node_row.html"',
    "    if not user.is_authenticated:",
    "        raise PermissionDenied('login required')",
    "    return JsonResponse({'ok': True, 'count': len(items)})",
    "password_validators = AUTH_PASSWORD_VALIDATORS",
    "DATABASES = {'default': dj_database_url.config(default='sqlite:///db.sqlite3')}",
    'log.info("token refreshed for %s", user.pk)',
    "x = {'secret': secret_from_vault(name)}",
]

CREDENTIAL_WORDS = re.compile(
    r"pass|pwd|secret|token|key|auth|credential|session|signing|encrypt", re.I
)


@settings(max_examples=60, deadline=None)
@given(
    kind=st.sampled_from(sorted(TOKENS)),
    data=st.data(),
    context=st.sampled_from(CONTEXTS),
    before=st.lists(st.sampled_from(ORDINARY_LINES), max_size=3),
    after=st.lists(st.sampled_from(ORDINARY_LINES), max_size=3),
)
def test_it_removes_every_planted_token(
    kind: str, data: st.DataObject, context: str, before: list[str], after: list[str]
) -> None:
    """Provider keys, tokens and JWTs anywhere in the text never survive redaction."""
    secret = data.draw(TOKENS[kind])
    text = "\n".join([*before, context.format(secret=secret), *after])
    out, count = redact(text)
    assert secret not in out
    assert count >= 1
    assert redact(out) == (out, 0)


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(
        ["password", "DB_PASSWORD", "secret", "client_secret", "api_key", "apiKey", "auth_token"]
    ),
    template=st.sampled_from(
        ['{name} = "{value}"', "{name}: '{value}'", '"{name}": "{value}"', "{name}={value}"]
    ),
    value=_password(),
)
def test_it_removes_secrets_assigned_to_credential_names(
    name: str, template: str, value: str
) -> None:
    """`password = "..."`, `secret=`, `api_key:` assignments lose their literal value."""
    if template == "{name}={value}":
        name = name.upper()  # the bare form is the .env / shell one
    text = "config = load()\n" + template.format(name=name, value=value) + "\nprint(config)\n"
    out, count = redact(text)
    assert value not in out
    assert count == 1
    assert out.startswith("config = load()\n") and out.endswith("\nprint(config)\n")


@settings(max_examples=40, deadline=None)
@given(
    scheme=st.sampled_from(["https", "postgres", "redis", "amqp"]),
    user=_chars(string.ascii_lowercase, 3, 10),
    password=_password().filter(lambda p: "@" not in p and "/" not in p),
)
def test_it_removes_passwords_from_urls(scheme: str, user: str, password: str) -> None:
    """scheme://user:password@host keeps the host readable and loses the password."""
    text = f'DATABASE_URL = "{scheme}://{user}:{password}@db.internal:5432/app"'
    out, _ = redact(text)
    assert password not in out
    assert "@db.internal:5432/app" in out


@settings(max_examples=40, deadline=None)
@given(
    value=_high_entropy_literal(),
    template=st.sampled_from(['X = "{v}"', 'call(key="{v}")', "{{'k': '{v}'}}"]),
)
def test_it_removes_generic_high_entropy_literals(value: str, template: str) -> None:
    """A long random literal goes, whatever the variable is called."""
    assume(all(re.search(p, value) for p in ("[a-z]", "[A-Z]", "[0-9]")))
    assume(_entropy(value) >= 4.0)
    out, _ = redact(template.format(v=value))
    assert value not in out


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.sampled_from(ORDINARY_LINES), min_size=1, max_size=12))
def test_it_leaves_ordinary_code_intact(lines: list[str]) -> None:
    """Real-looking code without secrets comes back byte for byte, nothing counted."""
    text = "\n".join(lines)
    assert redact(text) == (text, 0)


@settings(max_examples=80, deadline=None)
@given(
    name=st.from_regex(r"[a-z_][a-z0-9_]{0,20}", fullmatch=True).filter(
        lambda n: not CREDENTIAL_WORDS.search(n)
    ),
    value=st.one_of(
        st.integers().map(str),
        st.from_regex(r"[a-z ]{0,30}", fullmatch=True).map(lambda s: f'"{s}"'),
        st.from_regex(r"[a-z_]{1,12}\([a-z_]{0,12}\)", fullmatch=True),
    ),
)
def test_it_leaves_generated_assignments_intact(name: str, value: str) -> None:
    """Assignments to ordinary names of numbers, words and calls are never touched."""
    text = f"{name} = {value}"
    assert redact(text) == (text, 0)


def test_it_redacts_a_private_key_block_whole() -> None:
    """Everything between BEGIN and END goes, and an unterminated block goes to the end."""
    body = "MIIEowIBAAKCAQEA7bq\nq9c2ZsM4kJ0\n"
    text = f"key = '''\n-----BEGIN RSA PRIVATE KEY-----\n{body}-----END RSA PRIVATE KEY-----\n'''\nx = 1"
    out, count = redact(text)
    assert "MIIEowIBAAKCAQEA7bq" not in out and "q9c2ZsM4kJ0" not in out
    assert out.endswith("x = 1") and count == 1
    truncated, _ = redact("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA")
    assert "b3BlbnNzaC1rZXktdjEAAAA" not in truncated


def test_it_is_idempotent_on_mixed_text() -> None:
    """A second pass finds nothing: markers match no rule."""
    text = (
        'OPENAI_API_KEY = "sk-proj-abcdefghijklmnopqrstuvwxyz0123"\n'
        "password = 'hunter22'\n"
        "url = 'https://bob:pa55word@example.com/x'\n"
    )
    once, count = redact(text)
    assert count == 3
    assert redact(once) == (once, 0)
    assert "[REDACTED:" in once


# -- the stored diff -----------------------------------------------------------------------------

DIFF_TOKEN = "ghp_Q7wE9rT2yU4iO6pA8sD1fG3hJ5kL7zX9cV0b"
KEY_DIFF = f"""diff --git a/app.py b/app.py
--- a/app.py
+++ b/app.py
@@ -1,2 +1,7 @@
 import os
-TOKEN = os.environ["TOKEN"]
+TOKEN = "{DIFF_TOKEN}"
+KEY = '''-----BEGIN RSA PRIVATE KEY-----
+MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun
+VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK
+-----END RSA PRIVATE KEY-----'''
+print(TOKEN)
"""


def test_a_diff_is_redacted_line_by_line_and_keeps_its_shape() -> None:
    from reviews.domain.redaction import redact_diff
    from reviews.sources.diffs import parse_unified_diff

    redacted = redact_diff(KEY_DIFF)
    assert DIFF_TOKEN not in redacted and "MIIEowIBAAKCAQEA" not in redacted
    assert "VTLw7onLRnrq0" not in redacted
    assert len(redacted.splitlines()) == len(KEY_DIFF.splitlines())
    (before,), (after,) = parse_unified_diff(KEY_DIFF), parse_unified_diff(redacted)
    assert [(ln.kind, ln.new_line) for h in after.hunks for ln in h.lines] == [
        (ln.kind, ln.new_line) for h in before.hunks for ln in h.lines
    ]
    assert "+print(TOKEN)" in redacted and ' import os\n-TOKEN = os.environ["TOKEN"]' in redacted
    assert redact_diff(redacted) == redacted


@given(st.lists(st.text(alphabet=string.printable.replace("\r", ""), max_size=60), max_size=20))
def test_redacting_a_diff_never_changes_its_line_count(lines: list[str]) -> None:
    from reviews.domain.redaction import redact_diff

    text = "\n".join(lines)
    assert len(redact_diff(text).splitlines()) == len(text.splitlines())


def test_an_aws_secret_key_needs_no_context_and_a_sha_or_a_name_stays():
    from reviews.domain.redaction import redact_prose, redact_text

    key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    assert redact_text(f"use {key} here") == "use [REDACTED:aws_secret_key] here"
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert redact_text(f"commit {sha}") == f"commit {sha}"
    name = "ThisIsAVeryLongCamelCaseIdentifierName12"
    assert redact_text(name) == name
    # Code keeps `password=hunter2` (a keyword argument naming a variable); prose does not.
    assert redact_text("login(password=hunter2)") == "login(password=hunter2)"
    assert redact_prose("I typed password=hunter2") == "I typed password=[REDACTED:assignment]"


def _line_by_line(text: str) -> str:
    """What redact_diff means: every line redacted on its own, a key block replaced whole."""
    from reviews.domain.redaction import _KEY_BEGIN, _KEY_END, MARKER, redact_text

    out, in_key = [], False
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        prefix, content = (body[:1], body[1:]) if body[:1] in ("+", "-", " ") else ("", body)
        if in_key or _KEY_BEGIN.search(content):
            in_key = not _KEY_END.search(content)
            content = MARKER.format(kind="private_key")
        else:
            content = redact_text(content)
        out.append(prefix + content + line[len(body) :])
    return "".join(out)


def _secret_line() -> st.SearchStrategy[str]:
    token = st.sampled_from(sorted(TOKENS)).flatmap(lambda kind: TOKENS[kind])
    return st.one_of(
        st.builds(lambda c, s: c.format(secret=s), st.sampled_from(CONTEXTS), token),
        st.builds(lambda p: f'DB_PASSWORD = "{p}"', _password()),
        st.builds(lambda p: f"url = 'postgres://app:{p}@db:5432/x'", _password()),
        st.builds(lambda v: f'key = ("{v}")', _high_entropy_literal()),
        st.just("aws = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
        # Case-insensitive matching knows a long s and a dotless i that lower-casing does not.
        st.sampled_from(['ſecret = "hunter22x"', 'credentıal: "s3cr3t-value!"', "Ünïcödé = 1"]),
        st.just("-----BEGIN RSA PRIVATE KEY-----"),
        st.just("-----END RSA PRIVATE KEY-----"),
        st.just('"Bearer abcdefghijklmnop1234"'),
        st.sampled_from(["password =", '"hunter2hunter2hunter2hunter2"', "\x0c", "\x85x"]),
    )


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["+", "-", " ", "", "@@ -1 +1 @@ "]),
            st.one_of(st.sampled_from(ORDINARY_LINES), _secret_line()),
            st.sampled_from(["\n", "\r\n", ""]),
        ),
        max_size=25,
    )
)
def test_a_diff_is_redacted_as_if_every_line_were_redacted_on_its_own(lines) -> None:
    """redact_diff looks only at the lines some rule could match: the result is the same."""
    from reviews.domain.redaction import redact_diff

    text = "".join(prefix + content + end for prefix, content, end in lines)
    assert redact_diff(text) == _line_by_line(text)
