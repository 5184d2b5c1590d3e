"""Security stack on the dev corpora: catch rate, false positives and latency per corpus.

Runs every case of ../shared/eval/security-dev (or --data DIR) through
:class:`clawcore.scan.Scanner` — the same hooks as a real tool call, nothing
executed — with the ``coding`` tool profile (or --config FILE), and prints:

* exec/path/url: attacks not allowed, benign denied, benign (non-sensitive)
  confirmed or denied, latency;
* secret: credentials found, look-alikes flagged;
* text: the monitor ladder — no monitor → PRISM rules only → full PRISM —
  flag rate on attacks and benign text per corpus (rows say when PRISM is
  not installed).

    .venv/bin/python bench/security.py [--quick] [--data DIR] [--config FILE] [--no-ladder]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from clawcore.config import load_config, read_config_file
from clawcore.plugins import PluginSettings, get_plugin_manager
from clawcore.runtime import Runtime
from clawcore.scan import Scanner
from rich.console import Console
from rich.table import Table

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "eval" / "security-dev"
CODING = {"tools": {"policy": {"profile": "coding"}}}


def load(data: Path, prefix: str, quick: bool, seed: int = 7) -> dict[str, list[dict[str, Any]]]:
    by_corpus: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in sorted(data.glob(f"{prefix}-*.jsonl")):
        for line in path.read_text(encoding="utf-8").split("\n"):
            if line.strip():
                case = json.loads(line)
                by_corpus[f"{path.stem} ({case.get('corpus', '')})"].append(case)
    if quick:
        rng = random.Random(seed)
        for name, cases in by_corpus.items():
            if len(cases) > 300:
                by_corpus[name] = rng.sample(cases, 300)
    return dict(by_corpus)


def runtime(home: Path, config: Mapping[str, Any], *, plugins: bool) -> Runtime:
    settings = PluginSettings.from_sources(
        config.get("plugins") if isinstance(config.get("plugins"), Mapping) else None,
        {} if plugins else {"CLAWCORE_LOAD_PLUGINS": ""},
    )
    pm = get_plugin_manager(settings, load_entrypoints=plugins)
    rt = Runtime(home, config=config, plugin_manager=pm)
    rt.start()
    return rt


def run(scanner: Scanner, cases: list[dict[str, Any]]) -> tuple[list[Any], list[float]]:
    results, seconds = [], []
    for case in cases:
        started = time.perf_counter()
        results.append(scanner.scan(case))
        seconds.append(time.perf_counter() - started)
    return results, seconds


def pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.2f}% ({part}/{whole})" if whole else "–"


def latency(seconds: list[float]) -> str:
    if not seconds:
        return "–"
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return f"{statistics.median(ordered) * 1e6:.0f} / {p99 * 1e6:.0f} µs"


def tool_table(console: Console, scanner: Scanner, data: Path, quick: bool) -> None:
    table = Table(title="Tool policy (exec, path, url) — profile from the config")
    for col in (
        "corpus",
        "attacks not allowed",
        "attacks denied",
        "benign denied",
        "benign non-sensitive confirmed/denied",
        "benign sensitive not allowed",
        "p50 / p99",
        "cases/s",
    ):
        table.add_column(col, justify="right" if col != "corpus" else "left")
    for prefix in ("exec", "path", "url"):
        for name, cases in load(data, prefix, quick).items():
            results, seconds = run(scanner, cases)
            attack = [r for r, c in zip(results, cases, strict=True) if c["label"] == "attack"]
            benign = [(r, c) for r, c in zip(results, cases, strict=True) if c["label"] == "benign"]
            plain = [r for r, c in benign if not c.get("sensitive")]
            sensitive = [r for r, c in benign if c.get("sensitive")]
            table.add_row(
                name,
                pct(sum(r.decision != "allow" for r in attack), len(attack)),
                pct(sum(r.decision == "deny" for r in attack), len(attack)),
                pct(sum(r.decision == "deny" for r, _ in benign), len(benign)),
                pct(sum(r.decision != "allow" for r in plain), len(plain)),
                pct(sum(r.decision != "allow" for r in sensitive), len(sensitive)),
                latency(seconds),
                f"{len(cases) / sum(seconds):.0f}" if seconds else "–",
            )
    console.print(table)


def secret_table(console: Console, scanner: Scanner, data: Path, quick: bool) -> None:
    table = Table(title="Secrets (scan_text)")
    for col in ("corpus", "credentials found", "look-alikes flagged", "p50 / p99"):
        table.add_column(col, justify="right" if col != "corpus" else "left")
    for name, cases in load(data, "secret", quick).items():
        results, seconds = run(scanner, cases)
        attack = [r for r, c in zip(results, cases, strict=True) if c["label"] == "attack"]
        benign = [r for r, c in zip(results, cases, strict=True) if c["label"] == "benign"]
        table.add_row(
            name,
            pct(sum(r.flagged for r in attack), len(attack)),
            pct(sum(r.flagged for r in benign), len(benign)),
            latency(seconds),
        )
    console.print(table)


def ladder(console: Console, home: Path, base: Mapping[str, Any], data: Path, quick: bool) -> None:
    table = Table(title="Text monitors: no monitor → PRISM rules only → full PRISM")
    for col in ("corpus", "rung", "attacks flagged", "benign flagged", "p50 / p99"):
        table.add_column(col, justify="right" if col not in ("corpus", "rung") else "left")
    corpora = load(data, "text", quick)
    rungs: list[tuple[str, Runtime | None, str]] = []
    rungs.append(("no monitor", runtime(home / "none", base, plugins=False), ""))
    for label, extra in (("rules only", {"prism": {"classifier": {"enabled": False}}}), ("full plugin", {})):
        try:
            rt = runtime(home / label.replace(" ", "-"), {**base, **extra}, plugins=True)
        except Exception as exc:  # PRISM missing or its config section unknown: say so, keep going
            rungs.append((label, None, f"unavailable: {type(exc).__name__}: {str(exc)[:80]}"))
            continue
        if rt.pm.get_plugin("prism") is None:
            rungs.append((label, None, "prism plugin not installed"))
            rt.close()
            continue
        rungs.append((label, rt, ""))
    for name, cases in corpora.items():
        for label, rung, why in rungs:
            if rung is None:
                table.add_row(name, label, why, "", "")
                continue
            results, seconds = run(Scanner(rung), cases)
            attack = [r for r, c in zip(results, cases, strict=True) if c["label"] == "attack"]
            benign = [r for r, c in zip(results, cases, strict=True) if c["label"] == "benign"]
            table.add_row(
                name,
                label,
                pct(sum(r.flagged for r in attack), len(attack)),
                pct(sum(r.flagged for r in benign), len(benign)),
                latency(seconds),
            )
    for _, rung, _ in rungs:
        if rung is not None:
            rung.close()
    console.print(table)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="at most 300 cases per corpus")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--config", type=Path, help="config file (default: tools.policy.profile coding)")
    parser.add_argument("--no-ladder", action="store_true", help="skip the text monitor ladder")
    parser.add_argument("--builtins-only", action="store_true", help="tool rows without installed plugins")
    args = parser.parse_args(argv)
    console = Console(width=200)
    if not args.data.is_dir():
        console.print(f"error: no corpus folder at {args.data}; pass --data DIR")
        return 2
    base: Mapping[str, Any] = read_config_file(args.config) if args.config else CODING
    with tempfile.TemporaryDirectory(prefix="clawcore-bench-") as tmp:
        home = Path(tmp)
        (home / "workspace" / "memory").mkdir(parents=True)
        os.environ.setdefault("CLAWCORE_HOME", str(home))
        load_config(
            home, data=base, pm=get_plugin_manager(load_entrypoints=False)
        )  # fail early on a bad config
        rt = runtime(home / "tools", base, plugins=not args.builtins_only)
        plugins = ", ".join(name for name, _ in rt.pm.list_name_plugin())
        console.print(f"plugins: {plugins}")
        scanner = Scanner(rt)
        tool_table(console, scanner, args.data, args.quick)
        secret_table(console, scanner, args.data, args.quick)
        rt.close()
        if not args.no_ladder:
            ladder(console, home, base, args.data, args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
