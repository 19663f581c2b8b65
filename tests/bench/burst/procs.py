"""CPU time and memory of process trees, read from /proc (psutil is not a dependency).

A process's CPU is its own `utime + stime` and, through `cutime + cstime`, that of every child
it has waited for (git, the analyzers, a pool process that was replaced). Summing the four over
the live processes of a tree counts everything the tree ran, each once."""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: split after its closing one.
    return raw[raw.rindex(")") + 2 :].split()


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (fields := _stat(int(entry))) is not None:
            tree[int(fields[1])].append(int(entry))  # fields[1] is the parent's pid
    return tree


def tree_pids(roots: list[int]) -> list[int]:
    children = _children()
    seen: list[int] = []
    stack = list(roots)
    while stack:
        pid = stack.pop()
        if pid not in seen:
            seen.append(pid)
            stack += children.get(pid, [])
    return seen


def cpu_seconds(roots: list[int]) -> float:
    """CPU (user + system) of the trees under `roots` so far, in seconds."""
    total = 0
    for pid in tree_pids(roots):
        fields = _stat(pid)
        if fields is not None:  # fields 14–17 of stat(5): utime stime cutime cstime
            total += sum(int(v) for v in fields[11:15])
    return total / TICKS


def rss_bytes(roots: list[int]) -> dict[int, int]:
    """Resident memory of every live process of the trees, by pid."""
    sizes: dict[int, int] = {}
    for pid in tree_pids(roots):
        try:
            resident = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
        except (OSError, IndexError, ValueError):
            continue
        sizes[pid] = resident * PAGE
    return sizes


def machine_busy_seconds() -> float:
    """CPU time every process of the machine has used since boot (all cores), in seconds."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICKS
