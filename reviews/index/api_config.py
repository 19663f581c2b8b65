"""A repository's own word on what is not API: `.quorum.toml` at its root (pure).

    [api]
    internal = ["black", "pkg.testing", "src/internal/**", "cmd/*"]

Each entry names what users must not rely on: a dotted Python path, a file or directory path,
or a Go package directory; a plain entry covers everything under it, `*` and `**` match as
shell patterns. The file is read from the base commit, never the head: a change cannot declare
its own breaks internal. A file that does not parse declares nothing (and says why).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase

CONFIG_PATH = ".quorum.toml"


@dataclass(frozen=True)
class ApiConfig:
    internal: tuple[str, ...] = ()
    problem: str = ""  # why the file declares nothing, when it is there but unusable
    declared: bool = field(default=False)

    def is_internal(self, where: str) -> bool:
        """Whether a reported place (`pkg.mod.Name`, `src/x.ts:Name`, `cmd/tool:Name`) lies
        under an entry."""
        subject = where.partition(":")[0] if ":" in where else where
        for entry in self.internal:
            entry = entry.strip().rstrip("/")
            if any(c in entry for c in "*?["):
                if fnmatchcase(where, entry) or fnmatchcase(subject, entry):
                    return True
                continue
            for candidate in (where, subject):
                if candidate == entry or candidate.startswith((entry + ".", entry + "/")):
                    return True
        return False


def read_api_config(base_files: Mapping[str, str]) -> ApiConfig:
    text = base_files.get(CONFIG_PATH)
    if text is None:
        return ApiConfig()
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return ApiConfig(problem=f"{CONFIG_PATH} does not parse: {exc}")
    internal = (data.get("api") or {}).get("internal", [])
    if not isinstance(internal, list) or not all(isinstance(i, str) for i in internal):
        return ApiConfig(problem=f"{CONFIG_PATH}: [api] internal must be a list of strings")
    return ApiConfig(internal=tuple(i for i in internal if i.strip()), declared=True)
