"""Append and verify throughput of the hash-chained audit log.

    .venv/bin/python bench/audit.py            # 1,000,000 records
    .venv/bin/python bench/audit.py --quick    # 20,000 records
    .venv/bin/python bench/audit.py --records 200000 --sweep   # checkpointEvery sweep as well

Each record carries a payload shaped like a ``tool.decision`` event (~300
bytes of JSON). "append" goes through ``AuditLog.append`` exactly as the
audit sink does (thread lock, ``flock``, canonical JSON, SHA-256, optional
HMAC, periodic Ed25519 checkpoint); "verify" is ``verify_log`` over the whole
file (parse, canonical re-serialisation, hash, link, checkpoint signatures).
``fsync=always`` is measured on fewer records because it is bound by the
disk. Figures on a shared machine are noisy: rerun and compare.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from clawcore.security.audit import AuditLog, verify_log
from clawcore.security.audit_plugin import DEFAULT_CHECKPOINT_EVERY
from rich.console import Console
from rich.table import Table

PAYLOAD = {
    "tool": "bash",
    "call_id": "3f9a2c1b7d4e",
    "arguments": {"command": "git status --short && ls -la src/"},
    "action": "confirm",
    "reasons": ["bash runs commands on the host"],
    "rules": ["profile:minimal"],
    "source": "policy",
    "final": "deny",
}


def append(
    path: Path, count: int, *, every: int, use_hmac: bool = False, fsync: str = "checkpoint"
) -> tuple[float, float]:
    """``(records/s wall clock, CPU µs per record)`` for ``count`` appends into a fresh log."""
    log = AuditLog(path, checkpoint_every=every, use_hmac=use_hmac, fsync=fsync)
    log.append("bench.warmup", {})
    started, cpu = time.perf_counter(), time.process_time()
    for i in range(count):
        log.append("tool.decision", {**PAYLOAD, "i": i}, session="bench")
    log.close()
    return count / (time.perf_counter() - started), (time.process_time() - cpu) / count * 1e6


def verify(path: Path, *, require_mac: bool = False) -> tuple[float, float, int]:
    """``(records/s, CPU µs per record, records)`` of a full verification."""
    started, cpu = time.perf_counter(), time.process_time()
    report = verify_log(path, require_mac=require_mac)
    elapsed = time.perf_counter() - started
    if not report.ok:
        raise SystemExit(f"verify failed: {report.failure}")
    return report.records / elapsed, (time.process_time() - cpu) / report.records * 1e6, report.records


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--quick", action="store_true", help="20,000 records")
    parser.add_argument("--sweep", action="store_true", help="also sweep checkpointEvery")
    args = parser.parse_args()
    count = 20_000 if args.quick else args.records
    console = Console(width=max(Console().width, 110))
    table = Table("operation", "records", "setting", "records/s", "CPU µs/record", "MB")
    with tempfile.TemporaryDirectory(prefix="clawcore-bench-audit-") as tmp:
        root = Path(tmp)
        plain = root / "plain" / "audit.jsonl"
        rate, cpu = append(plain, count, every=DEFAULT_CHECKPOINT_EVERY)
        size = plain.stat().st_size / 1e6
        table.add_row(
            "append",
            f"{count:,}",
            f"checkpointEvery={DEFAULT_CHECKPOINT_EVERY}",
            f"{rate:,.0f}",
            f"{cpu:,.0f}",
            f"{size:,.1f}",
        )
        vrate, vcpu, records = verify(plain)
        table.add_row(
            "verify", f"{records:,}", "chain + checkpoints", f"{vrate:,.0f}", f"{vcpu:,.0f}", f"{size:,.1f}"
        )

        macs = root / "hmac" / "audit.jsonl"
        small = max(count // 10, 1000)
        rate, cpu = append(macs, small, every=DEFAULT_CHECKPOINT_EVERY, use_hmac=True)
        table.add_row(
            "append",
            f"{small:,}",
            "hmac on",
            f"{rate:,.0f}",
            f"{cpu:,.0f}",
            f"{macs.stat().st_size / 1e6:,.1f}",
        )
        vrate, vcpu, records = verify(macs, require_mac=True)
        table.add_row("verify", f"{records:,}", "hmac required", f"{vrate:,.0f}", f"{vcpu:,.0f}", "")

        durable = root / "fsync" / "audit.jsonl"
        few = min(2000, count)
        rate, cpu = append(durable, few, every=DEFAULT_CHECKPOINT_EVERY, fsync="always")
        table.add_row("append", f"{few:,}", "fsync=always", f"{rate:,.0f}", f"{cpu:,.0f}", "")

        if args.sweep:
            sweep_n = min(count, 100_000)
            for every in (0, 16, 64, 256, 1024):
                path = root / f"sweep{every}" / "audit.jsonl"
                rate, cpu = append(path, sweep_n, every=every)
                table.add_row(
                    "append", f"{sweep_n:,}", f"checkpointEvery={every}", f"{rate:,.0f}", f"{cpu:,.0f}", ""
                )
    console.print(table)


if __name__ == "__main__":
    main()
