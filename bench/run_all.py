"""The whole side-by-side benchmark in one command; writes its tables into bench/README.md.

    .venv/bin/python bench/run_all.py              # make bench: LoCoMo dev (per conversation, pooled), 10k + 100k chunks
    .venv/bin/python bench/run_all.py --quick      # 60 questions, 10k chunks
    .venv/bin/python bench/run_all.py --million    # adds 1M chunks to the scale run (hours)

The peers live in the separate environment ``.bench-venv`` (``make bench-env``).
Without it, only clawcore's rows are measured, and the output says so. The
tables replace the part of bench/README.md between the ``results`` markers
(``--no-readme`` leaves the file alone); the run's own log goes to stdout.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PEERS_PYTHON = ROOT / ".bench-venv" / "bin" / "python"
README = BENCH / "README.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"


def step(python: Path | str, script: str, args: list[str], markdown: Path, timeout_s: float) -> int:
    command = [str(python), str(BENCH / script), *args, "--markdown", str(markdown)]
    print(f"\n$ {' '.join(command[1:2] + args)}", flush=True)
    started = time.monotonic()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    try:
        code = subprocess.run(command, cwd=ROOT, env=env, timeout=timeout_s, check=False).returncode
    except subprocess.TimeoutExpired:
        with markdown.open("a", encoding="utf-8") as out:
            out.write(f"`bench/{script} {' '.join(args)}` stopped after {timeout_s:.0f}s.\n\n")
        code = 124
    print(f"[{script} {' '.join(args)}: exit {code}, {time.monotonic() - started:.0f}s]", flush=True)
    return code


def write_readme(markdown: str) -> None:
    text = README.read_text(encoding="utf-8") if README.exists() else f"{START}\n{END}\n"
    if START not in text or END not in text:
        text += f"\n{START}\n{END}\n"
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{markdown.rstrip()}\n{END}{tail}", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="60 questions, 10k chunks only")
    parser.add_argument("--million", action="store_true", help="add 1M chunks to the scale run")
    parser.add_argument("--sizes", default=None, help="chunk counts for the scale run (default 10000,100000)")
    parser.add_argument("--no-readme", action="store_true", help="do not write the tables into bench/README.md")
    args = parser.parse_args(argv)

    have_peers = PEERS_PYTHON.exists()
    python: Path | str = PEERS_PYTHON if have_peers else sys.executable
    started = time.monotonic()
    parts: list[str] = []
    codes = []
    with tempfile.TemporaryDirectory(prefix="bench-all-") as tmp:
        markdown = Path(tmp) / "tables.md"
        markdown.write_text("", encoding="utf-8")
        if not have_peers:
            note = ("The peers' environment .bench-venv is missing (create it with `make bench-env`); "
                    "only clawcore was measured.\n\n")
            print(note)
            markdown.write_text(note, encoding="utf-8")
        quick = ["--quick"] if args.quick else []
        peer_systems = [] if have_peers else ["--systems", "clawcore,clawcore bm25,clawcore vector"]
        codes.append(step(python, "peers.py", [*quick, *peer_systems], markdown, 1800))
        codes.append(step(python, "peers.py", ["--pooled", *quick, *peer_systems], markdown, 1800))
        scale = [*quick]
        if args.sizes:
            scale += ["--sizes", args.sizes]
        if args.million:
            scale += ["--million"]
        if not have_peers:
            scale += ["--systems", "clawcore,quantisation"]
        codes.append(step(python, "scale.py", scale, markdown, 4 * 3600 if args.million else 3600))
        parts.append(markdown.read_text(encoding="utf-8"))
    total = time.monotonic() - started
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=False).stdout.strip() or "unknown"
    summary = (f"Whole run: `.venv/bin/python bench/run_all.py {' '.join(argv if argv is not None else sys.argv[1:])}`"
               f" — {total / 60:.1f} minutes, at commit {revision}.\n")
    print(summary)
    if not args.no_readme:
        write_readme("".join(parts) + summary)
        print(f"tables written to {README.relative_to(ROOT)}")
    return max(codes) if codes else 0


if __name__ == "__main__":
    sys.exit(main())
