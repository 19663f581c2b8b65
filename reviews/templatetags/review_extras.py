from __future__ import annotations

import re
from functools import lru_cache

from django import template
from django.utils import timezone
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from config.safeurl import web_url_or_blank
from guardrails.rules import Decision, Status
from reviews.domain import wording
from reviews.domain.consensus import confirmer_label
from reviews.domain.file_tree import preview_anchor as anchor
from reviews.domain.round_states import state_label
from reviews.domain.round_stats import PreviewHunk
from reviews.domain.space_status import SpaceStatus
from reviews.domain.threads import Source
from reviews.domain.types import VerdictLevel
from reviews.reports import markdown as report_markdown
from reviews.services.memory import remembered_note
from reviews.sources.markdown_html import _split_url, markdown_html

register = template.Library()

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@")
_FORMATTER = HtmlFormatter(nowrap=True)
_LINE_ROW = (
    '<tr class="{}"><td class="ln">{}</td><td class="ln">{}</td>'
    '<td class="mark" aria-hidden="true">{}</td><td class="code"><code>{}</code></td></tr>'
)
_FINDING_ROW = '<tr class="inline-finding"><td colspan="4">{}</td></tr>'


@register.filter
def get_item(mapping, key):
    """`mapping|get_item:key` — dictionaries keyed by ids in the review page context."""
    if mapping is None:
        return None
    return mapping.get(key)


@lru_cache(maxsize=256)
def _lexer(path: str):
    try:
        return get_lexer_for_filename(path, stripnl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False)


def _code(path: str, text: str) -> str:
    # Pygments escapes the source itself; its output is the only markup we let through.
    return highlight(text, _lexer(path), _FORMATTER).rstrip("\n")


_LIST_LINK = (
    '<p class="finding-link"><span class="prio {}">{}</span> <a href="#node-{}">{}</a>'
    ' <span class="muted">(its card is in the findings list)</span></p>'
)


def _inline_card(context: template.Context, node) -> str:
    """A finding's card as it sits in the diff (its own ids, the same actions as the list's):
    reviews/partials/node.html rendered with `inline`, like an {% include %} would. Where the
    card is in the list already (`cards_in_list`), a link to it: each finding has one card."""
    if context.get("cards_in_list"):
        return format_html(_LIST_LINK, node.priority.lower(), node.priority, node.pk, node.title)
    card = context.template.engine.get_template("reviews/partials/node.html")  # type: ignore[union-attr]
    with context.push(node=node, inline=True, oob=False, solo=False):
        return card.render(context)


@register.simple_tag(takes_context=True)
def hunk_rows(
    context: template.Context, path: str, hunk: PreviewHunk, findings: dict | None = None
) -> SafeString:
    """A hunk as table rows: old/new line numbers, +/- marks, highlighted code, and the
    findings anchored on a line shown right under it, as cards with their actions."""
    findings = findings or {}
    lines = hunk.text.splitlines()
    old = new = 0
    new_line: int | str
    old_line: int | str
    rows = []
    for raw in lines:
        header = _HUNK_HEADER.match(raw)
        if header:
            old, new = int(header.group(1)), int(header.group(2))
            rows.append(
                format_html('<tr class="hunk-head"><td colspan="4"><code>{}</code></td></tr>', raw)
            )
            continue
        mark, body = (raw[:1], raw[1:]) if raw else (" ", "")
        if mark == "\\":
            continue
        if mark == "+":
            cells, new_line, old_line = ("add", "+"), new, ""
            new += 1
        elif mark == "-":
            cells, new_line, old_line = ("del", "−"), "", old
            old += 1
        else:
            cells, new_line, old_line = ("ctx", " "), new, old
            old += 1
            new += 1
        rows.append(
            format_html(
                _LINE_ROW,
                cells[0],
                old_line,
                new_line,
                cells[1],
                mark_safe(_code(path, body)),  # noqa: S308 — Pygments output, escaped by it
            )
        )
        for node in findings.get((path, new_line), []) if new_line != "" else []:
            rows.append(format_html(_FINDING_ROW, mark_safe(_inline_card(context, node))))  # noqa: S308 — a rendered template
    return mark_safe("".join(str(r) for r in rows))  # noqa: S308 — built with format_html


@register.filter
def confirmer(identity: str) -> str:
    """`c.agent|confirmer`: who confirmed, in words ("a person", "agent claude-code", …)."""

    return confirmer_label(identity)


@register.filter
def preview_anchor(cohort_key: str, path: str) -> str:
    """`cohort.key|preview_anchor:preview.path`: the id of a file's preview in a cohort."""

    return anchor(cohort_key, path)


@register.filter
def safe_url(url) -> str:
    """`url|safe_url`: the URL if it is absolute http(s), else "" so no link is rendered.

    Defence in depth: stored URLs are validated on the way in, but a row written by an older
    release or by hand must still never become a `javascript:` link.
    """
    return web_url_or_blank(url)


@register.filter
def mermaid_safe(text: str) -> str:
    """Mermaid source goes into a <pre>: escape it so it cannot close the element."""
    return escape(text)


@register.filter
def space_status_label(status: str) -> str:
    """`space.status|space_status_label`: the review's status in words ("Verdict ready")."""

    try:
        return SpaceStatus(status).label
    except ValueError:
        return in_words(status)


_VERDICT_BADGES: dict[str, str] = {VerdictLevel.BLOCK: "✖ Block", VerdictLevel.HOLD: "‖ Hold"}


@register.filter
def verdict_badge(level: str) -> str:
    """`verdict.level|verdict_badge`: "✖ Block", "‖ Hold" or "✓ Ship"."""
    return _VERDICT_BADGES.get(level, "✓ Ship")


@register.filter
def round_state_label(state: str) -> str:
    """`round.state|round_state_label`: a round's state in words ("Queued" for pending)."""

    return state_label(state) if state else ""


@register.filter
def in_words(value: str) -> str:
    """A stored identifier as words: "consensus_ready" → "Consensus ready"."""
    return str(value).replace("_", " ").capitalize() if value else ""


# -- words for people (reviews/domain/wording.py) ------------------------------------------------

_BARE_URL = re.compile(r"https?://[^\s<>\"'`]+")
_LINK = '<a href="{}" rel="noopener nofollow">{}</a>'


def _linked(text: str) -> str:
    """`text` escaped, with each absolute http(s) URL in it a link (and nothing else)."""

    out, position = [], 0
    for found in _BARE_URL.finditer(text):
        url, tail = _split_url(found.group(0))
        if not web_url_or_blank(url):
            continue
        out.append(escape(text[position : found.start()]))
        out.append(format_html(_LINK, url, url))
        position = found.end() - len(tail)
    out.append(escape(text[position:]))
    return "".join(str(part) for part in out)


@register.filter(is_safe=True)
def linked_paragraphs(text: str) -> SafeString:
    """`node.body|linked_paragraphs`: paragraphs and line breaks like `linebreaks`, with bare
    http(s) URLs as links (rel="noopener nofollow"); everything else escaped."""
    from django.utils.html import linebreaks

    # Escaped piece by piece above, so the paragraphs are built without escaping again.
    return mark_safe(linebreaks(_linked(str(text or "")), autoescape=False))  # noqa: S308


@register.filter(is_safe=True)
def linked_lines(text: str) -> SafeString:
    """Like `linebreaksbr`, with bare http(s) URLs as links."""
    lines = str(text or "").replace("\r\n", "\n").split("\n")
    return mark_safe("<br>".join(_linked(line) for line in lines))  # noqa: S308 — escaped


@register.filter(is_safe=True)
def markdown(text: str) -> SafeString:
    """`report|markdown`: markdown as safe HTML (raw HTML escaped, only http(s) links)."""

    return mark_safe(markdown_html(str(text or "")))  # noqa: S308 — markdown-it, html off


@register.filter
def axis_rows(axis_row, names=None) -> list:
    """`a|axis_rows:cohort_names`: an axis's details as (label, value in words) rows."""
    return wording.axis_detail_rows(axis_row.axis, axis_row.details, names=names or {})


# The pure wording functions, used as they are: `axis|axis_label`, `a.source|axis_source`,
# `cohort|cohort_name`, `selection|selection_words`, `stream.state|stream_state`.
register.filter("axis_label", wording.axis_label)
register.filter("axis_source", wording.axis_source_words)
register.filter("cohort_name", wording.cohort_name)
register.filter("selection_words", wording.selection_words)
register.filter("stream_state", wording.stream_state_words)


@register.filter
def waiting_for_request(stream) -> bool:
    """`s|waiting_for_request`: the stream is held until a person supplies the request."""
    return report_markdown.waiting_for_request(stream)


@register.filter
def requirements_check(page):
    """`page|requirements_check`: the requirements reviewer's table, or None without one."""
    return report_markdown.requirements_check(page.streams, page.nodes)


@register.filter
def ago(moment) -> str:
    """`created_at|ago`: "just now", "3 minutes ago" (never "0 minutes ago")."""
    return wording.time_ago(moment, timezone.now()) if moment else ""


@register.filter
def until(moment) -> str:
    """`expires_at|until`: "in 57 minutes", "in under a minute", "now"."""
    return wording.time_until(moment, timezone.now()) if moment else ""


@register.filter
def approval_status(status: str) -> str:
    """An approval request's status in words ("Waiting for approval")."""

    try:
        return Status(status).label
    except ValueError:
        return in_words(status)


@register.filter
def decision_done(decision: str) -> str:
    """An approver's decision as it reads once made ("approved", "denied")."""

    try:
        return Decision(decision).done
    except ValueError:
        return in_words(decision).lower()


@register.filter
def rejected_words(count: int, reasons) -> str:
    """`s.rejected|rejected_words:s.rejection_reasons`: what the count means, in a sentence."""
    return wording.rejected_words(int(count or 0), list(reasons or []))


@register.filter
def thread_of(object_id, kind: str) -> str:
    """`node.pk|thread_of:"node"`: the key of that subject's thread (reviews/domain/threads.py)."""
    return f"{kind}:{object_id}"


@register.filter
def thread_dom(key: str) -> str:
    """`key|thread_dom`: a thread key as part of an element id (`node:12` → `node-12`)."""
    return str(key).replace(":", "-")


@register.filter
def message_source(message) -> str:
    """Who wrote a thread message, in a word or two for its badge."""

    words = {Source.REVIEWER: "reviewer", Source.AGENT: "agent", Source.GITHUB: "from GitHub"}
    return words.get(message.source, "person")


@register.filter
def remembered(node) -> str:
    """`node|remembered`: a finding recorded dismissed by dismissal memory, "Previously
    dismissed by … because … (where from)"; "" for any other finding."""
    if getattr(node.tags, "memory", None) is None:
        return ""

    by = node.decided_by.email if node.decided_by_id and node.decided_by else "a former member"
    return remembered_note(node, by=by)
