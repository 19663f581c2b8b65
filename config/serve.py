"""The production web command: several daphne processes on one port.

`python -m config.serve --bind 0.0.0.0 --port 8000 --processes 3` binds the port (a listening
socket per process on Linux, `listen_each`), then starts that many `daphne --fd` processes on
it; the kernel hands each new connection to one of them, so HTTP requests, websockets and the
ORM work behind them spread over the machine's cores (one daphne process runs its consumers'
database calls on one thread). Channels groups go through Redis (channels_redis), so an event
reaches the sockets of every process. A process that dies is started again on its socket (after
a second, at most once a second); SIGTERM or SIGINT stops them all and waits for them. The
default number of processes is QUORUM_WEB_PROCESSES, or the number of cores.

No Django here: each daphne process loads the application itself.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence

APPLICATION = "config.asgi:application"


def default_processes() -> int:
    raw = os.environ.get("QUORUM_WEB_PROCESSES", "")
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return max(1, os.cpu_count() or 1)


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bind", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--processes", type=int, default=default_processes())
    p.add_argument("daphne_args", nargs="*", help="passed to every daphne (after --)")
    return p.parse_args(argv)


def listen(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def listen_each(host: str, port: int, count: int) -> list[socket.socket]:
    """A listening socket per process where the kernel spreads connections over them (Linux's
    SO_REUSEPORT), else one socket they all accept from. On one shared socket, a process that
    wakes first accepts every connection waiting (daphne takes up to a hundred at once), so a
    client opening its connections together could land all of them on one process: one
    interpreter lock serving them while the other cores idle."""
    if count < 2 or not sys.platform.startswith("linux"):
        return [listen(host, port)] * max(1, count)
    # A plain bind first: the port must be free, never shared with a server left running.
    listen(host, port).close()
    return [listen(host, port, reuse_port=True) for _ in range(count)]


# How long a websocket may take to be accepted. daphne's default of 5 s dropped handshakes of
# live pages while a burst of reviews kept the cores busy (the page's access check had not yet
# run); a browser waits longer than that. `extra` may still set it.
HANDSHAKE_SECONDS = 20


def daphne_command(fd: int, extra: Sequence[str]) -> list[str]:
    timeout = ("--websocket_connect_timeout", str(HANDSHAKE_SECONDS))
    return [sys.executable, "-m", "daphne", "--fd", str(fd), *timeout, *extra, APPLICATION]


def serve(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    sockets = listen_each(args.bind, args.port, max(1, args.processes))
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    def start(index: int) -> subprocess.Popen:
        # A process started again takes its predecessor's socket and what waits in it.
        fd = sockets[index].fileno()
        return subprocess.Popen(daphne_command(fd, args.daphne_args), pass_fds=(fd,))

    children = [start(index) for index in range(len(sockets))]
    print(f"serving on {args.bind}:{args.port} with {len(children)} daphne processes", flush=True)
    last_start = time.monotonic()
    while not stopping:
        time.sleep(0.2)
        for index, child in enumerate(children):
            if child.poll() is not None and not stopping:
                print(
                    f"daphne {child.pid} exited ({child.returncode}): starting another", flush=True
                )
                time.sleep(max(0.0, 1.0 - (time.monotonic() - last_start)))
                children[index], last_start = start(index), time.monotonic()
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + 20
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    for sock in set(sockets):
        sock.close()
    return 0


if __name__ == "__main__":
    sys.exit(serve())
