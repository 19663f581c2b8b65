"""Content fingerprints of findings and the round-to-round delta.

A fingerprint must survive line shifts (code inserted above, a rebase) and re-indentation, but
change when the flagged code changes. So it hashes what the finding is *about*, never where:

    sha256( version, path, category, normalised title words, anchored code )

- title words: lowercase alphanumeric tokens without stop words, "line" or bare numbers ("line 42"
  moves with the code), de-duplicated and sorted, so "Missing null check" and "null check
  missing" agree;
- anchored code: the anchored lines with all whitespace runs collapsed and blank lines dropped.
- An unanchored finding hashes path (or none) + category + title words only.
The category (not the node type) is used: the lead pass may re-type a node, the triage category
is what the finding is about.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .types import Category, NodeView

FINGERPRINT_VERSION = "fp1"

_TOKEN = re.compile(r"[a-z0-9]+")
_STOP_WORDS = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it"}
    | {"its", "of", "on", "or", "that", "the", "this", "to", "was", "with"}
    # Location words: "at line 42" describes where, which the fingerprint must not depend on.
    | {"line", "lines"}
)


def title_tokens(title: str) -> frozenset[str]:
    """Normalised words of a title (also used by dedup's similarity test)."""
    return frozenset(
        token
        for token in _TOKEN.findall(title.lower())
        if token not in _STOP_WORDS and not token.isdigit()
    )


def normalise_code(lines: Iterable[str]) -> tuple[str, ...]:
    collapsed = (" ".join(line.split()) for line in lines)
    return tuple(line for line in collapsed if line)


def anchored_lines(file_lines: Sequence[str], start_line: int, end_line: int) -> list[str]:
    """Lines `start_line..end_line` (1-based, inclusive) of a file, clipped to the file."""
    return list(file_lines[max(start_line, 1) - 1 : max(end_line, 0)])


def fingerprint(
    *, path: str | None, category: Category, title: str, code: Iterable[str] | None
) -> str:
    material = [
        FINGERPRINT_VERSION,
        path or "",
        str(category),
        sorted(title_tokens(title)),
        list(normalise_code(code)) if code is not None else None,
    ]
    encoded = json.dumps(material, ensure_ascii=False, separators=(",", ":")).encode()
    return hashlib.sha256(encoded).hexdigest()


def node_fingerprint(node: NodeView, file_lines: Sequence[str] | None) -> str:
    """Fingerprint of a node given the text of the file it is anchored in (head checkout).

    Without the file text (deleted file, unanchored node) the code part is left out.
    """
    code = None
    if node.anchored and file_lines is not None:
        assert node.start_line is not None and node.end_line is not None
        code = anchored_lines(file_lines, node.start_line, node.end_line)
    return fingerprint(path=node.path, category=node.category, title=node.title, code=code)


@dataclass(frozen=True, slots=True)
class RoundDelta:
    new: frozenset[str]
    persisting: frozenset[str]
    gone: frozenset[str]


def round_delta(previous: Iterable[str], current: Iterable[str]) -> RoundDelta:
    """Compare fingerprints of two rounds: new, still open (persisting), gone."""
    before, now = frozenset(previous), frozenset(current)
    return RoundDelta(new=now - before, persisting=now & before, gone=before - now)
