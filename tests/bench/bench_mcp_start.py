"""Time from starting `manage.py mcp` until it answers `initialize`, as a coding agent sees it.

A fresh embedded data directory (SQLite) with one workspace and an agent's token; the official
SDK client starts the server over stdio five times and times `initialize`, then `list_tools`.
The goal is ≤ 2 s to `initialize` on this 2-core machine.

    python -m tests.bench.bench_mcp_start
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parents[2]
GOAL_SECONDS = 2.0
RUNS = 5

SETUP = """
from workspaces.services import api_token_create, user_ensure, workspace_create
user = user_ensure(email="agent-owner@example.com")
workspace_create(name="Bench", slug="bench", owner=user)
print(api_token_create(user=user, name="bench", agent_name="bench-agent")[1])
"""


def _env(var_dir: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(QUORUM_VAR_DIR=var_dir, SECRET_KEY="bench-only-not-a-secret")
    return env


def _manage(env: dict[str, str], *args: str, stdin: str | None = None) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


async def _once(env: dict[str, str]) -> tuple[float, float, int]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--workspace", "bench"],
        env=env,
        cwd=str(ROOT),
    )
    started = time.perf_counter()
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        initialized = time.perf_counter() - started
        tools = await session.list_tools()
        listed = time.perf_counter() - started
    return initialized, listed, len(tools.tools)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="quorum-mcp-bench-") as var_dir:
        env = _env(var_dir)
        _manage(env, "migrate", "--noinput", "-v0")
        token = _manage(env, "shell", "-c", SETUP).strip().splitlines()[-1]
        env["QUORUM_API_TOKEN"] = token
        runs = [anyio.run(_once, env) for _ in range(RUNS)]
    initialize = [r[0] for r in runs]
    p50 = statistics.median(initialize)
    print(
        json.dumps(
            {
                "runs": RUNS,
                "initialize_s": [round(x, 2) for x in initialize],
                "initialize_p50_s": round(p50, 2),
                "list_tools_p50_s": round(statistics.median(r[1] for r in runs), 2),
                "tools": runs[0][2],
                "load_average": round(os.getloadavg()[0], 2),
                "goal": f"initialize p50 <= {GOAL_SECONDS} s",
                "result": "PASS" if p50 <= GOAL_SECONDS else "FAIL",
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
