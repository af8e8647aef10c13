"""Headless Chromium driven over the DevTools protocol on a pipe, with no extra dependency.

``--remote-debugging-pipe`` makes Chromium read protocol commands from file descriptor 3 and
write replies and events to descriptor 4, each a JSON text ending in a NUL byte. A test opens
a page at a given viewport (phone or desktop), evaluates JavaScript on the laid-out page, lists
every request the page made, and takes screenshots, decoded here into RGB pixels.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path
from typing import Any

__all__ = ["Browser", "chromium_path", "decode_png"]

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
]


def chromium_path() -> str | None:
    """Debian's Chromium, if installed."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _as_fds_3_and_4(reads: int, writes: int) -> None:
    # Moved out of the way first: either end may itself be 3 or 4, and dup2 onto the same
    # number would keep its close-on-exec flag.
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (reads, writes)]
    for target, fd in zip((3, 4), high, strict=True):
        os.dup2(fd, target)  # inheritable
        os.close(fd)


class Browser:
    """One Chromium process with one page; use as a context manager."""

    def __init__(self, executable: str) -> None:
        self._profile = tempfile.mkdtemp(prefix="ppaux-chromium-")
        send_read, self._send = os.pipe()  # we write commands, Chromium reads fd 3
        self._receive, receive_write = os.pipe()  # Chromium writes fd 4, we read
        self._process = subprocess.Popen(
            [executable, *_FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # The pipe ends become descriptors 3 and 4 in the child; close_fds would close them
            # again after preexec_fn, and the pipes' own descriptors are not inherited.
            close_fds=False,
            preexec_fn=lambda: _as_fds_3_and_4(send_read, receive_write),
        )
        os.close(send_read)
        os.close(receive_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = self._attach()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End Chromium and remove its profile."""
        with contextlib.suppress(Exception):
            self.call("Browser.close")
        try:
            self._process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._send, self._receive):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._receive, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed its DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and return its result; events that arrive meanwhile are kept."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        os.write(self._send, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._message()
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def _attach(self) -> str:
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = self.call("Target.attachToTarget", targetId=page["targetId"], flatten=True)[
            "sessionId"
        ]
        for domain in ("Page", "Network", "Runtime"):
            self.call(f"{domain}.enable", session)
        return session

    def open(self, url: str, width: int, height: int, mobile: bool) -> None:
        """Load ``url`` at a viewport of ``width`` x ``height`` CSS pixels and wait for it."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            self.session,
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=mobile,
        )
        self.events.clear()
        self.call("Page.navigate", self.session, url=url)
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._message())

    def requests(self) -> list[str]:
        """The URLs the page requested since it was opened."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression on the page (returned by value)."""
        result = self.call(
            "Runtime.evaluate", self.session, expression=expression, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(
        self, path: Path, clip: tuple[float, float, float, float] | None = None
    ) -> tuple[int, int, bytes]:
        """Write a PNG of the viewport, or of ``clip`` (x, y, width, height in page CSS
        pixels, inside the viewport as it is scrolled now), to ``path``; return its width,
        height and RGB pixels."""
        params: dict[str, Any] = {"format": "png"}
        if clip is not None:
            x, y, width, height = clip
            params.update(
                captureBeyondViewport=False,
                clip={"x": x, "y": y, "width": width, "height": height, "scale": 1},
            )
        data = base64.b64decode(self.call("Page.captureScreenshot", self.session, **params)["data"])
        path.write_bytes(data)
        return decode_png(data)


def decode_png(data: bytes) -> tuple[int, int, bytes]:
    """Width, height and RGB bytes of an 8-bit, non-interlaced RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
    assert header is not None
    width, height, depth, colour, _, _, interlace = header
    assert depth == 8 and colour in (2, 6) and interlace == 0, header
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    out = bytearray()
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                predictor = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + predictor) & 0xFF
        previous = line
        if channels == 3:
            out += line
        else:
            for i in range(0, stride, 4):
                out += line[i : i + 3]
    return width, height, bytes(out)
