"""Draws the layer diagram of docs/architecture.md from the contracts in pyproject.toml.

`python -m tests.layers_doc` rewrites the block between the `layers:begin`/`layers:end`
markers; tests/test_layers.py fails while the page and the contracts disagree.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
BEGIN, END = "<!-- layers:begin (drawn by tests/layers_doc.py) -->", "<!-- layers:end -->"


def _modules(layer: str) -> list[str]:
    return [m.strip() for m in re.split(r"[:|]", layer) if m.strip()]


def render() -> str:
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]
    contracts = {c["id"]: c for c in tool["importlinter"]["contracts"]}
    layers = [_modules(layer) for layer in contracts["layers"]["layers"]]
    names = tool["quorum"]["layers"]["names"]
    if len(names) != len(layers):
        raise ValueError("pyproject.toml: one name per layer of the `layers` contract")
    lines = ["```mermaid", "flowchart TD"]
    for i, name in enumerate(names):
        lines.append(f'    L{i}["{name}"]')
    lines += [f"    L{i} --> L{i + 1}" for i in range(len(names) - 1)]
    lines += ["```", "", "| layer | modules (and everything under them) |", "|---|---|"]
    for name, modules in zip(names, layers, strict=True):
        lines.append(f"| {name} | {', '.join(f'`{m}`' for m in modules)} |")
    lines.append("")
    for contract in contracts.values():
        if contract["type"] == "forbidden":
            sources = ", ".join(f"`{m}`" for m in contract["source_modules"])
            forbidden = ", ".join(f"`{m}`" for m in contract["forbidden_modules"])
            lines.append(f"- {contract['name']}: {sources} never import {forbidden}.")
    return "\n".join(lines)


def current() -> str:
    text = DOC.read_text()
    return text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip("\n")


def write() -> None:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{render()}\n{END}{tail}")


if __name__ == "__main__":
    write()
    sys.stdout.write(f"{DOC.relative_to(ROOT)}: layers redrawn from pyproject.toml\n")
