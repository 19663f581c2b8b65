"""Which files the index reads, and the limits that keep one review round cheap.

Documented limits:
- only the languages below, chosen by file extension;
- vendored, generated-output and dependency directories are skipped (`SKIPPED_DIRS`), as are
  minified bundles: they are not the authors' code and would swamp the graph;
- a file above `MAX_FILE_BYTES` is skipped as huge, one containing a NUL byte as binary;
- a repository with more than `MAX_FILES` supported files is not indexed at all;
- a repository where more than `MAX_FAILURE_RATIO` of the supported files fail to parse is marked
  unindexed: a graph with that many holes would claim a confidence it does not have.
"""

from __future__ import annotations

import functools
from pathlib import PurePosixPath

from reviews.domain import vendored

MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 25_000
MAX_FAILURE_RATIO = 0.20

LANGUAGE_BY_SUFFIX: dict[str, str] = {
    ".py": "python",
    ".js": "javascript",
    ".jsx": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".java": "java",
    ".rs": "rust",
}

#: Languages that share one name space for best-effort resolution (a .ts file imports a .js one).
LANGUAGE_FAMILY: dict[str, str] = {
    "python": "python",
    "javascript": "js",
    "typescript": "js",
    "tsx": "js",
    "go": "go",
    "java": "java",
    "rust": "rust",
}

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        "node_modules",
        "bower_components",
        "vendor",
        "vendored",
        "third_party",
        "third-party",
        "site-packages",
        "dist",
        "build",
        "target",
        ".next",
        ".mypy_cache",
        ".pytest_cache",
    }
)

_TEST_DIRS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testing"})


def language_for(path: str) -> str | None:
    """The language the index parses `path` as, or None when the extension is unsupported."""
    return LANGUAGE_BY_SUFFIX.get(PurePosixPath(path).suffix.lower())


def skip_reason_for_path(path: str) -> str | None:
    """Why a supported file is left out by its path alone ("vendored", "minified"), or None."""
    parts = PurePosixPath(path).parts
    if any(part in SKIPPED_DIRS for part in parts[:-1]):
        return "vendored"
    return vendored.path_reason(path)  # minified and generated names, and vendor directories


def skip_reason_for_text(text: str, path: str = "") -> str | None:
    """Why a file is left out by its content ("binary", "huge"), or None."""
    if "\x00" in text[:8192]:
        return "binary"
    # Cheap upper bound first: a str of n chars is at most 4n UTF-8 bytes.
    if len(text) > MAX_FILE_BYTES and len(text.encode("utf-8", "replace")) > MAX_FILE_BYTES:
        return "huge"
    # A minified bundle or a generator's output under an ordinary name.
    return vendored.content_reason(path, text[:65_536].splitlines(), from_start=True)


@functools.lru_cache(maxsize=16_384)  # asked for each symbol of a changed file, many times
def is_test_path(path: str) -> bool:
    """Test code by the conventions of the supported languages (tests are read last)."""
    pure = PurePosixPath(path)
    if any(part.lower() in _TEST_DIRS for part in pure.parts[:-1]):
        return True
    stem = pure.name.split(".", 1)[0]
    low = pure.name.lower()
    return (
        low == "conftest.py"
        or stem.lower().startswith("test_")
        or stem.lower().endswith(("_test", "_tests", "_spec"))
        # Java and friends: FooTest.java, FooTests.java (capital T, so "latest.py" is not a test).
        or stem.endswith(("Test", "Tests"))
        or ".test." in low
        or ".spec." in low
    )
