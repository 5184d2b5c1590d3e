"""Keeping the index current while files change: poll, debounce, sync.

Polling file sizes and modification times needs no platform watcher and
sees edits made by any program (an editor, ``git pull``, a sync client).
A burst of writes is synced once, after the files have been quiet for the
debounce period.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from clawcore.memory.engine import Memory
from clawcore.memory.results import SyncReport
from clawcore.memory.sources import discover

__all__ = ["snapshot", "watch_memory"]


def snapshot(memory: Memory) -> dict[str, tuple[int, int]]:
    """``path -> (mtime_ns, size)`` of every memory file now."""
    state: dict[str, tuple[int, int]] = {}
    for f in discover(memory.workspace, memory.settings.extra_paths):
        try:
            st = f.real.stat()
        except OSError:
            continue
        state[f.path] = (st.st_mtime_ns, st.st_size)
    return state


def watch_memory(
    memory: Memory,
    on_sync: Callable[[SyncReport], None] | None = None,
    *,
    interval_s: float | None = None,
    debounce_s: float | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Sync now, then again after every change, until ``stop`` is set (or Ctrl-C).

    :param on_sync: called with each sync's report.
    :param interval_s: how often to look (default ``memory.sync.watchInterval``).
    :param debounce_s: how long files must stay unchanged before a sync
        (default ``memory.sync.watchDebounce``).
    """
    interval = memory.settings.watch_interval_s if interval_s is None else interval_s
    debounce = memory.settings.watch_debounce_s if debounce_s is None else debounce_s
    stop = stop or threading.Event()
    report = memory.sync()
    if on_sync is not None:
        on_sync(report)
    synced = snapshot(memory)
    seen, changed_at = synced, None
    while not stop.wait(interval):
        now = snapshot(memory)
        if now != seen:
            seen, changed_at = now, time.monotonic()
            continue
        if now != synced and changed_at is not None and time.monotonic() - changed_at >= debounce:
            report = memory.sync()
            synced, changed_at = now, None
            if on_sync is not None:
                on_sync(report)
