"""Fuzz the HTTP API with schemathesis against a live daphne server.

`python -m tests.api_fuzz.live` is the CI step: it migrates and seeds the database named by
DATABASE_URL (a throw-away one: schemathesis deletes what it finds), serves
config.asgi:application on 127.0.0.1, runs every schemathesis check against
/api/v1/openapi.json with a fixed seed, and stops the server. The exit status is
schemathesis': non-zero on any server error or schema violation.

The checks are configured in schemathesis.toml at the repository root.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_PATH = "/api/v1/openapi.json"
SEED = 20261130


def st_command(
    schema_url: str,
    token: str,
    *,
    max_examples: int,
    seed: int = SEED,
    phases: str = "examples,coverage,fuzzing,stateful",
) -> list[str]:
    """The schemathesis CLI call: every check, a fixed seed, bounded examples per operation."""
    st = shutil.which("st", path=str(Path(sys.executable).parent)) or "st"
    return [
        st,
        "run",
        schema_url,
        "--checks",
        "all",
        "--max-examples",
        str(max_examples),
        "--seed",
        str(seed),
        "--phases",
        phases,
        "--header",
        f"Authorization: Bearer {token}",
        "--request-timeout",
        "20",
        "--workers",
        "1",
        "--no-color",
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_schema(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (127.0.0.1)
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"the live server did not answer {url}")
        time.sleep(0.5)


@contextmanager
def daphne(env: dict[str, str], port: int, log: Path) -> Iterator[str]:
    """config.asgi:application on 127.0.0.1:PORT in its own process group, its output in LOG;
    yields its URL."""
    bin_dir = Path(sys.executable).parent
    process = subprocess.Popen(
        [str(bin_dir / "daphne"), "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"],
        cwd=ROOT,
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_schema(base + SCHEMA_PATH)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


ACCESS_LINE = re.compile(r'^\S+ - - \[[^\]]*\] "[A-Z]+ [^"]*" (\d{3}) ', re.MULTILINE)


def status_counts(log_text: str) -> str:
    """The server's answers by status from daphne's access log: "2425 requests: 200×501, …"."""
    counts = Counter(ACCESS_LINE.findall(log_text))
    listed = ", ".join(f"{code}×{n}" for code, n in sorted(counts.items()))
    return f"server answered {sum(counts.values())} requests: {listed}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=25)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL"):
        parser.error("set DATABASE_URL to a throw-away PostgreSQL database")

    with tempfile.TemporaryDirectory(prefix="quorum-fuzz-") as var_dir:
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "QUORUM_VAR_DIR": var_dir,
            # Nothing may reach a real GitHub: the API answers "not configured" (4xx) instead.
            "GITHUB_API_URL": "http://127.0.0.1:9",
            "GITHUB_TOKEN": "",
            "GITHUB_APP_ID": "",
            # Reviews it starts are queued where no worker listens.
            "QUORUM_CELERY_QUEUE": f"fuzz-{os.getpid()}",
        }
        python = [sys.executable, "manage.py"]
        subprocess.run([*python, "migrate", "--noinput", "-v", "0"], cwd=ROOT, env=env, check=True)
        token = subprocess.run(
            [sys.executable, "-m", "tests.api_fuzz.seed"],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        log = Path(var_dir) / "daphne.log"
        with daphne(env, args.port or free_port(), log) as base:
            cmd = st_command(
                base + SCHEMA_PATH, token, max_examples=args.max_examples, seed=args.seed
            )
            returncode = subprocess.run(cmd, cwd=ROOT, env=env, check=False).returncode
        print(status_counts(log.read_text(errors="replace")))
        if returncode:
            # The server's side of a failure (a traceback behind a 500) is in its log.
            print("".join(log.read_text(errors="replace").splitlines(keepends=True)[-150:]))
        return returncode


if __name__ == "__main__":
    sys.exit(main())
