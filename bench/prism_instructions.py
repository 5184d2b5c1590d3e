"""PRISM: instructions per cold scan of a typical e-mail, counted by callgrind (repeatable, unlike time).

    .venv/bin/python bench/prism_instructions.py             # rules alone, linear head, shipped head
    .venv/bin/python bench/prism_instructions.py --scans 20  # quicker, a little less exact

Each detector variant runs twice under ``valgrind --tool=callgrind``: once with
only the set-up (imports, weights, one warm scan) and once with ``--scans``
more scans of bench/prism.py's e-mail, every sentence made unique so the
classifier's memo never helps. The difference divided by the number of scans
is what one cold ``Detector.scan`` costs. Needs valgrind on the PATH; takes a
few minutes, since Python runs tens of times slower under it.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

VARIANTS = {
    "rules": "the rules alone (classifier disabled)",
    "linear": "rules + the segment head's linear weights",
    "shipped": "rules + the shipped head (linear weights and hidden layer)",
}
_COLLECTED = re.compile(r"Collected : (\d+)")


def scan(variant: str, count: int) -> None:
    """The measured program: set up one detector, warm it, then scan ``count`` unique e-mails."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from clawcore_prism.classifier import load_classifier
    from clawcore_prism.detector import Detector
    from prism import EMAIL, _unique

    classifier = load_classifier()
    if variant == "linear":
        segment = dataclasses.replace(classifier.segment, hidden=None)
        classifier = dataclasses.replace(classifier, segment=segment, _memo={})
    detector = Detector(None if variant == "rules" else classifier)
    detector.scan(_unique(EMAIL, 0), "indirect")
    for i in range(1, count + 1):
        detector.scan(_unique(EMAIL, i), "indirect")


def instructions(variant: str, count: int) -> int:
    """Instructions callgrind counts for the whole program with ``count`` scans."""
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/out", sys.executable, __file__,
             "--child", variant, str(count)],
            capture_output=True, text=True, check=False)
    found = _COLLECTED.search(run.stderr)
    if run.returncode or not found:
        raise SystemExit(f"callgrind run failed ({variant}, {count} scans): {run.stderr.strip()[-300:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scans", type=int, default=100)
    parser.add_argument("--child", nargs=2, metavar=("VARIANT", "COUNT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        scan(args.child[0], int(args.child[1]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    table = Table(title=f"instructions per cold Detector.scan of a 560-character e-mail ({args.scans} scans)")
    table.add_column("detector")
    table.add_column("instructions per scan", justify="right")
    for variant, label in VARIANTS.items():
        per_scan = (instructions(variant, args.scans) - instructions(variant, 0)) / args.scans
        table.add_row(label, f"{per_scan / 1e6:.2f} M")
    Console(width=max(Console().width, 100)).print(table)


if __name__ == "__main__":
    main()
