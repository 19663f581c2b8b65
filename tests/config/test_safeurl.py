"""Only absolute http(s) URLs pass; what passes is what a browser opens as http(s)."""

from __future__ import annotations

import re

import pytest
from django.template import Context, Template
from hypothesis import given
from hypothesis import strategies as st

from config.safeurl import check_web_url, is_web_url, web_url_or_blank

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")


def browser_scheme(url: str) -> str | None:
    """The scheme a WHATWG URL parser (every current browser) gives an href, or None."""
    url = url.strip("".join(chr(c) for c in range(0x21)))
    url = re.sub(r"[\t\n\r]", "", url)
    match = _SCHEME.match(url)
    return match.group(1).lower() if match else None


HOSTILE = [
    "javascript:alert(1)",
    "JavaScript:alert(1)",
    " javascript:alert(1)",
    "java\tscript:alert(1)",
    "java\nscript:alert(1)",
    "\x01javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "//evil.example/x",
    "/relative/path",
    "https:/evil.example",
    "https:\\\\evil.example",
    "https://",
    "http://exa mple.com/",
    "ftp://example.com/file",
    "https://example.com:99999/",
    "https://example.com\u2028/",
]


@pytest.mark.parametrize("url", HOSTILE)
def test_hostile_and_non_web_urls_are_refused(url):
    assert not is_web_url(url)
    assert web_url_or_blank(url) == ""
    with pytest.raises(ValueError):
        check_web_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://ci.example.com/runs/1?tab=perf#top",
        "HTTP://EXAMPLE.COM/",
        "https://github.com/o/r/pull/1#pullrequestreview-9",
        "http://127.0.0.1:8080/report",
        "https://user@example.com/x",
        "https://bücher.example/ü",
    ],
)
def test_web_urls_pass_unchanged(url):
    assert is_web_url(url)
    assert check_web_url(url) == url
    assert web_url_or_blank(url) == url


def test_blank_means_no_url_and_non_strings_are_not_urls():
    assert check_web_url("") == ""
    assert not is_web_url("")
    assert web_url_or_blank(None) == ""
    assert not is_web_url(42)


@given(st.text(max_size=60))
def test_whatever_passes_is_opened_as_http_or_https(text):
    if is_web_url(text):
        assert browser_scheme(text) in {"http", "https"}


@given(
    st.sampled_from(["", " ", "\t", "\x00", "\n"]),
    st.sampled_from(["javascript", "JAVASCRIPT", "data", "vbscript", "file"]),
    st.text(max_size=20),
)
def test_dangerous_schemes_never_pass_however_disguised(prefix, scheme, rest):
    text = prefix + scheme[:3] + rest[:1] + scheme[3:] + ":" + rest
    if browser_scheme(text) not in {"http", "https"}:
        assert not is_web_url(text)


@given(
    st.sampled_from(["http", "https"]),
    st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?(\.[a-z]{2,6}){1,2}", fullmatch=True),
    st.from_regex(r"(/[A-Za-z0-9._~%-]{0,12}){0,4}", fullmatch=True),
)
def test_ordinary_web_urls_pass(scheme, host, path):
    assert is_web_url(f"{scheme}://{host}{path}")


def test_the_safe_url_filter_renders_no_link_for_non_web_urls():
    template = Template(
        '{% with u=url|safe_url %}{% if u %}<a href="{{ u }}">x</a>{% endif %}{% endwith %}'
    )
    assert template.render(Context({"url": "javascript:alert(1)"})) == ""
    assert template.render(Context({"url": None})) == ""
    assert (
        template.render(Context({"url": "https://ci.example.com/a?b=1&c=2"}))
        == '<a href="https://ci.example.com/a?b=1&amp;c=2">x</a>'
    )
