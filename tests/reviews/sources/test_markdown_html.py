"""Untrusted markdown as safe HTML: raw HTML escaped, only http(s) links, rel on every link."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from reviews.sources.markdown_html import LINK_REL, markdown_html
from reviews.templatetags.review_extras import linked_lines, linked_paragraphs


def test_markdown_renders_headings_emphasis_lists_tables_and_code():
    html = markdown_html(
        "# Review: BLOCKED\n\n**Why Block:** P0\n\n- one\n- two\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1 < 2\n```\n"
    )
    assert "<h1>Review: BLOCKED</h1>" in html and "<strong>Why Block:</strong>" in html
    assert "<li>one</li>" in html and "<td>1</td>" in html
    assert '<code class="language-python">x = 1 &lt; 2\n</code>' in html


def test_raw_html_is_shown_as_text_never_run():
    html = markdown_html('<script>alert(1)</script>\n\nok <img src=x onerror="alert(1)">')
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_only_web_links_become_links_and_each_has_rel():
    html = markdown_html(
        "[a](javascript:alert(1)) [b](data:text/html,x) [c](https://example.com/x) "
        "[d](#node-3) ![img](https://example.com/i.png)"
    )
    hrefs = re.findall(r'href="([^"]*)"', html)
    assert hrefs == ["https://example.com/x", "#node-3", "https://example.com/i.png"]
    assert html.count(f'rel="{LINK_REL}"') == 3
    assert "<img" not in html  # images are not loaded from elsewhere


def test_bare_urls_become_links_but_not_in_code_and_not_their_trailing_punctuation():
    html = markdown_html(
        "Details: https://bandit.readthedocs.io/en/latest/plugins/b105.html.\n\n"
        "`https://in.code/x` and (see https://en.wikipedia.org/wiki/A_(b))"
    )
    assert (
        '<a href="https://bandit.readthedocs.io/en/latest/plugins/b105.html" '
        'rel="noopener nofollow">https://bandit.readthedocs.io/en/latest/plugins/b105.html</a>.'
        in html
    )
    assert "<code>https://in.code/x</code>" in html
    assert 'href="https://en.wikipedia.org/wiki/A_(b)"' in html and "</a>)</p>" in html


def test_finding_bodies_link_web_urls_only_and_escape_the_rest():
    body = (
        "Use of assert.\n\nDetails: https://bandit.example/b101.html <b>x</b> javascript:alert(1)"
    )
    html = str(linked_paragraphs(body))
    assert html.startswith("<p>Use of assert.</p>")
    assert (
        '<a href="https://bandit.example/b101.html" rel="noopener nofollow">'
        "https://bandit.example/b101.html</a>" in html
    )
    assert "&lt;b&gt;x&lt;/b&gt;" in html and 'href="javascript' not in html
    assert str(linked_lines('a\nhttps://x.example/"onmouseover=1')).count("<a ") == 1
    assert "onmouseover" not in str(linked_lines('https://x.example/"onmouseover=1')).split(">")[0]


@given(st.text(max_size=200))
def test_no_text_ever_yields_a_tag_it_did_not_ask_for(text):
    for html in (markdown_html(text), str(linked_paragraphs(text))):
        tags = set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", html))
        assert tags <= {
            "p",
            "br",
            "a",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "strong",
            "em",
            "code",
            "pre",
            "ul",
            "ol",
            "li",
            "blockquote",
            "hr",
            "table",
            "thead",
            "tbody",
            "tr",
            "th",
            "td",
            "s",
        }
        for href in re.findall(r'href="([^"]*)"', html):
            assert href.startswith(("https://", "http://", "#"))
