"""Labels on every sandbox container, and the start-up sweep that removes a crashed run's leftovers.

Each container carries the host, PID and process start time of the process
that created it. A container whose creator is gone (or whose PID now belongs
to another process) is a leftover; containers of live processes, and of other
hosts sharing the engine, are never touched.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import docker.errors

__all__ = ["LABEL", "Owner", "container_labels", "remove_leftovers"]

#: Present on every container this plugin creates.
LABEL = "clawcore.sandbox"
OWNER_LABEL = "clawcore.sandbox.owner"
SESSION_LABEL = "clawcore.sandbox.session"


def _start_time(pid: int) -> str:
    """The process start time in clock ticks since boot (Linux), or ``""`` where unknown."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            stat = handle.read()
    except OSError:
        return ""
    # The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


@dataclass(frozen=True)
class Owner:
    """The process that created a container: ``host/pid/start``."""

    host: str
    pid: int
    start: str

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(socket.gethostname(), pid, _start_time(pid))

    @classmethod
    def parse(cls, value: str) -> Owner | None:
        parts = value.rsplit("/", 2)
        if len(parts) != 3 or not parts[1].isdigit():
            return None
        return cls(parts[0], int(parts[1]), parts[2])

    def label(self) -> str:
        return f"{self.host}/{self.pid}/{self.start}"

    def is_alive(self) -> bool:
        """True while the creating process runs (only answerable on its own host)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # exists, belongs to someone else
        return not self.start or _start_time(self.pid) in ("", self.start)


def container_labels(session_id: str) -> dict[str, str]:
    """Labels for a new container of this process."""
    return {LABEL: "1", OWNER_LABEL: Owner.current().label(), SESSION_LABEL: session_id or "-"}


def remove_leftovers(client: Any, *, on_removed: Callable[[Mapping[str, str]], None] | None = None) -> int:
    """Remove sandbox containers whose creating process on this host is gone.

    :param client: a ``docker.DockerClient``.
    :param on_removed: called with each removed container's labels (plus its name).
    :returns: how many were removed.
    """
    here = socket.gethostname()
    removed = 0
    for container in client.containers.list(all=True, filters={"label": LABEL}):
        labels = dict(container.labels or {})
        owner = Owner.parse(labels.get(OWNER_LABEL, ""))
        if owner is None or owner.host != here or owner.is_alive():
            continue
        try:
            container.remove(force=True, v=True)
        except docker.errors.NotFound:
            continue  # another process swept it first
        removed += 1
        if on_removed is not None:
            on_removed({**labels, "name": container.name or container.id})
    return removed
