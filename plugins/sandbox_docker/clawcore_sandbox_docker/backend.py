"""The ``docker`` sandbox backend: one locked-down container per session, commands run with ``exec``.

The container starts on the first command and is reused for the next ones,
so files written to ``/tmp`` last for the session; processes do not outlive
the command that started them.
It is removed by :meth:`DockerSandbox.close`, at ``session_end``, at
interpreter exit, and — after a crash — by the start-up sweep of
:mod:`clawcore_sandbox_docker.leftovers`.
"""

from __future__ import annotations

import atexit
import os
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import docker.errors
import docker.types
from clawcore.sandbox.local import covering, make_placeholders
from clawcore.types import ExecResult, SandboxBackend

from clawcore_sandbox_docker.engine import ENGINE_ERRORS, SandboxEngineError, engine_address
from clawcore_sandbox_docker.exec_stream import raw_socket, read_frames, send_stdin
from clawcore_sandbox_docker.leftovers import container_labels
from clawcore_sandbox_docker.settings import WORKSPACE_MOUNT, DockerSettings

__all__ = ["DockerSandbox", "close_session_backends"]

Recorder = Callable[[str, Mapping[str, Any]], None]
#: Makes the local backend when the engine fails mid-session and ``fallback: local``.
LocalFactory = Callable[[], SandboxBackend]

#: Exit status of a command killed with SIGKILL (at its timeout or for flooding output).
KILLED_EXIT = 137
#: A command whose dropped output passes this many caps is killed: it gains nothing by running on.
FLOOD_FACTOR = 4
#: Seconds to read and drop the output of a killed command.
_DRAIN_S = 3.0
#: Seconds to wait for an exec's exit status after its output closed.
_EXIT_WAIT_S = 5.0
#: Runs the command with bash where the image has it, else the POSIX shell, then
#: kills what it left running: no process outlives its command (engines differ on
#: whether output of leftovers is still collected; this makes them agree).
_SHELL = (
    'if [ -x /bin/bash ]; then /bin/bash -c "$1"; else /bin/sh -c "$1"; fi; '
    "rc=$?; kill -9 -1 2>/dev/null; exit $rc"
)
#: The container's PID 1: a shell that waits, and so reaps the orphans of finished
#: commands (a plain ``sleep`` would leave zombies that count against the pids limit).
_INIT = "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done"
_BASE_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
}

_live: weakref.WeakSet[DockerSandbox] = weakref.WeakSet()
_atexit_registered = False


_empty: str | None = None


def _empty_folder() -> str:
    """An empty folder no one may enter, made once per process and removed at exit: what covers a folder."""
    global _empty
    if _empty is None:
        _empty = tempfile.mkdtemp(prefix="clawcore-covered-")
        os.chmod(_empty, 0)
        atexit.register(os.rmdir, _empty)
    return _empty


def _close_all_live() -> None:
    for backend in list(_live):
        backend.close()


def close_session_backends(session_id: str) -> None:
    """Close every live backend made for ``session_id`` (its container is removed)."""
    if not session_id:
        return
    for backend in list(_live):
        if backend.session_id == session_id:
            backend.close()


class DockerSandbox:
    """Runs commands in one hardened container, created on first use.

    :param client: a connected ``docker.DockerClient`` whose calls time out.
    :param settings: the parsed ``sandbox.docker`` section.
    :param workspace: the host workspace, mounted per ``workspaceAccess``.
    :param session_id: labels the container and ties it to ``session_end``.
    :param record: audit recorder (``HookContext.record``).
    :param local_factory: makes the local backend for ``fallback: local``.
    """

    name = "docker"

    def __init__(
        self,
        client: Any,
        settings: DockerSettings,
        *,
        workspace: Path,
        session_id: str = "",
        record: Recorder | None = None,
        local_factory: LocalFactory | None = None,
        hidden: Sequence[Path] = (),
        placeholders: Mapping[Path, bool] | None = None,
    ) -> None:
        global _atexit_registered
        self.client = client
        self.settings = settings
        self.workspace = Path(workspace).expanduser()
        #: Host paths that must not show through the workspace mount (the runtime's files, credential stores).
        self.hidden = tuple(Path(p) for p in hidden)
        #: The runtime's entries (path: is a folder) created empty when missing, to be covered too.
        self.placeholders = dict(placeholders or {})
        self.session_id = session_id
        self.user = settings.resolve_user(self.workspace)
        self._record = record or (lambda kind, data: None)
        self._local_factory = local_factory
        self._fallback: SandboxBackend | None = None
        self._container: Any = None
        self._lock = threading.RLock()
        self._closed = False
        _live.add(self)
        if not _atexit_registered:
            atexit.register(_close_all_live)
            _atexit_registered = True

    # -- the protocol ----------------------------------------------------------

    def run(
        self,
        command: str,
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        stdin: str | None = None,
    ) -> ExecResult:
        """Run ``command`` in the session's container; never raises for a failing command.

        :raises SandboxEngineError: the engine failed and ``fallback`` is ``fail-closed``.
        """
        with self._lock:
            if self._closed:
                raise SandboxEngineError("the docker sandbox was closed; commands are refused")
            if self._fallback is not None:
                return self._fallback.run(command, cwd=cwd, timeout_s=timeout_s, env=env, stdin=stdin)
            limit = self.settings.timeout_s if timeout_s <= 0 else min(timeout_s, self.settings.timeout_s)
            started = time.monotonic()
            try:
                exec_id, attached = self._start_exec(command, self._container_cwd(cwd), env, stdin is not None)
            except ENGINE_ERRORS as exc:
                return self._engine_failed(exc, command, cwd=cwd, timeout_s=timeout_s, env=env, stdin=stdin)
            sock = raw_socket(attached)
            try:
                deadline = started + limit
                if stdin is not None:
                    send_stdin(sock, stdin.encode("utf-8"), deadline)
                limit_bytes = self.settings.output_limit
                outcome = read_frames(sock, deadline, limit_bytes, flood=FLOOD_FACTOR * limit_bytes)
                if not outcome.finished:
                    self._kill_running()
                    # Drain what the killed command left in flight: an unread stream
                    # holds the exec (and the container's removal) for seconds.
                    read_frames(sock, time.monotonic() + _DRAIN_S, 0)
            finally:
                sock.close()
            timed_out = not outcome.finished and not outcome.flooded
            exit_code = self._exit_code(exec_id, killed=not outcome.finished)
            if outcome.finished and exit_code > 128:
                # Killed by a signal, perhaps the wrapper shell itself (`kill -9 $PPID`): its own clean-up
                # never ran, and what the command started in the background would outlive it.
                self._kill_running()
            stderr = outcome.stderr.text()
            separator = "\n" if stderr and not stderr.endswith("\n") else ""
            if timed_out:
                stderr += f"{separator}[killed: timed out after {limit:g}s]\n"
            elif outcome.flooded:
                stderr += f"{separator}[killed: output passed {FLOOD_FACTOR} times the {limit_bytes}-byte cap]\n"
            return ExecResult(
                exit_code=exit_code,
                stdout=outcome.stdout.text(),
                stderr=stderr,
                timed_out=timed_out,
                truncated=outcome.truncated,
                duration_s=time.monotonic() - started,
                backend=self.name,
            )

    def info(self) -> str:
        """The boundary, for the system prompt."""
        s = self.settings
        network = "no network (loopback only)" if s.network_mode == "none" else "the engine's bridge network"
        workspace = {
            "none": "The workspace is not available inside.",
            "ro": f"The workspace is mounted read-only at {WORKSPACE_MOUNT}.",
            "rw": f"The workspace is mounted read-write at {WORKSPACE_MOUNT}.",
        }[s.workspace_access]
        root = "a read-only root filesystem" if s.read_only_root else "a writable root filesystem"
        return (
            f"Commands run in a container of image {s.image} as unprivileged user {self.user}, with "
            f"{root}, a {s.tmpfs_bytes // 1024**2} MiB tmpfs at /tmp, {network}, "
            f"{s.memory_bytes // 1024**2} MiB of memory, {s.nano_cpus / 1e9:g} CPU, at most "
            f"{s.pids_limit} processes, all capabilities dropped and no privilege escalation. "
            f"{workspace} Each command may run {s.timeout_s:g}s; its output is cut after "
            f"{s.output_limit // 1024} KiB per stream. Files in /tmp last for the session; "
            "processes started in the background end with their command."
        )

    def close(self) -> None:
        """Remove the container and release the engine connection; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            _live.discard(self)
            self._discard_container()
            if self._fallback is not None:
                self._fallback.close()
            try:
                self.client.close()
            except ENGINE_ERRORS:
                pass

    # -- the container ---------------------------------------------------------

    @property
    def container_id(self) -> str | None:
        """The session container's id, or None before the first command."""
        return self._container.id if self._container is not None else None

    def _ensure_container(self) -> Any:
        if self._container is not None:
            return self._container
        s = self.settings
        volumes = {}
        masks: list[docker.types.Mount] = []
        if s.workspace_access != "none":
            self.workspace.mkdir(parents=True, exist_ok=True)
            volumes[str(self.workspace.resolve())] = {"bind": WORKSPACE_MOUNT, "mode": s.workspace_access}
            masks = self._masks()
        name = f"clawcore-sandbox-{uuid.uuid4().hex[:12]}"
        container = self.client.containers.create(
            s.image,
            ["/bin/sh", "-c", _INIT],
            name=name,
            labels=container_labels(self.session_id),
            detach=True,
            user=self.user,
            working_dir="/tmp",
            environment=dict(_BASE_ENV),
            read_only=s.read_only_root,
            network_mode=s.network_mode,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            pids_limit=s.pids_limit,
            mem_limit=s.memory_bytes,
            memswap_limit=s.memory_bytes,
            nano_cpus=s.nano_cpus,
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={s.tmpfs_bytes},mode=1777"},
            volumes=volumes,
            mounts=masks,
            stdin_open=False,
            tty=False,
        )
        try:
            container.start()
        except BaseException:
            self._remove(container)
            raise
        self._container = container
        self._record(
            "sandbox.docker.container_started",
            {"container": name, "image": s.image, "user": self.user, "session": self.session_id},
        )
        return container

    def _masks(self) -> list[docker.types.Mount]:
        """What covers the hidden paths inside the mounted workspace: an empty, inaccessible folder over a
        folder, ``/dev/null`` over a file. A home kept in the project (``workspace: .``) or a workspace that
        is a home of its own would otherwise show its config, audit keys and credentials to every command.

        They are ``mounts``, which the engine applies after the workspace's bind. Not tmpfs: Podman copies
        what the covered folder holds into a tmpfs mounted over it."""
        root = self.workspace.resolve()
        if self.settings.workspace_access == "rw":
            make_placeholders(self.placeholders, lambda path: path.is_relative_to(root))
        inside = [real for real in map(Path, map(os.path.realpath, self.hidden)) if real.is_relative_to(root)]
        folders, files = covering(inside, keep=[root])
        # Every folder between the workspace and a covered path bound onto itself: a mount point, which no
        # command can rename to read what the covered path holds.
        pins = sorted({parent for path in (*folders, *files) for parent in path.parents
                       if parent != root and parent.is_relative_to(root)}, key=lambda p: len(p.parts))

        def target(real: Path) -> str:
            return f"{WORKSPACE_MOUNT}/{real.relative_to(root).as_posix()}"

        read_only = self.settings.workspace_access != "rw"
        return [*(docker.types.Mount(target(p), str(p), type="bind", read_only=read_only) for p in pins),
                *(docker.types.Mount(target(f), _empty_folder(), type="bind", read_only=True) for f in folders),
                *(docker.types.Mount(target(f), "/dev/null", type="bind", read_only=True) for f in files)]

    def _discard_container(self) -> None:
        container, self._container = self._container, None
        if container is not None:
            self._remove(container)

    def _remove(self, container: Any) -> None:
        try:
            container.remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except ENGINE_ERRORS as exc:
            self._record(
                "sandbox.docker.cleanup_failed",
                {"container": getattr(container, "name", ""), "error": f"{type(exc).__name__}: {exc}"},
            )

    def _container_cwd(self, cwd: Path) -> str:
        """The command's directory inside: its place under /workspace, else /tmp."""
        if self.settings.workspace_access != "none":
            try:
                relative = Path(cwd).resolve().relative_to(self.workspace.resolve())
            except ValueError:
                return "/tmp"
            return str(PurePosixPath(WORKSPACE_MOUNT, *relative.parts))
        return "/tmp"

    # -- exec ------------------------------------------------------------------

    def _start_exec(self, command: str, workdir: str, env: Mapping[str, str] | None, with_stdin: bool) -> tuple[str, Any]:
        environment = dict(_BASE_ENV)
        environment.update(env or {})
        api = self.client.api
        for attempt in (1, 2):
            container = self._ensure_container()
            try:
                created = api.exec_create(
                    container.id,
                    ["/bin/sh", "-c", _SHELL, "sh", command],
                    stdin=with_stdin,
                    user=self.user,
                    workdir=workdir,
                    environment=environment,
                )
            except docker.errors.NotFound:
                # Removed behind our back (a sweep, a person): start a fresh one once.
                self._container = None
                if attempt == 2:
                    raise
                continue
            except docker.errors.APIError as exc:
                if attempt == 2 or not _container_unusable(exc):
                    raise
                self._discard_container()
                continue
            exec_id = created["Id"]
            return exec_id, api.exec_start(exec_id, socket=True)
        raise AssertionError("unreachable")  # pragma: no cover

    def _kill_running(self) -> None:
        """Kill every process of the container but its init; if that fails, drop the container."""
        api = self.client.api
        try:
            created = api.exec_create(self._container.id, ["kill", "-9", "-1"], user=self.user)
            api.exec_start(created["Id"])
            if self._wait_exec(created["Id"], 5.0) is not None:
                return
        except ENGINE_ERRORS:
            pass
        # The kill could not start (a fork bomb fills the pids limit) or did not end:
        # the container goes, and the next command gets a fresh one.
        self._discard_container()

    def _wait_exec(self, exec_id: str, wait_s: float) -> int | None:
        """The exit code once the exec stopped, or None if it still runs after ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while True:
            state = self.client.api.exec_inspect(exec_id)
            if not state.get("Running") and state.get("ExitCode") is not None:
                return int(state["ExitCode"])
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.02)

    def _exit_code(self, exec_id: str, *, killed: bool) -> int:
        """The command's exit status; for a command we killed, 137 unless the engine already says otherwise.

        After a kill the engine may report the exec as running for seconds while
        it drains output nobody reads, so it is asked once, not waited for.
        """
        try:
            code = self._wait_exec(exec_id, 0.0 if killed else _EXIT_WAIT_S)
        except ENGINE_ERRORS:  # NotFound included: the container went with it
            code = None
        if killed:
            return code if code else KILLED_EXIT
        return code if code is not None else -1

    def _engine_failed(
        self,
        exc: BaseException,
        command: str,
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None,
        stdin: str | None,
    ) -> ExecResult:
        reason = f"the container engine at {engine_address()} failed: {type(exc).__name__}: {exc}"
        self._discard_container()
        if self.settings.fallback == "local" and self._local_factory is not None:
            self._fallback = self._local_factory()
            self._record("sandbox.fallback", {"from": "docker", "to": "local", "reason": reason})
            return self._fallback.run(command, cwd=cwd, timeout_s=timeout_s, env=env, stdin=stdin)
        self._record("sandbox.docker.refused", {"reason": reason})
        raise SandboxEngineError(
            f"{reason}; the command was not run (sandbox.docker.fallback is fail-closed)"
        ) from exc


def _container_unusable(exc: Any) -> bool:
    """True when the container exists but is stopped or dead (its init was killed)."""
    text = str(exc).lower()
    return any(word in text for word in ("not running", "is stopped", "container state", "exited", "paused"))
