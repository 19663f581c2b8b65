"""A type written one way, whatever the spelling (pure, over tree-sitter nodes).

Comments (doc comments included) and layout are dropped, `;` and `,` between members are the
same separator, and none comes before a closing bracket, so two texts that declare the same
type compare equal. Shared by every language's surface reader.
"""

from __future__ import annotations

import tree_sitter as ts


def text_of(node: ts.Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return " ".join(node.text.decode("utf-8", "replace").split())


_OPENERS = frozenset({"{", "[", "(", "<"})
_CLOSERS = frozenset({"}", "]", ")", ">"})
_MEMBER_LISTS = frozenset({"object_type", "interface_body", "enum_body"})
_SPACED = frozenset({"|", "&", "=>", "=", "extends", "keyof", "typeof", "in", "is", "as"})


def canonical(node: ts.Node | None) -> str:
    """A type as parsed structure, written one way: comments (doc comments included) and
    layout dropped, `;` and `,` between members the same separator, none before a closing
    bracket. Two texts that declare the same type compare equal."""
    tokens: list[str] = []

    def walk(current: ts.Node) -> None:
        if current.type == "comment":
            return
        if current.type in _MEMBER_LISTS:  # members one per line, or after `;` or `,`
            tokens.append("{")
            for member in current.named_children:
                if member.type != "comment":
                    walk(member)
                    tokens.append(",")
            tokens.append("}")
            return
        if current.child_count == 0 or current.type in ("string", "template_string"):
            tokens.append((current.text or b"").decode("utf-8", "replace"))
            return
        for child in current.children:
            walk(child)

    if node is None:
        return ""
    walk(node)
    kept: list[str] = []
    for piece in tokens:
        if piece in (";", ","):
            if not kept or kept[-1] in _OPENERS or kept[-1] == ",":
                continue
            piece = ","
        if piece in _CLOSERS and kept and kept[-1] == ",":
            kept.pop()
        kept.append(piece)
    while kept and kept[-1] == ",":
        kept.pop()
    return joined(kept)


def joined(tokens: list[str]) -> str:
    out = ""
    for token in tokens:
        word = token[:1].isalnum() or token[:1] in "_$\"'`"
        previous_word = bool(out) and (out[-1].isalnum() or out[-1] in "_$\"'`")
        if token in _SPACED or (out and out[-1] in ",:") or (word and previous_word):
            out += " "
        out += token
        if token in _SPACED:
            out += " "
    return " ".join(out.split())
