"""Command round-trip latency: the docker sandbox backend against the local one.

    scripts/podman-service run -- .venv/bin/python bench/sandbox.py           # 200 commands per case
    scripts/podman-service run -- .venv/bin/python bench/sandbox.py --quick   # 30 commands per case
    DOCKER_HOST=unix:///var/run/docker.sock .venv/bin/python bench/sandbox.py --image debian:bookworm-slim

A round trip is one ``backend.run(...)`` call, from the call to the
:class:`~clawcore.types.ExecResult`, measured with ``perf_counter``. Cases:

* ``true`` — the fixed cost of one command;
* ``echo 64 KiB`` — the same plus moving output back;
* ``cat 4 KiB stdin`` — with stdin sent in;
* cold start — backend creation plus the first command (for docker, the
  engine connection and the container start), over fresh backends.

The machine is shared and these are wall-clock figures: rerun and compare.
Without ``DOCKER_HOST`` only the local backend is measured.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import clawcore_sandbox_docker
from clawcore.config import Config, load_config
from clawcore.hooks import Hooks
from clawcore.plugins import get_plugin_manager
from clawcore.types import HookContext, SandboxBackend
from rich.console import Console
from rich.table import Table

CASES: dict[str, tuple[str, str | None]] = {
    "true": ("true", None),
    "echo 64 KiB": ("head -c 65536 /dev/zero | tr '\\0' x", None),
    "cat 4 KiB stdin": ("cat", "y" * 4096),
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(backend: SandboxBackend, cwd: Path, command: str, stdin: str | None, count: int) -> list[float]:
    backend.run(command, cwd=cwd, timeout_s=30, stdin=stdin)  # warm-up (and container start)
    times = []
    for _ in range(count):
        started = time.perf_counter()
        result = backend.run(command, cwd=cwd, timeout_s=30, stdin=stdin)
        times.append(time.perf_counter() - started)
        if result.exit_code != 0:
            raise SystemExit(f"{backend.name}: {command!r} failed: {result.stderr.strip()}")
    return times


def cold_starts(make: Callable[[], SandboxBackend], cwd: Path, count: int) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        backend = make()
        backend.run("true", cwd=cwd, timeout_s=30)
        times.append(time.perf_counter() - started)
        backend.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="30 commands per case, 3 cold starts")
    parser.add_argument("--count", type=int, default=200, help="commands per case (default 200)")
    parser.add_argument("--image", default=os.environ.get("CLAWCORE_TEST_IMAGE", "localhost/clawcore-busybox:latest"))
    args = parser.parse_args()
    count = 30 if args.quick else args.count
    colds = 3 if args.quick else 10

    console = Console()
    with tempfile.TemporaryDirectory(prefix="clawcore-bench-") as tmp:
        home = Path(tmp)
        (home / "workspace").mkdir()
        pm = get_plugin_manager(load_entrypoints=False)
        pm.register(clawcore_sandbox_docker, name="sandbox_docker")
        config: Config = load_config(home, data={"sandbox": {"docker": {"image": args.image}}}, pm=pm)
        context = HookContext("bench", home, home / "workspace", config.data)
        factories: dict[str, Callable[[], Any]] = {}
        backends = Hooks(pm).sandbox_backends()
        factories["local"] = lambda: backends["local"](config, context)
        if os.environ.get("DOCKER_HOST"):
            factories["docker"] = lambda: backends["docker"](config, context)
        else:
            console.print("[yellow]DOCKER_HOST is not set: measuring the local backend only "
                          "(scripts/podman-service run -- ... starts an engine)[/]")

        table = Table(title=f"Sandbox round trip, {count} commands per case (ms)")
        for column in ("backend", "case", "p50", "p95", "mean", "min"):
            table.add_column(column, justify="left" if column in ("backend", "case") else "right")
        for name, make in factories.items():
            backend = make()
            try:
                for case, (command, stdin) in CASES.items():
                    times = measure(backend, home / "workspace", command, stdin, count)
                    table.add_row(name, case, *(f"{v * 1000:.1f}" for v in (
                        statistics.median(times), percentile(times, 0.95), statistics.fmean(times), min(times))))
                info = backend.info()
            finally:
                backend.close()
            times = cold_starts(make, home / "workspace", colds)
            table.add_row(name, f"cold start (x{colds})", *(f"{v * 1000:.1f}" for v in (
                statistics.median(times), percentile(times, 0.95), statistics.fmean(times), min(times))))
            console.print(f"[dim]{name}: {info}[/]")
        console.print(table)
        console.print(f"[dim]load average at the end: {', '.join(f'{v:.2f}' for v in os.getloadavg())} "
                      f"on {os.cpu_count()} CPUs[/]")


if __name__ == "__main__":
    main()
