"""The exec stream reader on real sockets: framing, caps, deadlines, stdin."""

from __future__ import annotations

import socket
import struct
import threading
import time

from clawcore_sandbox_docker.exec_stream import read_frames, send_stdin


def frame(kind: int, payload: bytes) -> bytes:
    return struct.pack(">BxxxL", kind, len(payload)) + payload


def test_frames_split_across_sends_are_reassembled() -> None:
    ours, theirs = socket.socketpair()
    data = frame(1, b"hello ") + frame(2, b"oops\n") + frame(1, b"world\n")

    def write() -> None:
        for i in range(0, len(data), 3):  # headers and payloads cut mid-way
            theirs.sendall(data[i : i + 3])
            time.sleep(0.001)
        theirs.close()

    writer = threading.Thread(target=write)
    writer.start()
    outcome = read_frames(ours, time.monotonic() + 10, limit=1024)
    writer.join()
    ours.close()
    assert outcome.finished
    assert outcome.stdout.text() == "hello world\n"
    assert outcome.stderr.text() == "oops\n"
    assert not outcome.truncated


def test_each_stream_is_capped_separately() -> None:
    ours, theirs = socket.socketpair()
    payload = frame(1, b"x" * 5000) + frame(2, b"e" * 10) + frame(1, b"y" * 5000)

    def write() -> None:
        theirs.sendall(payload)
        theirs.close()

    writer = threading.Thread(target=write)
    writer.start()
    outcome = read_frames(ours, time.monotonic() + 10, limit=4096)
    writer.join()
    ours.close()
    assert outcome.stdout.text() == "x" * 4096
    assert outcome.stdout.dropped == 5904
    assert outcome.stderr.text() == "e" * 10
    assert outcome.truncated


def test_deadline_stops_a_stream_that_never_closes() -> None:
    ours, theirs = socket.socketpair()
    theirs.sendall(frame(1, b"partial"))
    started = time.monotonic()
    outcome = read_frames(ours, started + 0.3, limit=1024)
    elapsed = time.monotonic() - started
    ours.close()
    theirs.close()
    assert not outcome.finished
    assert outcome.stdout.text() == "partial"
    assert 0.25 < elapsed < 2


def test_invalid_utf8_is_replaced_not_raised() -> None:
    ours, theirs = socket.socketpair()
    theirs.sendall(frame(1, b"ok \xff\xfe end"))
    theirs.close()
    outcome = read_frames(ours, time.monotonic() + 5, limit=1024)
    ours.close()
    assert outcome.stdout.text() == "ok \ufffd\ufffd end"


def test_stdin_is_sent_and_closed() -> None:
    ours, theirs = socket.socketpair()
    send_stdin(ours, b"line one\nline two", time.monotonic() + 5)
    received = b""
    while chunk := theirs.recv(1024):
        received += chunk  # ends because our writing half was shut down
    ours.close()
    theirs.close()
    assert received == b"line one\nline two"


def test_a_flood_stops_reading() -> None:
    ours, theirs = socket.socketpair()
    theirs.sendall(frame(1, b"z" * 3000) * 4)  # never closed
    outcome = read_frames(ours, time.monotonic() + 10, limit=1000, flood=4000)
    ours.close()
    theirs.close()
    assert outcome.flooded and not outcome.finished
    assert outcome.stdout.text() == "z" * 1000
