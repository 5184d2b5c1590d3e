"""Train PRISM's injection classifier and measure it honestly.

    .venv/bin/python plugins/prism/training/train.py [--eval-dir DIR] [--out FILE] [--report] [--independent]

Needs numpy (training only; the shipped weights are read with the standard
library). Data:

* the dev corpora in ``--eval-dir`` (default ``../shared/eval/security-dev``
  next to the repository): bipia and injecagent for the segment head,
  garak for the message head; text-chat is never trained on (it stays a
  held-out benign set);
* ordinary text that is not an attack, the same on every machine with this
  Python version: the Python language reference (``pydoc_data.topics``) and
  standard-library docstrings; and the LoCoMo dialogue turns when
  ``../shared/eval/locomo-dev`` exists;
* hand-written examples in ``training/data`` (benign requests and tool
  output with human-directed imperatives, injections and direct attacks in
  styles the corpora lack);
* ordinary requests and knowledge questions planted in tool output, as
  injections (:func:`inserted_tasks`).

``--report`` prints cross-corpus numbers (train without a corpus, test on it)
and grouped 5-fold in-distribution numbers before training the shipped model
on everything; ``--independent`` prints the trained model's tool-output
recall and false positives on the independent sets in ``bench/data``, which
training never reads.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import importlib
import json
import random
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from clawcore_prism.canonical import canonicalise, segments  # noqa: E402
from clawcore_prism.classifier import Classifier, Head, Hidden  # noqa: E402
from clawcore_prism.detector import Detector  # noqa: E402
from clawcore_prism.features import BUCKETS, context_cues  # noqa: E402
from clawcore_prism.features import document_features as _document_features  # noqa: E402
from clawcore_prism.features import segment_features as _segment_features  # noqa: E402

_SEGMENT_CACHE: dict[tuple[str, tuple[str, ...]], dict[int, float]] = {}
_DOCUMENT_CACHE: dict[str, dict[int, float]] = {}


def segment_features(text: str, context: tuple[str, ...] = ()) -> dict[int, float]:
    """Features are pure functions of the text and its context cues: computed once per training run."""
    found = _SEGMENT_CACHE.get((text, context))
    if found is None:
        found = _SEGMENT_CACHE[(text, context)] = _segment_features(text, context)
    return found


def piece_features(doc: Doc, piece: str) -> dict[int, float]:
    """A segment's features in its document (the context cues depend on the document's other segments)."""
    if doc.context is None:
        doc.context = context_cues(doc.pieces)
    return segment_features(piece, doc.context[piece])


def document_features(text: str) -> dict[int, float]:
    found = _DOCUMENT_CACHE.get(text)
    if found is None:
        found = _DOCUMENT_CACHE[text] = _document_features(text)
    return found

REPO = HERE.parents[2]
DEFAULT_EVAL = REPO.parent / "shared" / "eval" / "security-dev"
DEFAULT_OUT = HERE.parent / "clawcore_prism" / "weights.json.gz"
SEED = 1234
#: Out-of-fold false-positive rate the thresholds aim at. The training benign text is much harder than a benign
#: corpus (about 1,400 hand-written hard negatives), so 3% there keeps held-out FP under the project's 2% per corpus
#: (docs/prism-evaluation.md, "Retraining on hard negatives").
FP_TARGET = float(__import__("os").environ.get("PRISM_FP_TARGET", "0.03"))
#: L2 strength: chosen by the cross-corpus table (stronger keeps the model off corpus vocabulary).
L2 = float(__import__("os").environ.get("PRISM_L2", "1e-4"))
#: Plant ordinary requests and questions in tool output as injections (0: the ablation in docs/prism-evaluation.md).
INSERTED_TASKS = __import__("os").environ.get("PRISM_INSERTED_TASKS", "1") == "1"
#: Units of each network in the segment head's hidden layer (0: the linear head alone, the ablation in docs/prism-evaluation.md).
HIDDEN = int(__import__("os").environ.get("PRISM_HIDDEN", "2"))
#: Networks trained from different seeds and averaged into one layer of ``NETWORKS * HIDDEN`` units: one network's
#: verdicts swing with its seed, the average's do not (docs/prism-evaluation.md, "The hidden layer").
NETWORKS = int(__import__("os").environ.get("PRISM_NETWORKS", "4"))
#: Random 2-fold group splits whose out-of-fold benign scores are pooled to pick a threshold. One split's
#: threshold moves with the split (0.952–0.960 over ten); five pooled move a third as much
#: (docs/prism-evaluation.md, "The threshold's split").
SPLITS = int(__import__("os").environ.get("PRISM_SPLITS", "5"))


@dataclass
class Doc:
    """One training document: its text, label, corpus and leakage group."""

    text: str
    attack: bool
    corpus: str
    group: str
    hook: str = "after_tool_call"
    canonical: str = ""
    pieces: list[str] = field(default_factory=list)
    #: Each piece's context cues, computed once on first use (they depend on all of ``pieces``).
    context: dict[str, tuple[str, ...]] | None = field(default=None, repr=False, compare=False)


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------


def _lines(name: str) -> list[str]:
    path = HERE / "data" / name
    return [
        line.strip().replace("\\n", "\n")
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]


def dev_docs(eval_dir: Path) -> list[Doc]:
    docs: list[Doc] = []
    for name in ("text-bipia.jsonl", "text-injecagent.jsonl", "text-garak.jsonl", "text-chat.jsonl"):
        for line in (eval_dir / name).read_text(encoding="utf-8").split("\n"):
            if not line.strip():
                continue
            case = json.loads(line)
            note = case.get("note", "")
            quoted = re.search(r"'([^']+)'-\d+", note)  # bipia: the attack's name and variant
            if case["corpus"] == "bipia" and quoted:
                group = "bipia-attack:" + quoted.group(0)
            elif case["corpus"] == "injecagent" and case["label"] == "attack":
                group = ""  # filled from the injected instruction below
            else:
                group = case["id"]
            corpus = "garak" if case["corpus"].startswith("garak") else case["corpus"]
            docs.append(Doc(case["text"], case["label"] == "attack", corpus, group, case["hook"]))
    return docs


def _pydoc_topics() -> list[str]:
    try:
        from pydoc_data.topics import topics
    except ImportError:
        return []
    texts = []
    for body in topics.values():
        for para in re.split(r"\n\s*\n", body):
            para = para.strip()
            if 40 <= len(para) <= 3000:
                texts.append(para)
    return texts


def _docstrings(limit: int = 1500) -> list[str]:
    texts: list[str] = []
    # The standard library only: the same text on every machine with this Python version (reproducible).
    names = sorted(n for n in sys.stdlib_module_names if not n.startswith("_"))
    for name in names:
        if name in {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo"} or "test" in name \
                or name.startswith("clawcore"):
            continue
        try:
            module = importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - any import failure just skips the module
            continue
        for obj in [module, *vars(module).values()]:
            doc = getattr(obj, "__doc__", None)
            if isinstance(doc, str) and 60 <= len(doc) <= 4000 and getattr(obj, "__module__", name) == name:
                texts.append(doc)
        if len(texts) >= limit:
            break
    return texts[:limit]


def _locomo(eval_dir: Path) -> list[str]:
    root = eval_dir.parent / "locomo-dev"
    texts = []
    for path in sorted(root.glob("conv-*/memory/*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            line = re.sub(r"^-\s*\w+:\s*", "", line.strip())
            if len(line) > 20:
                texts.append(line)
    queries = root / "queries.jsonl"
    if queries.exists():
        texts.extend(json.loads(line)["question"] for line in queries.read_text().splitlines())
    return texts


_VERBS = ("translate", "summarise", "write", "explain", "list", "find", "draft", "convert", "compare", "check",
          "show me", "give me", "tell me about", "help me with", "describe", "rewrite", "fix", "review", "plan",
          "calculate", "suggest", "recommend", "create", "update", "delete", "send", "open", "search for")
_OBJECTS = ("this paragraph", "the email from my boss", "a short poem about the sea", "the meeting notes",
            "my shopping list", "the error in this function", "the difference between TCP and UDP",
            "three ideas for a birthday gift", "the last report", "a reply to the landlord", "this sentence into French",
            "the steps to bake bread", "my calendar for tomorrow", "the budget spreadsheet", "a cover letter",
            "the files in my downloads folder", "the main points of the article", "a regex for dates",
            "good restaurants nearby", "the weather in Oslo", "my notes about the project", "a workout plan",
            "the history of the Roman empire", "your previous answer", "the instructions for the printer",
            "the rules of poker", "the system requirements for the game", "a story for my kids")
_TAILS = ("", " please", ", thanks", " in two sentences", " for me", " and keep it short", " in simple terms",
          ", and use bullet points", " before Friday")


def synthetic_requests(rng: random.Random, count: int = 400) -> list[str]:
    """Ordinary requests composed from parts: the message head must learn that an imperative is no attack."""
    out = []
    for _ in range(count):
        text = f"{rng.choice(_VERBS)} {rng.choice(_OBJECTS)}{rng.choice(_TAILS)}"
        text = text[0].upper() + text[1:] + rng.choice((".", "?", "", "!"))
        if rng.random() < 0.3:
            text = rng.choice(("Can you ", "Could you ", "Please ", "Hey, ")) + text[0].lower() + text[1:]
        out.append(text)
    return sorted(set(out))


_QUESTIONS = ("What is {t}?", "How does {t} work?", "Who invented {t}?", "Why is {t} important?",
              "Can you explain {t} in simple terms?", "What are the main benefits of {t}?",
              "Write a short paragraph about {t}.", "Give three facts about {t}.", "Describe the history of {t}.",
              "How would you teach {t} to a child?", "Compare {t} with its main alternative.")
_TOPICS = ("photosynthesis", "the printing press", "compound interest", "a black hole", "the French revolution",
           "machine learning", "the water cycle", "blockchain", "the Pythagorean theorem", "vaccination",
           "the stock market", "plate tectonics", "a binary search", "the Renaissance", "climate change",
           "the immune system", "quantum computing", "supply and demand", "the Silk Road", "a sonnet",
           "electric cars", "the Olympic games", "recursion", "inflation", "the human genome")


def _planted(rng: random.Random, text: str, context: str, at: str, contexts: Sequence[str]) -> str:
    """``text`` placed at the ``start``, ``end`` or ``middle`` of a tool result (middle draws a second context)."""
    parts = [text, context] if at == "start" else [context, text] if at == "end" else \
        [context, text, rng.choice(contexts)]
    return "\n".join(parts)


def inserted_tasks(rng: random.Random, requests: Sequence[str], contexts: Sequence[str]) -> list[Doc]:
    """Ordinary tasks and questions planted in tool output: work nobody asked for is an injection there.

    A request is benign when the user sends it (message head); inside a web page or an e-mail it is
    addressed to whoever reads the data, the model included (segment head).
    """
    questions = [q.format(t=t) for q in _QUESTIONS for t in _TOPICS]
    tasks = rng.sample(list(requests), min(300, len(requests))) + rng.sample(questions, 150)
    docs = []
    for i, task in enumerate(tasks):
        context = rng.choice(contexts)
        at = ("start", "end", "middle")[rng.randrange(3)]
        docs.append(Doc(_planted(rng, task, context, at, contexts), True, "inserted-task", f"ist{i}"))
    return docs


def extra_docs(eval_dir: Path, rng: random.Random) -> list[Doc]:
    docs: list[Doc] = []
    prose = _pydoc_topics() + _docstrings()
    rng.shuffle(prose)
    prose = prose[:4000]
    for i, text in enumerate(prose):
        docs.append(Doc(text, False, "prose", f"prose{i}"))
    chat = _locomo(eval_dir)
    for i, text in enumerate(chat):
        docs.append(Doc(text, False, "dialogue", f"dlg{i}", "message_received"))
    outputs = [line for name in ("benign_tool_outputs.txt", "benign_tool_outputs_more.txt",
                                 "benign_tool_outputs_genres.txt", "benign_tool_outputs_hard.txt",
                                 "benign_tool_outputs_hard_more.txt")
               for line in _lines(name)]
    for i, text in enumerate(outputs):
        docs.append(Doc(text, False, "handwritten-output", f"hwo{i}"))
    requests = _lines("benign_requests.txt") + _lines("benign_requests_more.txt")
    for i, text in enumerate(requests + _lines("benign_requests_meta.txt") + _lines("benign_messages_hard.txt")):
        docs.append(Doc(text, False, "handwritten-request", f"hwr{i}", "message_received"))
    synthetic = synthetic_requests(rng)
    for i, text in enumerate(synthetic):
        docs.append(Doc(text, False, "synthetic-request", f"syr{i}", "message_received"))
    for i, text in enumerate(_lines("direct_attacks.txt") + _lines("direct_attacks_more.txt")):
        docs.append(Doc(text, True, "handwritten-direct", f"hwd{i}", "message_received"))
    contexts = outputs + chat[:200] + prose[:200]
    if INSERTED_TASKS:
        docs.extend(inserted_tasks(rng, requests + synthetic, contexts))
    injections = [line for name in ("injections.txt", "injections_more.txt", "injections_formats.txt",
                                    "injections_subtle.txt", "injections_planted.txt", "injections_tasks.txt")
                  for line in _lines(name)]
    for i, text in enumerate(injections):
        for at in ("end", "start", "middle"):
            context = rng.choice(contexts)
            docs.append(Doc(_planted(rng, text, context, at, contexts), True, "handwritten-injection", f"hwi{i}"))
    return docs


def prepare(docs: Iterable[Doc]) -> None:
    for doc in docs:
        doc.canonical = canonicalise(doc.text).text
        doc.pieces = segments(doc.canonical)


def assign_injecagent_groups(docs: Sequence[Doc]) -> None:
    """Group injecagent attacks by their injected instruction (the segment no benign case has)."""
    benign = {p.lower() for d in docs if d.corpus == "injecagent" and not d.attack for p in d.pieces}
    for doc in docs:
        if doc.corpus == "injecagent" and doc.attack:
            unique = [p for p in doc.pieces if p.lower() not in benign]
            key = re.sub(r"ignore all previous instructions.*?instruction: ", "", (unique or doc.pieces)[-1].lower())
            doc.group = "injecagent:" + key[:60]


# --------------------------------------------------------------------------
# sparse logistic regression (full-batch Adam)
# --------------------------------------------------------------------------


def _csr(rows: Sequence[dict[int, float]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lengths = np.array([len(r) for r in rows])
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    indices = np.fromiter((i for r in rows for i in r), dtype=np.int64, count=int(indptr[-1]))
    data = np.fromiter((v for r in rows for v in r.values()), dtype=np.float64, count=int(indptr[-1]))
    return indices, data, indptr


def fit(rows: Sequence[dict[int, float]], y: np.ndarray, weight: np.ndarray, *, l2: float = 1e-4,
        iterations: int = 250, lr: float = 0.05) -> tuple[np.ndarray, float]:
    indices, data, indptr = _csr(rows)
    lengths = np.diff(indptr)
    w = np.zeros(BUCKETS)
    b = np.zeros(1)
    adam = _Adam([w, b], lr)
    weight = weight / weight.sum()
    for _ in range(iterations):
        z = np.add.reduceat(data * w[indices], indptr[:-1]) + b[0]
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
        g = (p - y) * weight
        adam.step([np.bincount(indices, weights=data * np.repeat(g, lengths), minlength=BUCKETS) + l2 * w,
                   np.array([g.sum()])])
    return w, float(b[0])


class _Adam:
    """Adam over a list of arrays, updated in place (:func:`fit` and :func:`fit_hidden` both step with it)."""

    def __init__(self, params: list[np.ndarray], lr: float) -> None:
        self.params, self.lr, self.t = params, lr, 0
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]

    def step(self, grads: list[np.ndarray]) -> None:
        self.t += 1
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            p -= self.lr * (m / (1 - beta1**self.t)) / (np.sqrt(v / (1 - beta2**self.t)) + eps)


def fit_hidden(rows: Sequence[dict[int, float]], y: np.ndarray, weight: np.ndarray, *, size: int = 16,
               epochs: int = 6, batch: int = 256, lr: float = 3e-3, l2: float = 1e-5,
               seed: int = SEED) -> dict[str, np.ndarray]:
    """Linear weights plus a hidden layer of ``size`` rectified units, trained together by mini-batch Adam.

    The logit is ``x·w + b + out·relu(x·E + c) + d``; the loss is the weighted log loss plus ``l2`` times
    the squared norms of ``w`` and ``E``. Deterministic for a given ``seed``.
    """
    rng = np.random.default_rng(seed)
    params = {"w": np.zeros(BUCKETS), "b": np.zeros(1), "E": rng.normal(0.0, 0.05, (BUCKETS, size)),
              "c": np.zeros(size), "out": rng.uniform(-1, 1, size) / np.sqrt(size),
              "d": rng.uniform(-1, 1, 1) / np.sqrt(size)}
    names = list(params)
    adam = _Adam([params[k] for k in names], lr)
    weight = weight / weight.mean()
    order = np.arange(len(rows))
    rows_array = np.empty(len(rows), dtype=object)
    rows_array[:] = list(rows)
    w, E, c, out = params["w"], params["E"], params["c"], params["out"]
    for epoch in range(epochs):
        random.Random(seed + epoch).shuffle(order)  # type: ignore[arg-type]
        for start in range(0, len(order), batch):
            chosen = order[start:start + batch]
            indices, data, indptr = _csr(rows_array[chosen])
            n = len(chosen)
            row_of = np.repeat(np.arange(n), np.diff(indptr))
            pre = np.zeros((n, size))
            np.add.at(pre, row_of, data[:, None] * E[indices])
            pre += c
            units = np.maximum(pre, 0.0)
            linear = np.bincount(row_of, weights=data * w[indices], minlength=n)
            z = linear + params["b"][0] + units @ out + params["d"][0]
            p = 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))
            g = (p - y[chosen]) * weight[chosen] / n
            g_units = np.outer(g, out) * (pre > 0)
            g_E = 2 * l2 * E
            np.add.at(g_E, indices, data[:, None] * g_units[row_of])
            grads = {"w": np.bincount(indices, weights=data * g[row_of], minlength=BUCKETS) + 2 * l2 * w,
                     "b": np.array([g.sum()]), "E": g_E, "c": g_units.sum(0), "out": units.T @ g,
                     "d": np.array([g.sum()])}
            adam.step([grads[k] for k in names])
    return params


def average(networks: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One network whose logit is the mean of the ``networks``' logits: their hidden units side by side,
    each output weight divided by their number, linear weights and biases averaged."""
    n = len(networks)

    def mean(key: str) -> np.ndarray:
        return np.mean([net[key] for net in networks], axis=0)

    return {"w": mean("w"), "b": mean("b"), "d": mean("d"), "E": np.hstack([net["E"] for net in networks]),
            "c": np.concatenate([net["c"] for net in networks]),
            "out": np.concatenate([net["out"] for net in networks]) / n}


def to_hidden_head(params: dict[str, np.ndarray], threshold: float, prune: float = 0.01) -> Head:
    """The trained parameters as a :class:`Head`: linear weights pruned as in :func:`to_head`, and the hidden
    layer's rows stored as signed bytes (rows whose largest weight quantises to zero are left out)."""
    E = params["E"]
    scale = float(np.abs(E).max()) / 127 or 1.0
    stored = (np.clip(np.round(E / scale), -127, 127) + 128).astype(np.uint8)
    kept = np.nonzero((stored != 128).any(axis=1))[0]
    head = to_head(params["w"], float(params["b"][0]), threshold, prune)
    hidden = Hidden.from_bytes(kept.tolist(), stored[kept].tobytes(), scale, params["c"].tolist(),
                               params["out"].tolist(), float(params["d"][0]))
    return Head(head.weights, head.bias, threshold, hidden)


def balanced_weights(labels: Sequence[int], sources: Sequence[str]) -> np.ndarray:
    """Each (label, source) cell gets weight proportional to sqrt(size): big corpora count, but do not drown the rest."""
    cells: dict[tuple[int, str], int] = defaultdict(int)
    for label, source in zip(labels, sources):
        cells[(label, source)] += 1
    total = {0: 0.0, 1: 0.0}
    for (label, _), n in cells.items():
        total[label] += n**0.5
    return np.array([
        (cells[(label, source)] ** 0.5 / total[label]) / cells[(label, source)]
        for label, source in zip(labels, sources)
    ])


def to_head(w: np.ndarray, b: float, threshold: float, prune: float = 0.01) -> Head:
    keep = np.nonzero(np.abs(w) >= prune)[0]
    return Head({int(i): float(np.round(w[i], 4)) for i in keep}, float(b), threshold)


# --------------------------------------------------------------------------
# the two heads
# --------------------------------------------------------------------------


def segment_training_set(docs: Sequence[Doc], head: Head | None) -> tuple[list[dict[int, float]], list[int], list[str]]:
    """Negatives: every segment of benign tool content. Positives: per attack, the segments no benign
    document of its corpus contains (the injection), narrowed to the best-scoring ones once a model exists."""
    rows: list[dict[int, float]] = []
    labels: list[int] = []
    sources: list[str] = []
    benign_by_corpus: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        if not doc.attack:
            benign_by_corpus[doc.corpus].update(p.lower() for p in doc.pieces)
    all_benign = set().union(*benign_by_corpus.values()) if benign_by_corpus else set()
    for doc in docs:
        if doc.hook == "message_received" and doc.corpus not in ("dialogue", "garak", "handwritten-direct"):
            continue
        if not doc.attack:
            if doc.corpus in ("handwritten-request", "synthetic-request"):
                continue  # a user's request is an instruction by design; as tool content it would be one too
            for piece in doc.pieces:
                rows.append(piece_features(doc, piece))
                labels.append(0)
                sources.append(doc.corpus)
            continue
        unique = [p for p in doc.pieces if p.lower() not in all_benign] or doc.pieces
        if doc.corpus in ("garak", "handwritten-direct"):
            candidates = unique
            keep = 2
        else:
            candidates = unique
            keep = 1 if len(unique) > 3 else len(unique)
        if head is None:
            chosen = sorted(candidates, key=_instruction_prior, reverse=True)[:keep] if doc.corpus != "garak" else []
        else:
            scored = sorted(candidates, key=lambda p: -head.probability(piece_features(doc, p)))
            chosen = scored[:keep]
        for piece in chosen:
            rows.append(piece_features(doc, piece))
            labels.append(1)
            sources.append(doc.corpus)
    return rows, labels, sources


def segment_rows(docs: Sequence[Doc]) -> dict[int, tuple[Doc, int]]:
    """Where each row of :func:`segment_training_set` comes from: ``id(row)`` -> (document, segment index).

    Rows are the memoised feature dicts of :func:`piece_features`, so a row is the very object its segment's
    features are; a segment that several documents share with the same cues maps to the first of them.
    """
    where: dict[int, tuple[Doc, int]] = {}
    for doc in docs:
        for i, piece in enumerate(doc.pieces):
            where.setdefault(id(piece_features(doc, piece)), (doc, i))
    return where


def _instruction_prior(piece: str) -> float:
    """Before any model exists: how much a segment looks like an instruction (imperative, second person)."""
    words = piece.split()
    first = next((w.lower().strip(",:") for w in words if w.lower() not in ("please", "kindly", "also")), "")
    from clawcore_prism.features import IMPERATIVE_VERBS

    return 2.0 * (first in IMPERATIVE_VERBS) + 1.0 * bool(re.search(r"\byour?\b", piece, re.I)) + min(len(words), 40) / 40


def _segment_weights(docs: Sequence[Doc]) -> Head:
    """Two linear passes choose each attack's injected segments; the hidden head then learns from them."""
    head = None
    for _ in range(2):
        rows, labels, sources = segment_training_set(docs, head)
        w, b = fit(rows, np.array(labels, dtype=float), balanced_weights(labels, sources), l2=L2)
        head = to_head(w, b, 0.5)
    assert head is not None
    if not HIDDEN:
        return head
    rows, labels, sources = segment_training_set(docs, head)
    y, weight = np.array(labels, dtype=float), balanced_weights(labels, sources)
    return to_hidden_head(average([fit_hidden(rows, y, weight, size=HIDDEN, seed=SEED + k) for k in range(NETWORKS)]),
                          0.5)


def _message_weights(docs: Sequence[Doc]) -> Head:
    rows, labels, sources = [], [], []
    for doc in docs:
        if _message_example(doc):
            rows.append(document_features(doc.canonical))
            labels.append(int(doc.attack))
            sources.append(doc.corpus)
    w, b = fit(rows, np.array(labels, dtype=float), balanced_weights(labels, sources), l2=L2)
    return to_head(w, b, 0.5)


def _message_example(doc: Doc) -> bool:
    if doc.hook == "message_received" or doc.corpus in ("prose", "handwritten-output"):
        return not doc.attack or doc.corpus in ("garak", "handwritten-direct")
    return False


def _out_of_fold(docs: Sequence[Doc], train: Callable[[Sequence[Doc]], Head],
                 score: Callable[[Head, Doc], float], benign: Callable[[Doc], bool]) -> list[float]:
    """Benign scores from models that did not see those documents: 2 folds by group, over :data:`SPLITS` splits."""
    scores: list[float] = []
    ordered = sorted({d.group for d in docs})
    for split in range(SPLITS):
        groups = ordered.copy()
        random.Random(SEED + 1 + split).shuffle(groups)
        half = set(groups[: len(groups) // 2])
        for side in (True, False):
            head = train([d for d in docs if (d.group in half) != side])
            scores.extend(score(head, d) for d in docs if (d.group in half) == side and benign(d))
    return scores


def _segment_doc_score(head: Head, doc: Doc) -> float:
    return max((head.probability(piece_features(doc, p)) for p in doc.pieces), default=0.0)


def train_segment_head(docs: Sequence[Doc], fp_target: float = FP_TARGET) -> Head:
    """Weights from all ``docs``; the threshold from out-of-fold benign scores (honest, not in-sample)."""
    oof = _out_of_fold(docs, _segment_weights, _segment_doc_score,
                       lambda d: not d.attack and d.hook == "after_tool_call")
    head = _segment_weights(docs)
    return Head(head.weights, head.bias, pick_threshold(oof, fp_target), head.hidden)


def train_message_head(docs: Sequence[Doc], fp_target: float = FP_TARGET) -> Head:
    oof = _out_of_fold(docs, _message_weights,
                       lambda h, d: h.probability(document_features(d.canonical)),
                       lambda d: _message_example(d) and not d.attack)
    head = _message_weights(docs)
    return Head(head.weights, head.bias, pick_threshold(oof, fp_target))


def pick_threshold(benign_scores: Sequence[float], fp_target: float) -> float:
    """The lowest threshold that keeps training false positives at ``fp_target``, never below 0.5."""
    if not benign_scores:
        return 0.5
    ranked = sorted(benign_scores)
    index = min(len(ranked) - 1, int(len(ranked) * (1 - fp_target)))
    return float(min(0.97, max(0.5, ranked[index] + 1e-4)))


# --------------------------------------------------------------------------
# evaluation
# --------------------------------------------------------------------------


def evaluate(detector: Detector, docs: Sequence[Doc]) -> dict[str, tuple[int, int, int, int]]:
    """Per corpus: (attacks flagged, attacks, benign flagged, benign)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for doc in docs:
        scope = "indirect" if doc.hook == "after_tool_call" else "direct"
        flagged = detector.scan(doc.text, scope).score >= 0.5
        cell = out[doc.corpus]
        if doc.attack:
            cell[0] += flagged
            cell[1] += 1
        else:
            cell[2] += flagged
            cell[3] += 1
    return {k: tuple(v) for k, v in out.items()}  # type: ignore[misc]


def table(title: str, results: dict[str, tuple[int, int, int, int]]) -> str:
    lines = [f"### {title}", "", "| corpus | recall | attacks | false positives | benign |", "|---|---:|---:|---:|---:|"]
    for corpus, (tp, n_att, fp, n_ben) in sorted(results.items()):
        recall = f"{tp / n_att:.3f}" if n_att else "–"
        fpr = f"{fp / n_ben:.3f}" if n_ben else "–"
        lines.append(f"| {corpus} | {recall} | {n_att} | {fpr} | {n_ben} |")
    return "\n".join(lines)


def independent_docs() -> list[Doc]:
    """The tool-output cases of ``bench/data/prism-independent-*.jsonl``, one corpus per file (never trained on)."""
    docs = []
    for path in sorted((REPO / "bench" / "data").glob("prism-independent-*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if case["scope"] == "indirect":
                docs.append(Doc(case["text"], case["label"] == "attack", path.stem, path.stem))
    return docs


def train_classifier(docs: Sequence[Doc]) -> Classifier:
    return Classifier(train_segment_head(docs), train_message_head(docs))


def report(docs: Sequence[Doc], cross_only: bool = False) -> None:
    dev = [d for d in docs if d.corpus in ("bipia", "injecagent", "garak", "chat", "handwritten-chat")]
    print(table("rules only (no classifier), dev corpora", evaluate(Detector(None), dev)), "\n", flush=True)
    # Cross-corpus: the corpus under test (attacks and benign) is left out of training entirely.
    for held in ("bipia", "injecagent", "garak"):
        train = [d for d in docs if d.corpus != held and d.corpus != "handwritten-chat"]
        model = train_classifier(train)
        test = [d for d in docs if d.corpus in (held, "handwritten-chat")]
        print(table(f"cross-corpus: trained without {held}", evaluate(Detector(model), test)), "\n", flush=True)
    if cross_only:
        return
    # In-distribution: grouped 5-fold (the same injected text never in train and test).
    groups = sorted({d.group for d in docs})
    rng = random.Random(SEED)
    rng.shuffle(groups)
    fold_of = {g: i % 5 for i, g in enumerate(groups)}
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for fold in range(5):
        train = [d for d in docs if fold_of[d.group] != fold and d.corpus != "handwritten-chat"]
        test = [d for d in dev if fold_of[d.group] == fold]
        for corpus, cell in evaluate(Detector(train_classifier(train)), test).items():
            totals[corpus] = [a + b for a, b in zip(totals[corpus], cell)]
        print(f"fold {fold} done", file=sys.stderr, flush=True)
    print(table("in-distribution: grouped 5-fold cross-validation", {k: tuple(v) for k, v in totals.items()}))  # type: ignore[misc]


def save(model: Classifier, path: Path, info: dict[str, object]) -> None:
    def hidden(layer: Hidden) -> dict[str, object]:
        buckets, stored = layer.to_bytes()
        return {"scale": layer.scale, "bias": list(layer.bias), "out": list(layer.out), "out_bias": layer.out_bias,
                "buckets": buckets, "rows": base64.b64encode(stored).decode("ascii")}

    def head(h: Head) -> dict[str, object]:
        items = sorted(h.weights.items())
        out = {"indices": [i for i, _ in items], "values": [v for _, v in items], "bias": round(h.bias, 5),
               "threshold": round(h.threshold, 5)}
        if h.hidden is not None:
            out["hidden"] = hidden(h.hidden)
        return out

    payload = {"buckets": BUCKETS, "segment": head(model.segment), "message": head(model.message), "info": info}
    path.write_bytes(gzip.compress(json.dumps(payload, separators=(",", ":")).encode(), mtime=0))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval-dir", type=Path, default=DEFAULT_EVAL)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--report", action="store_true", help="print cross-corpus and cross-validation tables")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--cross-only", action="store_true", help="with --report: skip the 5-fold part")
    parser.add_argument("--independent", action="store_true",
                        help="print the trained model's tool-output recall and FP on bench/data's independent sets")
    args = parser.parse_args(argv)
    rng = random.Random(SEED)
    docs = dev_docs(args.eval_dir)
    docs += extra_docs(args.eval_dir, rng)
    prepare(docs)
    assign_injecagent_groups(docs)
    print(f"{len(docs)} documents", file=sys.stderr, flush=True)
    if args.report:
        report(docs, args.cross_only)
    if args.no_save and not args.independent:
        return 0
    model = train_classifier([d for d in docs if d.corpus != "handwritten-chat"])
    if args.independent:
        print(table("independent sets, tool output (never trained on)", evaluate(Detector(model), independent_docs())))
    if not args.no_save:
        counts: dict[str, int] = defaultdict(int)
        for d in docs:
            counts[d.corpus] += 1
        save(model, args.out, {"trained_on": dict(sorted(counts.items())), "seed": SEED,
                               "segment_weights": len(model.segment.weights),
                               "message_weights": len(model.message.weights)})
        print(f"wrote {args.out} ({args.out.stat().st_size} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
