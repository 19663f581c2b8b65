"""How much of the original request a model reads.

Every reviewer of a round shares one brief, and every turn of every reviewer sends it again: a
long request (a pasted specification) would be paid for once per turn per reviewer. So the
shared brief carries its opening only (`SHARED_CHARS`), and the reviewer that checks the
requirements reads it in its own part, up to `CHECK_CHARS`. Past a cap the request is cut at a
line break where there is one near the cap, and the cut is said, to the model and on the page.
"""

from __future__ import annotations

from dataclasses import dataclass

SHARED_CHARS = 1_500  # what every reviewer reads
CHECK_CHARS = 8_000  # what the requirements check reads (about 2,000 tokens)


@dataclass(frozen=True)
class RequestExcerpt:
    text: str  # the part read
    total: int  # the request's length, in characters

    @property
    def cut(self) -> bool:
        return len(self.text) < self.total


def excerpt(request: str, limit: int) -> RequestExcerpt:
    """The request's first `limit` characters or fewer, ending on a line break when one falls
    in the last fifth of the limit."""
    request = request.strip()
    if len(request) <= limit:
        return RequestExcerpt(request, len(request))
    head = request[:limit]
    newline = head.rfind("\n")
    if newline >= limit * 4 // 5:
        head = head[:newline]
    return RequestExcerpt(head.rstrip(), len(request))


def model_note(part: RequestExcerpt, *, read_by: str) -> str:
    """What the model is told after a cut excerpt ("" when nothing was cut)."""
    if not part.cut:
        return ""
    return (
        f"(The request continues: these are its first {len(part.text):,} of {part.total:,} "
        f"characters; {read_by}.)"
    )


def page_note(request: str) -> str:
    """What the review page says when the request was too long for the models to read whole
    ("" when every reviewer read all of it)."""
    shared, checked = excerpt(request, SHARED_CHARS), excerpt(request, CHECK_CHARS)
    if not shared.cut:
        return ""
    note = (
        f"The original request is {shared.total:,} characters long: every reviewer read its "
        f"first {len(shared.text):,}, and the requirements check "
    )
    if checked.cut:
        return note + f"its first {len(checked.text):,}; the rest was not sent to a model."
    return note + "all of it."
