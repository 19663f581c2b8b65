"""Mermaid flowchart text for a cohort: files as subgraphs, symbols as nodes, references as edges.

Labels come from repository content (paths, names), so every character outside a small safe set
is written as a Mermaid entity (`#35;` for `#`): a quote, bracket or `-->` in a name can then
neither break the diagram nor inject nodes. Node ids are generated (`f0`, `s0`), never names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _.,:/-()")

EDGE_STYLE = {"call": "-->|calls|", "import": "-.->|imports|", "inherit": "==>|inherits|"}


def escape_label(text: str) -> str:
    """`text` made safe inside a quoted Mermaid label."""
    return "".join(ch if ch in _SAFE else f"#{ord(ch)};" for ch in text)


@dataclass(frozen=True, slots=True)
class DiagramNode:
    qualname: str
    label: str
    context: bool = False  # an unchanged caller shown for orientation (dashed)


def flowchart(
    files: Sequence[tuple[str, Sequence[DiagramNode]]],
    edges: Iterable[tuple[str, str, str]],
) -> str:
    """`files`: (path, nodes) in reading order; `edges`: (from qualname, to qualname, kind)."""
    lines = ["flowchart LR"]
    ids: dict[str, str] = {}
    has_context = False
    for file_number, (path, nodes) in enumerate(files):
        lines.append(f'  subgraph f{file_number}["{escape_label(path)}"]')
        if not nodes:
            # A file with nothing to point at still appears, as itself.
            lines.append(f'    p{file_number}["{escape_label(path)}"]')
        for node in nodes:
            node_id = f"s{len(ids)}"
            ids[node.qualname] = node_id
            if node.context:
                has_context = True
                lines.append(f'    {node_id}("{escape_label(node.label)}"):::context')
            else:
                lines.append(f'    {node_id}["{escape_label(node.label)}"]')
        lines.append("  end")
    seen: set[tuple[str, str, str]] = set()
    for source, target, kind in edges:
        key = (source, target, kind)
        if key in seen or source not in ids or target not in ids or source == target:
            continue
        seen.add(key)
        lines.append(f"  {ids[source]} {EDGE_STYLE.get(kind, '-->')} {ids[target]}")
    if has_context:
        lines.append("  classDef context stroke-dasharray: 4 4")
    return "\n".join(lines) + "\n"
