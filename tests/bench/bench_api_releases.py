"""Does the apiContract axis hold on published releases? Consecutive releases of widely used
packages, downloaded from PyPI (sdists) and npm (tarballs) at run time, compared by the axis as
a change from one release to the next.

A patch or minor release of a semver package (any release of a calver one) is expected to
break nothing: every break the axis reports there is printed with its reason, to be read and
judged (docs/api-contract-benchmark.md keeps the judgement). A major release is expected to
list its breaks as expected ones (the manifest announces them).

    python -m tests.bench.bench_api_releases [--only NAME] [--cache DIR] [--json FILE]

The corpus is tests/bench/corpus/api_releases.toml. Downloads are cached (default
~/.cache/quorum-bench/releases).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import tarfile
import time
import tomllib
import urllib.request
import zipfile
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from urllib.parse import urljoin

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret")
django.setup()

from reviews.index.axes_compute import compute_api_contract, contract_file  # noqa: E402

CORPUS = Path(__file__).with_name("corpus") / "api_releases.toml"
MAX_FILE = 1_000_000


@dataclass
class Pair:
    registry: str
    name: str
    old: str
    new: str
    kind: str  # patch | minor | major
    scheme: str = "semver"
    result: str = ""
    breaks: list[str] = field(default_factory=list)
    expected: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def may_break(self) -> bool:
        return self.kind == "major"

    @property
    def reported(self) -> list[str]:
        """What the axis reported as a break. A calver package's year does not announce one,
        so a break the axis took as expected from the version counts as reported there."""
        return self.breaks + (self.expected if self.scheme == "calver" else [])


def release_kind(scheme: str, old: str, new: str) -> str:
    """patch, minor or major as semantic versioning reads the pair; calver never breaks by
    number (its first number is a year)."""
    if scheme == "calver":
        return "minor"
    a = [int(p) for p in old.split(".")[:3]] + [0, 0]
    b = [int(p) for p in new.split(".")[:3]] + [0, 0]
    if b[0] != a[0] or (a[0] == 0 and b[1] != a[1]):
        return "major"
    return "minor" if b[1] != a[1] else "patch"


def _download(url: str, cache: Path) -> bytes:
    if not url.startswith("https://"):
        raise LookupError(f"not an https address: {url}")
    target = cache / url.rsplit("/", 1)[-1]
    if not target.exists():
        with urllib.request.urlopen(url, timeout=120) as response:  # noqa: S310 (https only)
            target.write_bytes(response.read())
    return target.read_bytes()


def _pypi_url(name: str, version: str) -> str:
    index = f"https://pypi.org/pypi/{name}/json"
    with urllib.request.urlopen(index, timeout=60) as r:
        files = json.load(r)["releases"].get(version, [])
    # A mirror of the index may answer with addresses relative to itself.
    sdists = [urljoin(index, f["url"]) for f in files if f["packagetype"] == "sdist"]
    if not sdists:
        raise LookupError(f"{name} {version} has no sdist")
    return sdists[0]


def _npm_url(name: str, version: str) -> str:
    with urllib.request.urlopen(f"https://registry.npmjs.org/{name}/{version}", timeout=60) as r:
        return json.load(r)["dist"]["tarball"]


def release_files(registry: str, name: str, version: str, cache: Path) -> dict[str, str]:
    """The files the axis reads from one release, by path inside the package (the archive's
    top directory removed)."""
    url = _pypi_url(name, version) if registry == "pypi" else _npm_url(name, version)
    data = _download(url, cache)
    members: list[tuple[str, bytes]] = []
    if url.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if not info.is_dir() and info.file_size <= MAX_FILE:
                    members.append((info.filename, archive.read(info)))
    else:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            for member in archive.getmembers():
                if member.isfile() and member.size <= MAX_FILE:
                    handle = archive.extractfile(member)
                    if handle is not None:
                        members.append((member.name, handle.read()))
    files: dict[str, str] = {}
    for path, raw in members:
        inner = path.split("/", 1)[1] if "/" in path else path
        if inner and contract_file(inner):
            files[inner] = raw.decode("utf-8", errors="replace")
    return files


def compare(pair: Pair, base: dict[str, str], head: dict[str, str]) -> None:
    started = time.perf_counter()
    result, details = compute_api_contract(base_files=base, head_files=head)
    pair.seconds = time.perf_counter() - started
    pair.result = result.value
    for change in details["changes"]:
        line = f"{change.get('where', '')}: {change.get('message', '')}"
        if change["severity"] == "breaking":
            pair.breaks.append(line)
        elif change["severity"] == "expected":
            pair.expected.append(line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], help="package name (repeatable)")
    parser.add_argument("--cache", default=str(Path.home() / ".cache/quorum-bench/releases"))
    parser.add_argument("--json", help="write every pair's result to this file")
    args = parser.parse_args()
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)

    corpus = tomllib.loads(CORPUS.read_text())["package"]
    pairs: list[Pair] = []
    for entry in corpus:
        if args.only and entry["name"] not in args.only:
            continue
        versions = entry["versions"]
        trees = {}
        for version in versions:
            try:
                trees[version] = release_files(entry["registry"], entry["name"], version, cache)
            except (OSError, LookupError, tarfile.TarError, zipfile.BadZipFile) as exc:
                print(f"  {entry['name']} {version}: not downloaded ({exc})", file=sys.stderr)
        for old, new in pairwise(versions):
            if old not in trees or new not in trees:
                continue
            pair = Pair(
                entry["registry"],
                entry["name"],
                old,
                new,
                release_kind(entry.get("scheme", "semver"), old, new),
                entry.get("scheme", "semver"),
            )
            compare(pair, trees[old], trees[new])
            pairs.append(pair)
            flag = "BREAKS" if pair.reported and not pair.may_break else ""
            print(
                f"{pair.registry:4} {pair.name:15} {old:>9} -> {new:<9} {pair.kind:5} "
                f"{pair.result:11} breaks={len(pair.breaks)} expected={len(pair.expected)} "
                f"{pair.seconds:5.1f}s {flag}"
            )
            for line in pair.reported[:12]:
                print(f"      break: {line}")
            if len(pair.reported) > 12:
                print(f"      … {len(pair.reported) - 12} more")

    quiet = [p for p in pairs if not p.may_break]
    noisy = [p for p in quiet if p.reported]
    majors = [p for p in pairs if p.may_break]
    print()
    print(f"pairs compared: {len(pairs)} of {len({p.name for p in pairs})} packages")
    print(
        f"patch/minor releases reported as breaking: {len(noisy)} of {len(quiet)}"
        + (f" (1 in {len(quiet) / len(noisy):.1f})" if noisy else "")
    )
    print(
        "results on patch/minor: "
        + ", ".join(
            f"{r} {sum(p.result == r for p in quiet)}" for r in sorted({p.result for p in quiet})
        )
    )
    print(
        f"major releases: {len(majors)}, with breaks listed as expected: "
        f"{sum(bool(p.expected) for p in majors)}, reported as breaking: "
        f"{sum(bool(p.breaks) for p in majors)}"
    )
    if args.json:
        Path(args.json).write_text(json.dumps([p.__dict__ for p in pairs], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
