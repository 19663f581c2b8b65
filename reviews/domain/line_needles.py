"""Which lines of a long text a set of rules could match, found without running the rules on
every line: a rule that needs a literal can only match a line that contains it, and a plain
substring search over the whole text is far cheaper than a regular expression per line.

The callers keep their rules and run them, as before, on the lines found here: the answer is
a superset, so nothing a rule would have matched is missed.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def lines_with(
    lines: Sequence[str],
    needles: Iterable[str] = (),
    *,
    folded: Iterable[str] = (),
    scans: Iterable[re.Pattern[str]] = (),
) -> set[int]:
    """The indexes of `lines` that contain one of `needles`, one of `folded` (lower-case
    needles of a case-insensitive rule), or a match of one of `scans` (a match spanning lines
    marks each). With `folded`, every non-ASCII line is included too: case-insensitive matching
    knows equivalences (a dotless i, a long s, the Kelvin sign) that lower-casing does not."""
    joined = "\n".join(lines)
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)
    found: set[int] = set()

    def mark(start: int, end: int) -> None:
        first = bisect.bisect_right(starts, start) - 1
        last = bisect.bisect_right(starts, max(start, end - 1)) - 1
        found.update(range(first, last + 1))

    def find_all(haystack: str, needle: str) -> None:
        at = haystack.find(needle)
        while at != -1:
            mark(at, at + len(needle))
            at = haystack.find(needle, at + 1)

    for needle in needles:
        find_all(joined, needle)
    folded = tuple(folded)
    if folded:
        lowered = joined.lower()
        if len(lowered) == len(joined):  # no character grew: the offsets still hold
            for needle in folded:
                find_all(lowered, needle)
        else:
            found.update(
                number
                for number, line in enumerate(lines)
                if any(needle in line.lower() for needle in folded)
            )
        if not joined.isascii():
            for match in _NON_ASCII.finditer(joined):
                mark(match.start(), match.end())
    for pattern in scans:
        for match in pattern.finditer(joined):
            mark(match.start(), match.end())
    return found
