"""Markdown as safe HTML, for the report page and the previews of what GitHub would show.

The markdown comes from reviewers (models and tools) and quotes the code under review, so it is
untrusted: raw HTML is escaped, never passed through; links and bare URLs become links only
when they are absolute http(s) URLs (config/safeurl.py) or in-page anchors, and every link
carries rel="noopener nofollow"; images are not loaded (their text is shown instead). CommonMark
with GitHub's tables and strikethrough, rendered by markdown-it-py.
"""

from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from config.safeurl import is_web_url

LINK_REL = "noopener nofollow"
# A bare URL in text; trailing punctuation is the sentence's, not the URL's.
_BARE_URL = re.compile(r"https?://[^\s<>\"'`]+")
_TRAILING = ".,;:!?)]}'\""


def _valid_link(url: str) -> bool:
    return is_web_url(url) or bool(re.fullmatch(r"#[\w.:-]*", url))


def _split_url(match: str) -> tuple[str, str]:
    url = match.rstrip(_TRAILING)
    # A closing parenthesis belongs to the URL when it opened one inside it (Wikipedia links).
    while match[len(url) : len(url) + 1] == ")" and url.count("(") > url.count(")"):
        url += ")"
    return url, match[len(url) :]


def _linkify(state: StateCore) -> None:
    """Bare http(s) URLs in text become links (markdown-it's own linkify needs another
    package). Text inside a link, or in code, is left alone."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        out: list[Token] = []
        depth = 0
        for token in block.children:
            if token.type == "link_open":
                depth += 1
            elif token.type == "link_close":
                depth -= 1
            if token.type != "text" or depth or not _BARE_URL.search(token.content):
                out.append(token)
                continue
            position = 0
            for found in _BARE_URL.finditer(token.content):
                url, tail = _split_url(found.group(0))
                if not is_web_url(url):
                    continue
                if found.start() > position:
                    out.append(_text(token.content[position : found.start()]))
                opener = Token("link_open", "a", 1)
                opener.attrs = {"href": url}
                out += [opener, _text(url), Token("link_close", "a", -1)]
                position = found.end() - len(tail)
            if position < len(token.content):
                out.append(_text(token.content[position:]))
        block.children = out


def _text(content: str) -> Token:
    token = Token("text", "", 0)
    token.content = content
    return token


def _link_open(self, tokens, idx, options, env) -> str:
    tokens[idx].attrSet("rel", LINK_REL)
    return self.renderToken(tokens, idx, options, env)


@lru_cache(maxsize=1)
def _renderer() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.disable("image")
    md.validateLink = _valid_link  # type: ignore[method-assign]
    md.core.ruler.push("quorum_linkify", _linkify)
    md.add_render_rule("link_open", _link_open)
    return md


def markdown_html(text: str) -> str:
    """`text` (markdown) as HTML that is safe to put in a page as it is."""
    return _renderer().render(text or "")
