"""A minimal RFC 6455 client over asyncio streams, as the review page's htmx ws extension
speaks it (no websocket library is a dependency): the handshake with the session cookie,
unmasked server frames read, pings answered, a masked close. Every text message is kept with
the time it arrived by `clock` (by default the wall clock, time.time(), to compare with database
timestamps). Used by bench_burst and bench_ws_fanout."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import secrets
import struct
import time
from collections.abc import Callable

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class HandshakeFailed(Exception):
    pass


class WsClient:
    def __init__(
        self,
        port: int,
        path: str,
        cookie: tuple[str, str],
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.port, self.path, self.cookie, self.clock = port, path, cookie, clock
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.first = asyncio.Event()  # the first message (the sync) arrived, or the socket closed
        self.messages: list[tuple[float, str]] = []  # (arrival, text), the sync included
        self.closed = False
        self.close_code: int | None = None
        self.task: asyncio.Task | None = None

    async def connect(self) -> None:
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        key = base64.b64encode(secrets.token_bytes(16)).decode()
        name, value = self.cookie
        request = (
            f"GET {self.path} HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{self.port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: http://127.0.0.1:{self.port}\r\nCookie: {name}={value}\r\n\r\n"
        )
        self.writer.write(request.encode())
        await self.writer.drain()
        head = (await self.reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status, *lines = head.split("\r\n")
        if " 101 " not in f"{status} ":
            raise HandshakeFailed(status)
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
        digest = hashlib.sha1((key + WS_GUID).encode()).digest()  # noqa: S324 — RFC 6455 says SHA-1
        if headers.get("sec-websocket-accept") != base64.b64encode(digest).decode():
            raise HandshakeFailed("bad Sec-WebSocket-Accept")
        self.task = asyncio.create_task(self._read_loop())

    async def _frame(self) -> tuple[bool, int, bytes]:
        assert self.reader is not None
        b0, b1 = await self.reader.readexactly(2)
        length = b1 & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        mask = await self.reader.readexactly(4) if b1 & 0x80 else None
        data = await self.reader.readexactly(length)
        if mask:  # servers must not mask, but be lenient
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(data))
        return bool(b0 & 0x80), b0 & 0x0F, data

    async def _send(self, opcode: int, payload: bytes = b"") -> None:
        assert self.writer is not None and len(payload) < 126
        mask = secrets.token_bytes(4)
        masked = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
        self.writer.write(bytes([0x80 | opcode, 0x80 | len(payload)]) + mask + masked)
        await self.writer.drain()

    async def _read_loop(self) -> None:
        parts: list[bytes] = []
        try:
            while True:
                fin, opcode, data = await self._frame()
                if opcode == 0x9:  # ping
                    await self._send(0xA, data)
                elif opcode == 0x8:  # close
                    self.close_code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else 1005
                    break
                elif opcode in (0x0, 0x1, 0x2):
                    parts.append(data)
                    if fin:
                        text = b"".join(parts).decode("utf-8", "replace")
                        parts = []
                        self.messages.append((self.clock(), text))
                        self.first.set()
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            self.closed = True
            self.first.set()  # wake a waiter; `closed` tells it why

    async def close(self) -> None:
        if self.writer is None:
            return
        try:
            if not self.closed:
                await asyncio.wait_for(self._send(0x8, struct.pack("!H", 1000)), 2)
        except (TimeoutError, ConnectionError, OSError):
            pass
        if self.task is not None:
            self.task.cancel()
        self.writer.close()
