#!/usr/bin/env python3
"""The Python peer of `bench-ingest`: a BEIR corpus embedded with onnxruntime + tokenizers.

    python3 scripts/bench-ingest-onnx.py --onnx model.onnx --tokenizer DIR/tokenizer.json \
        --corpus ../shared/datasets/scifact/beir/corpus.jsonl --out vectors.npy \
        [--threads 2] [--batch 32] [--max-tokens 256] [--limit N]

It does what a careful Python pipeline does (what sentence-transformers' `encode` does):
read the corpus (document = title + " " + text, as `veredicto ingest` embeds a BEIR corpus),
tokenize every document (truncated to --max-tokens, special tokens included; the tokenizers
library tokenizes a batch on all cores), sort the documents by length so that a batch pads
little, pad each batch to its longest member, run the ONNX graph (mean pooling over the
attention mask and L2 normalisation are part of the graph written by
`scripts/reference_embed.py --export-onnx`), and write the vectors, in corpus order, as a
float32 `.npy` file. onnxruntime runs with --threads intra-op threads.

Prints one JSON line: seconds per stage (read, tokenize, embed, write), in-script total,
the vectors' count and dimension, the padded and real token counts, and the versions.
"""

import argparse
import json
import os
import sys
import time

T_START = time.perf_counter()

import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import tokenizers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--tokenizer", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--limit", type=int, default=0, help="only the first N documents (0: all)")
    a = ap.parse_args()

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(a.onnx, opts, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}
    t_load = time.perf_counter()

    # Read.
    texts = []
    with open(a.corpus, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            d = json.loads(line)
            title = d.get("title") or ""
            texts.append(f"{title} {d['text']}" if title else d["text"])
            if a.limit and len(texts) == a.limit:
                break
    t_read = time.perf_counter()

    # Tokenize (the library runs a batch on all cores).
    tok = Tokenizer.from_file(a.tokenizer)
    tok.no_padding()
    tok.enable_truncation(max_length=a.max_tokens)
    encs = tok.encode_batch(texts)
    ids = [e.ids for e in encs]
    t_tok = time.perf_counter()

    # Embed: longest first, each batch padded to its longest member.
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    out = np.empty((len(ids), 0), dtype=np.float32)
    padded = 0
    for s in range(0, len(order), a.batch):
        members = order[s : s + a.batch]
        width = max(len(ids[i]) for i in members)
        padded += width * len(members)
        x = np.zeros((len(members), width), dtype=np.int64)
        m = np.zeros((len(members), width), dtype=np.int64)
        for r, i in enumerate(members):
            x[r, : len(ids[i])] = ids[i]
            m[r, : len(ids[i])] = 1
        feed = {"input_ids": x, "attention_mask": m, "token_type_ids": np.zeros_like(x)}
        v = sess.run(None, {k: val for k, val in feed.items() if k in names})[0]
        if out.shape[1] == 0:
            out = np.empty((len(ids), v.shape[1]), dtype=np.float32)
        out[members] = v
    t_embed = time.perf_counter()

    # Write.
    tmp = a.out + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, out)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, a.out)
    t_write = time.perf_counter()

    print(json.dumps({
        "imports": t_load - T_START,
        "read": t_read - t_load,
        "tokenize": t_tok - t_read,
        "embed": t_embed - t_tok,
        "write": t_write - t_embed,
        "total": t_write - T_START,
        "vectors": int(out.shape[0]),
        "dim": int(out.shape[1]),
        "tokens": int(sum(len(i) for i in ids)),
        "padded_tokens": int(padded),
        "onnxruntime": ort.__version__,
        "tokenizers": tokenizers.__version__,
        "numpy": np.__version__,
        "python": sys.version.split()[0],
    }))


if __name__ == "__main__":
    main()
