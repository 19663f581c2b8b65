"""tree-sitter's parsers, one per grammar and thread: a parser holds the parse under way, so the
threads of a worker (or of the embedded server) must not share one; the grammars are shared."""

from __future__ import annotations

import threading
from functools import cache

import tree_sitter as ts

_per_thread = threading.local()


def parser(language: str) -> ts.Parser:
    parsers: dict[str, ts.Parser] = _per_thread.__dict__.setdefault("parsers", {})
    return parsers.get(language) or parsers.setdefault(language, ts.Parser(_language(language)))


@cache
def _language(language: str) -> ts.Language:
    if language == "javascript":
        import tree_sitter_javascript as grammar

        capsule = grammar.language()
    elif language == "typescript":
        import tree_sitter_typescript as grammar_ts

        capsule = grammar_ts.language_typescript()
    elif language == "tsx":
        import tree_sitter_typescript as grammar_tsx

        capsule = grammar_tsx.language_tsx()
    elif language == "go":
        import tree_sitter_go as grammar_go

        capsule = grammar_go.language()
    elif language == "java":
        import tree_sitter_java as grammar_java

        capsule = grammar_java.language()
    elif language == "rust":
        import tree_sitter_rust as grammar_rust

        capsule = grammar_rust.language()
    else:
        raise ValueError(f"no tree-sitter grammar for {language!r}")
    return ts.Language(capsule)
