"""Building a code index from file contents, and updating it incrementally.

The index is built from text, not from a checkout: `files` is a mapping (or a callable with the
list of paths) from repository path to text, so it can read a directory (`files_in_directory`),
a commit (`files_at_commit`, one `git archive` instead of one process per file) or anything the
Django layer has stored. Limits are in `limits`.
"""

from __future__ import annotations

import io
import os
import tarfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath

from reviews.domain.indexed_files import (
    MAX_FAILURE_RATIO,
    MAX_FILE_BYTES,
    MAX_FILES,
    SKIPPED_DIRS,
    language_for,
    skip_reason_for_path,
    skip_reason_for_text,
)
from reviews.index.linker import Linked, link
from reviews.index.manifest_parse import MANIFEST, is_manifest, parse_manifest
from reviews.index.model import CodeIndex, FileRecord, text_digest
from reviews.index.python_parse import parse_python
from reviews.index.relink import relink
from reviews.index.treesitter_parse import parse_with_treesitter
from reviews.sources.diffs import ChangedFile, FileStatus
from reviews.sources.git_local import LocalGitSource
from reviews.sources.gitcmd import run_git

Parser = Callable[[str, str], FileRecord]
FileSource = Mapping[str, str] | Callable[[str], str | None]

TOO_MANY_FILES = "too many source files to index"


def parse_file(path: str, text: str) -> FileRecord:
    """One file → its record. Raises ValueError for a path in no supported language."""
    if is_manifest(path):
        return parse_manifest(path, text)
    language = language_for(path)
    if language is None:
        raise ValueError(f"not a supported source file: {path}")
    if language == "python":
        return parse_python(path, text)
    return parse_with_treesitter(path, text, language)


def build_index(
    files: FileSource, *, paths: Iterable[str] | None = None, parser: Parser = parse_file
) -> CodeIndex:
    """Index every supported file. `paths` is required when `files` is a callable."""
    if paths is None:
        if not isinstance(files, Mapping):
            raise TypeError("build_index needs `paths` when `files` is a callable")
        paths = files.keys()
    read = files.get if isinstance(files, Mapping) else files
    supported = sorted(p for p in set(paths) if is_indexable(p))
    if len(supported) > MAX_FILES:
        return _too_many(len(supported))
    records: dict[str, FileRecord] = {}
    skipped: dict[str, str] = {}
    for path in supported:
        record, reason = _read_and_parse(path, read, parser)
        if record is not None:
            records[path] = record
        elif reason is not None:
            skipped[path] = reason
    return _finish(records, skipped)


def update_index(
    index: CodeIndex, changed: Mapping[str, str | None], *, parser: Parser = parse_file
) -> CodeIndex:
    """A new index with `changed` applied (text, or None for a deleted file).

    Only changed files whose text differs from the indexed one are parsed again, and only the
    references a change can affect are resolved again (see relink), so the result equals a full
    build of the same tree.
    """
    if not index.indexed and index.reason and index.reason.startswith(TOO_MANY_FILES):
        return index  # nothing was kept to update; a full build is the only way back
    records = dict(index.files)
    skipped = dict(index.skipped)
    for path, text in changed.items():
        previous = records.pop(path, None)
        skipped.pop(path, None)
        if text is None or not is_indexable(path):
            continue
        if previous is not None and previous.digest == text_digest(text):
            records[path] = previous
            continue
        record, reason = _read_and_parse(path, {path: text}.get, parser)
        if record is not None:
            records[path] = record
        elif reason is not None:
            skipped[path] = reason
    if len(records) + len(skipped) > MAX_FILES:
        return _too_many(len(records) + len(skipped))
    # In path order, as a full build has them (two files can claim one name: first path wins).
    records = {path: records[path] for path in sorted(records)}
    differs = {p for p in changed if records.get(p) is not index.files.get(p)}
    return _finish(records, skipped, relink(index, records, differs))


def _read_and_parse(
    path: str, read: Callable[[str], str | None], parser: Parser
) -> tuple[FileRecord | None, str | None]:
    reason = skip_reason_for_path(path)
    if reason is not None:
        return None, reason
    text = read(path)
    if text is None:
        return None, None
    reason = skip_reason_for_text(text, path)
    if reason is not None:
        return None, reason
    return parser(path, text), None


def _too_many(count: int) -> CodeIndex:
    reason = f"{TOO_MANY_FILES} ({count} > {MAX_FILES})"
    return CodeIndex(files={}, references=(), indexed=False, reason=reason)


def _finish(
    records: dict[str, FileRecord], skipped: dict[str, str], linked: Linked | None = None
) -> CodeIndex:
    if linked is None:
        linked = link(records)
    # Manifests help resolve imports; they are not source code the graph is made of.
    sources = [r for r in records.values() if r.language != MANIFEST]
    failed = sum(1 for r in sources if r.error is not None)
    indexed, reason = True, None
    if not sources:
        indexed = False
        reason = "no supported source files (Python, JavaScript/TypeScript, Go, Java, Rust)"
    elif failed / len(sources) > MAX_FAILURE_RATIO:
        indexed = False
        reason = (
            f"{failed} of {len(sources)} source files failed to parse "
            f"(more than {MAX_FAILURE_RATIO:.0%})"
        )
    index = CodeIndex(
        files=records,
        references=linked.references,
        skipped=skipped,
        indexed=indexed,
        reason=reason,
        depends=linked.depends,
    )
    index.__dict__["definitions"] = linked.definitions  # the cached table: linking built it
    return index


# -- where file contents come from -----------------------------------------------------------


def is_indexable(path: str) -> bool:
    """A source file in a supported language, or a manifest imports are resolved through."""
    return language_for(path) is not None or is_manifest(path)


def files_in_directory(
    root: Path | str, *, include: Callable[[str], bool] = is_indexable
) -> dict[str, str]:
    """path (relative, '/'-separated) → text for the files under `root` that `include` accepts.

    Skipped directories are not even walked; a file is read up to one byte past the size limit,
    enough for the index to record it as huge.
    """
    base = Path(root)
    out: dict[str, str] = {}
    for current, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in names:
            full = Path(current) / name
            rel = full.relative_to(base).as_posix()
            if not include(rel) or full.is_symlink() or not full.is_file():
                continue
            with full.open("rb") as handle:
                out[rel] = handle.read(MAX_FILE_BYTES + 1).decode("utf-8", "replace")
    return out


def files_at_commit(
    source: LocalGitSource, ref: str, *, include: Callable[[str], bool] = is_indexable
) -> dict[str, str]:
    """path → text at a commit, for the files `include` accepts, read in one `git archive`."""
    sha = source.resolve(ref)
    listing = run_git(["ls-tree", "-r", "-z", "--full-tree", sha], cwd=source.repo_path).stdout
    wanted: set[str] = set()
    for entry in listing.decode("utf-8", "replace").split("\0"):
        meta, _, path = entry.partition("\t")
        if path and meta.split(" ")[1:2] == ["blob"] and include(path):
            wanted.add(path)
    if not wanted:
        return {}
    # Pathspecs by suffix keep the archive small without passing thousands of arguments.
    # Manifests by their own path: `*.json` would pull every fixture of the repository.
    specs = sorted(
        {
            f"*{PurePosixPath(p).suffix}" if PurePosixPath(p).suffix and not is_manifest(p) else p
            for p in wanted
        }
    )
    data = run_git(
        ["archive", "--format=tar", sha, "--", *specs], cwd=source.repo_path, timeout=300
    ).stdout
    out: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
        for member in archive:
            if member.isfile() and member.name in wanted:
                handle = archive.extractfile(member)
                if handle is not None:
                    out[member.name] = handle.read(MAX_FILE_BYTES + 1).decode("utf-8", "replace")
    return out


def changed_texts(
    source: LocalGitSource, head_sha: str, files: Iterable[ChangedFile]
) -> dict[str, str | None]:
    """What `update_index` needs for a diff's `files`: new text per changed path at
    `head_sha`, None where it is gone.
    The texts are read in one `git cat-file --batch` (one process per file cost more than
    indexing them)."""
    changed: dict[str, str | None] = {}
    wanted: list[str] = []
    for changed_file in files:
        if changed_file.old_path and changed_file.old_path != changed_file.new_path:
            changed[changed_file.old_path] = None
        if changed_file.new_path is None:
            continue
        if changed_file.status is FileStatus.BINARY and not is_indexable(changed_file.new_path):
            continue
        wanted.append(changed_file.new_path)
    texts = texts_at(source, head_sha, wanted)
    # A path that is no file at the head (a submodule) has no text to index.
    changed.update({path: texts.get(path) for path in wanted})
    return changed


def texts_at(source: LocalGitSource, sha: str, paths: Sequence[str]) -> dict[str, str]:
    """path → text (cut at `MAX_FILE_BYTES + 1` bytes) at `sha`, for the paths that are blobs
    there, in one process."""
    lines = [p for p in paths if "\n" not in p]  # the batch reads one name per line
    out = {p: source.text_at(sha, p, max_bytes=MAX_FILE_BYTES + 1) for p in paths if "\n" in p}
    if not lines:
        return out
    request = "".join(f"{sha}:{path}\n" for path in lines).encode("utf-8", "surrogateescape")
    data = run_git(["cat-file", "--batch"], cwd=source.repo_path, input=request).stdout
    position = 0
    for path in lines:
        end = data.index(b"\n", position)
        header = data[position:end].split(b" ")
        position = end + 1
        if len(header) != 3:  # "<name> missing" (or ambiguous): not a file at that commit
            continue
        size = int(header[2])
        if header[1] == b"blob":
            text = data[position : position + min(size, MAX_FILE_BYTES + 1)]
            out[path] = text.decode("utf-8", "replace")
        position += size + 1  # the content and its closing newline
    return out
