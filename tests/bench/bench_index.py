"""Benchmark of the code index on a real code base: `python -m tests.bench.bench_index`.

Copies the installed Django package (plus generated modules if it has fewer than 2,000 Python
files) into a temporary git repository, then measures:
- a full index build from the commit (time, and peak memory traced in a second, traced run);
- an incremental update after a commit changing 10 files, as a ratio of the full build;
- that the updated index equals a full build at the new commit;
- cohorts of that 10-file change;
- own-import resolution on real Python code: the packages installed with the project
  (django, httpx, requests, urllib3, pydantic, click, rich, celery), each indexed alone; and
  with `--clones DIR`, on the repositories of tests/bench/corpus/index_resolution.toml in five
  languages, cloned into DIR (the benchmark checks out each named commit), with each release
  range's cohorts and its tests attached where tests/bench/corpus/test_attachment.toml's labels
  put them (tests/bench/attachment.py), per range and per language;
- cohort quality per language (`--quality`, or always in the report): on the generated
  repositories of tests/reviews/index/cohort_repos.py, cohorts per change, whether util, module
  and test form one cohort read in that order, blast radius, and own imports resolved ÷ all.
Not collected by pytest (the name does not start with test_); it takes a few seconds.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
import tracemalloc
from pathlib import Path

import django

from reviews.domain.indexed_files import is_test_path
from reviews.index import (
    build_index,
    changed_texts,
    files_at_commit,
    files_in_directory,
    update_index,
)
from reviews.index.cohort_types import Cohort
from reviews.index.cohorts import UNLINKED_TESTS_LABEL, compute_cohorts
from reviews.index.resolution import import_resolution
from reviews.sources.git_local import LocalGitSource
from tests.bench.attachment import Attachment, attachment, labels_of
from tests.bench.scratch_git import git
from tests.reviews.index.cohort_repos import REPOS, QualityRepo

MIN_PY_FILES = 2_000
CHANGED_FILES = 10


def _generated_module(package: int, number: int) -> str:
    previous = (
        f"from generated.p{package}.m{number - 1} import step as previous\n" if number else ""
    )
    call = "previous(value)" if number else "value"
    return (
        "from django.utils.text import slugify\n"
        f"{previous}\n\n"
        f"class Model{number}:\n"
        "    def label(self, value):\n"
        "        return self.clean(slugify(value))\n\n"
        "    def clean(self, value):\n"
        "        return value.strip()\n\n\n"
        "def step(value):\n"
        f"    return {call}\n"
    )


def make_repository(root: Path) -> int:
    """Django's source (+ generated modules up to MIN_PY_FILES); returns the .py file count."""
    target = root / "django"
    shutil.copytree(
        Path(django.__file__).parent,
        target,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.mo"),
    )
    count = sum(1 for _ in root.rglob("*.py"))
    package = 0
    while count < MIN_PY_FILES:
        directory = root / "generated" / f"p{package}"
        directory.mkdir(parents=True)
        (directory / "__init__.py").write_text("")
        (root / "generated" / "__init__.py").write_text("")
        for number in range(50):
            (directory / f"m{number}.py").write_text(_generated_module(package, number))
        count = sum(1 for _ in root.rglob("*.py"))
        package += 1
    git(root, "init", "--quiet")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "base")
    return count


def change_files(root: Path) -> list[str]:
    """Edit CHANGED_FILES modules deterministically (a new function calling an existing one)."""
    candidates = sorted(p for p in (root / "django" / "utils").glob("*.py") if p.stat().st_size)
    chosen = candidates[:CHANGED_FILES]
    for path in chosen:
        path.write_text(path.read_text() + "\n\ndef _bench_added(value):\n    return str(value)\n")
    git(root, "checkout", "--quiet", "-b", "feature")
    git(root, "commit", "--quiet", "-am", "ten files")
    return [p.relative_to(root).as_posix() for p in chosen]


def run(*, verify: bool = True) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="quorum-bench-") as tmp:
        root = Path(tmp) / "repo"
        root.mkdir()
        py_files = make_repository(root)
        source = LocalGitSource(root)
        base_sha = source.resolve("HEAD")

        started = time.perf_counter()
        files = files_at_commit(source, base_sha)
        read_seconds = time.perf_counter() - started

        started, cpu = time.perf_counter(), time.process_time()
        index = build_index(files)
        full_seconds = time.perf_counter() - started
        full_cpu = time.process_time() - cpu

        tracemalloc.start()
        build_index(files)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()

        changed_paths = change_files(root)
        diff = source.diff(base_sha, "feature")
        changed = changed_texts(source, diff.head_sha, diff.files)
        started, cpu = time.perf_counter(), time.process_time()
        updated = update_index(index, changed)
        incremental_seconds = time.perf_counter() - started
        incremental_cpu = time.process_time() - cpu

        started = time.perf_counter()
        cohorts = compute_cohorts(diff.files, updated, base=index)
        cohort_seconds = time.perf_counter() - started

        identical = None
        if verify:
            identical = (
                updated.to_json() == build_index(files_at_commit(source, diff.head_sha)).to_json()
            )
        stats = index.stats()
        return {
            "python_files_in_repository": py_files,
            "indexed_files": stats["files"],
            "definitions": stats["definitions"],
            "references": stats["references"],
            "resolved_references": stats["resolved_references"],
            "failed_files": stats["failed_files"],
            "read_commit_seconds": round(read_seconds, 3),
            "full_build_seconds": round(full_seconds, 3),
            "full_build_peak_traced_mib": round(peak / 2**20, 1),
            "process_max_rss_mib": round(
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
            ),
            "index_json_mib": round(len(json.dumps(index.to_json())) / 2**20, 1),
            "changed_files": len(changed_paths),
            "incremental_update_seconds": round(incremental_seconds, 3),
            "incremental_to_full_ratio": round(incremental_seconds / full_seconds, 3),
            # CPU time of this process: less moved by other work on a shared machine.
            "full_build_cpu_seconds": round(full_cpu, 3),
            "incremental_update_cpu_seconds": round(incremental_cpu, 3),
            "incremental_to_full_cpu_ratio": round(incremental_cpu / full_cpu, 3),
            "cohorts_for_change": len(cohorts),
            "cohort_seconds": round(cohort_seconds, 3),
            "incremental_equals_full_build": identical,
        }


def _write_commit(root: Path, tree: dict[str, str], message: str) -> None:
    for path, text in tree.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", message)


def cohort_quality(case: QualityRepo) -> dict[str, object]:
    """One language's generated repository: its change's cohorts and own-import resolution."""
    with tempfile.TemporaryDirectory(prefix="quorum-bench-cohorts-") as tmp:
        root = Path(tmp)
        git(root, "init", "--quiet")
        _write_commit(root, case.base, "base")
        git(root, "checkout", "--quiet", "-b", "feature")
        _write_commit(root, case.change, "change")
        source = LocalGitSource(root)
        diff = source.diff("HEAD~1", "HEAD")
        head = build_index(files_at_commit(source, diff.head_sha))
        base = build_index(files_at_commit(source, diff.merge_base_sha))
        cohorts = compute_cohorts(diff.files, head, base=base)
        family = "js" if case.language == "typescript" else case.language
        rate = import_resolution(head)[family]
        main = cohorts[0]
        radius = main.blast_radius
        return {
            "language": case.language,
            "changed_files": len(diff.files),
            "cohorts": len(cohorts),
            "grouped_as_expected": set(main.paths) == {case.util, case.module, case.test},
            "reading_order": " → ".join(s.path.rpartition("/")[2] for s in main.reading_order),
            "blast_radius": None if radius is None else f"{radius.definitions} / {radius.files}",
            "own_imports_resolved": f"{rate.resolved}/{rate.total} ({rate.rate:.0%})",
        }


# Real Python code installed with the project: each package indexed alone, as its own
# repository would be (its imports of itself are its own imports).
INSTALLED = ("django", "httpx", "requests", "urllib3", "pydantic", "click", "rich", "celery")


def installed_resolution(packages: tuple[str, ...] = INSTALLED) -> dict[str, str]:
    """Own imports resolved ÷ all, per installed package that is present."""
    site = Path(django.__file__).resolve().parent.parent
    rates = {}
    for name in packages:
        root = site / name
        if not root.is_dir():
            continue
        files = {
            str(p.relative_to(site)): p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(root.rglob("*.py"))
        }
        rate = import_resolution(build_index(files)).get("python")
        if rate is not None:
            rates[name] = f"{rate.resolved}/{rate.total} ({rate.rate:.1%})"
    return rates


CORPUS = Path(__file__).parent / "corpus" / "index_resolution.toml"


def clone_resolution(clones: Path) -> list[str]:
    """Own imports resolved per repository of the corpus, each read from `clones/<name>` at the
    commit the corpus names (checked out first)."""
    import tomllib

    lines = []
    by_language: dict[str, Attachment] = {}
    for entry in tomllib.loads(CORPUS.read_text())["repository"]:
        clone = clones / entry["repository"].split("/")[-1]
        if not clone.is_dir():
            lines.append(f"  {entry['repository']:24} missing: clone it into {clone}")
            continue
        git(clone, "checkout", "-q", entry["commit"])
        rates = import_resolution(build_index(files_in_directory(clone)))
        rate = rates.get(entry["language"])
        if rate is None:
            lines.append(f"  {entry['repository']:24} no {entry['language']} imports")
            continue
        mark = "ok" if rate.rate >= entry["goal"] else "BELOW GOAL"
        lines.append(
            f"  {entry['repository']:24} {entry['language']:6} {rate.resolved}/{rate.total} "
            f"({rate.rate:.1%}; before {entry['before']}) {mark}"
        )
        if "range" in entry:
            figures, cohorts = range_cohorts(clone, *entry["range"])
            lines.append(
                f"  {'':24} {'..'.join(entry['range'])}: "
                + ", ".join(f"{k} {v}" for k, v in figures.items())
            )
            found = attachment(cohorts, labels_of(entry["repository"]))
            by_language.setdefault(entry["language"], Attachment()).add(found)
            lines.append(f"  {'':24} tests attached {found.summary()}")
            lines += [f"  {'':26} wrong: {w}" for w in found.wrong]
    total = Attachment()
    lines.append("tests attached where the labels put them, per language")
    for language, found in sorted(by_language.items()):
        total.add(found)
        lines.append(f"  {language:6} {found.summary()}")
    lines.append(f"  {'all':6} {total.summary()}")
    return lines


def range_cohorts(
    clone: Path, base: str, head: str
) -> tuple[dict[str, object], tuple[Cohort, ...]]:
    """A release range's cohorts as a round computes them: how many, files in more than one,
    path lists repeated, test files attached to code vs in the group linked to nothing; and
    the cohorts."""
    from reviews.domain.classification import ChangeStatus, FileChange, classify_change
    from reviews.domain.redaction import redact_diff

    source = LocalGitSource(clone)
    clock = time.perf_counter()
    diff = source.diff(base, head)
    redact_diff(diff.text)
    took = {"diff and redaction": time.perf_counter() - clock}
    clock = time.perf_counter()
    statuses = {s.value: s for s in ChangeStatus}
    changes = [
        FileChange(
            f.path, f.additions, f.deletions, statuses.get(str(f.status), ChangeStatus.MODIFIED)
        )
        for f in diff.files
    ]
    classify_change(changes, diff.text)
    took["classification"] = time.perf_counter() - clock
    clock = time.perf_counter()
    base_index = build_index(files_at_commit(source, diff.merge_base_sha))
    took["base index"] = time.perf_counter() - clock
    clock = time.perf_counter()
    # As a round does it: the head from the base, only the changed files parsed again.
    head_index = update_index(base_index, changed_texts(source, diff.head_sha, diff.files))
    took["head index (incremental)"] = time.perf_counter() - clock
    clock = time.perf_counter()
    cohorts = compute_cohorts(diff.files, head_index, base=base_index)
    took["cohorts"] = time.perf_counter() - clock
    counts: dict[str, int] = {}
    for cohort in cohorts:
        for path in set(cohort.paths):
            counts[path] = counts.get(path, 0) + 1
    tests = [p for c in cohorts for p in c.paths if is_test_path(p)]
    unlinked = [p for c in cohorts if c.label == UNLINKED_TESTS_LABEL for p in c.paths]
    lists = [tuple(sorted(c.paths)) for c in cohorts]
    figures: dict[str, object] = {
        "files": len(diff.files),
        "cohorts": len(cohorts),
        "files in 2+ cohorts": sum(1 for n in counts.values() if n > 1),
        "repeated path lists": len(lists) - len(set(lists)),
        "test files attached": f"{len(tests) - len(unlinked)}/{len(tests)}",
        "cohorts per file": round(len(cohorts) / max(len(diff.files), 1), 2),
        "lines": sum(f.additions + f.deletions for f in diff.files),
        **{f"{k} s": round(v, 2) for k, v in took.items()},
        "prepare without a stored base s": round(sum(took.values()), 2),
        "prepare with a stored base s": round(sum(took.values()) - took["base index"], 2),
    }
    return figures, cohorts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-verify", action="store_true", help="skip the equality check")
    parser.add_argument(
        "--quality", action="store_true", help="only the per-language cohort quality table"
    )
    parser.add_argument(
        "--clones",
        type=Path,
        help="a directory of clones of tests/bench/corpus/index_resolution.toml's repositories",
    )
    args = parser.parse_args(argv)
    if args.clones:
        print("own imports resolved on real repositories")
        print("\n".join(clone_resolution(args.clones)))
    if not args.quality:
        for key, value in run(verify=not args.no_verify).items():
            print(f"{key:32} {value}")
    print("\nown imports resolved, installed Python packages (real code)")
    for name, rate in installed_resolution().items():
        print(f"  {name:10} {rate}")
    print("\ncohort quality per language (generated repositories)")
    for case in REPOS:
        print("  " + "  ".join(f"{k}={v}" for k, v in cohort_quality(case).items()))


if __name__ == "__main__":
    main()
