"""Reading one ``exec``'s multiplexed output with a deadline and a size cap.

The engine sends stdout and stderr on one socket in frames of
``[stream:1][0:3][length:4 big-endian][payload]``. The Docker SDK's own
readers block without a deadline, so this module reads the raw socket with
``select`` and stops at the deadline: a command that never closes its output
cannot hang the caller.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CappedOutput", "StreamOutcome", "raw_socket", "read_frames", "send_stdin"]

_HEADER = struct.Struct(">BxxxL")
_STDOUT, _STDERR = 1, 2


@dataclass
class CappedOutput:
    """Bytes of one stream, kept up to ``limit``; the rest is counted and dropped."""

    limit: int
    data: bytearray = field(default_factory=bytearray)
    dropped: int = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class StreamOutcome:
    """How reading ended: the stream closed (``finished``), the output passed the
    flood limit (``flooded``), or else the deadline passed."""

    finished: bool
    stdout: CappedOutput
    stderr: CappedOutput
    flooded: bool = False

    @property
    def truncated(self) -> bool:
        return bool(self.stdout.dropped or self.stderr.dropped)


def raw_socket(attached: Any) -> socket.socket:
    """The plain socket under what ``exec_start(socket=True)`` returned."""
    sock = getattr(attached, "_sock", attached)
    if not isinstance(sock, socket.socket):  # pragma: no cover - transport the SDK does not use here
        raise TypeError(f"unsupported exec transport {type(attached).__name__}")
    return sock


def send_stdin(sock: socket.socket, data: bytes, deadline: float) -> None:
    """Write ``data`` then close our writing half so the command sees end of input."""
    view = memoryview(data)
    while view:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        _, writable, _ = select.select([], [sock], [], remaining)
        if not writable:
            break
        try:
            sent = sock.send(view[:65536])
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            break  # the command exited without reading all of it
        view = view[sent:]
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def read_frames(sock: socket.socket, deadline: float, limit: int, flood: int | None = None) -> StreamOutcome:
    """Demultiplex frames until the stream closes or ``deadline`` (monotonic) passes.

    :param limit: bytes kept per stream.
    :param flood: stop reading once this many bytes were dropped (a command
        that only floods output gains nothing from running on).
    """
    stdout, stderr = CappedOutput(limit), CappedOutput(limit)
    pending = bytearray()
    finished = False
    while True:
        if flood is not None and stdout.dropped + stderr.dropped > flood:
            return StreamOutcome(False, stdout, stderr, flooded=True)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        readable, _, _ = select.select([sock], [], [], remaining)
        if not readable:
            break
        try:
            chunk = sock.recv(262144)
        except (BlockingIOError, InterruptedError):
            continue
        except OSError:
            finished = True
            break
        if not chunk:
            finished = True
            break
        pending += chunk
        while len(pending) >= _HEADER.size:
            kind, length = _HEADER.unpack_from(pending)
            if len(pending) < _HEADER.size + length:
                break
            payload = bytes(pending[_HEADER.size : _HEADER.size + length])
            del pending[: _HEADER.size + length]
            (stderr if kind == _STDERR else stdout).add(payload)
    return StreamOutcome(finished, stdout, stderr)
