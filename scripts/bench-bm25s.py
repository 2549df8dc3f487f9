"""The Python peer of `bench-bm25`: bm25s (PyPI) on the same BEIR data set, same BM25
parameters (k1 = 1.2, b = 0.75, Lucene's idf), English Snowball stemming (PyStemmer) and
English stop words; each chunk's text is `title + " " + text`, as in bench-bm25.

  python scripts/bench-bm25s.py /work/shared/datasets/scifact/beir [--split test] [--rounds 3]

Prints nDCG@10 and R@100 (binary gain from qrels with relevance > 0, as veredicto), the
indexing time and the time of all queries (top 100), medians over the rounds.
"""
import argparse
import json
import math
import os
import statistics
import time

import bm25s
import Stemmer

ap = argparse.ArgumentParser()
ap.add_argument("dir")
ap.add_argument("--split", default="test")
ap.add_argument("--rounds", type=int, default=3)
args = ap.parse_args()

ids, texts = [], []
with open(os.path.join(args.dir, "corpus.jsonl")) as f:
    for line in f:
        d = json.loads(line)
        ids.append(d["_id"])
        texts.append((d.get("title") or "") + " " + (d.get("text") or ""))
qrels = {}
with open(os.path.join(args.dir, "qrels", f"{args.split}.tsv")) as f:
    next(f)
    for line in f:
        q, d, r = line.rstrip("\n").split("\t")
        if int(r) > 0:
            qrels.setdefault(q, {})[d] = int(r)
queries = {}
with open(os.path.join(args.dir, "queries.jsonl")) as f:
    for line in f:
        d = json.loads(line)
        if d["_id"] in qrels:
            queries[d["_id"]] = d["text"]
qids = sorted(queries)
stemmer = Stemmer.Stemmer("english")

build, search = [], []
for _ in range(args.rounds):
    t = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    model.index(tokens, show_progress=False)
    build.append(time.perf_counter() - t)
    t = time.perf_counter()
    qt = bm25s.tokenize([queries[q] for q in qids], stopwords="en", stemmer=stemmer, show_progress=False)
    docs, scores = model.retrieve(qt, k=100, show_progress=False, n_threads=1)
    search.append(time.perf_counter() - t)

ndcg, recall = [], []
for i, q in enumerate(qids):
    ranked = [ids[j] for j, s in zip(docs[i], scores[i]) if s > 0]
    rel = qrels[q]
    dcg = sum(1 / math.log2(r + 2) for r, d in enumerate(ranked[:10]) if d in rel)
    idcg = sum(1 / math.log2(r + 2) for r in range(min(10, len(rel))))
    ndcg.append(dcg / idcg)
    recall.append(sum(1 for d in ranked[:100] if d in rel) / len(rel))
print(f"bm25s {bm25s.__version__}: {len(ids)} chunks, {len(qids)} queries")
print(f"quality            nDCG@10   R@100")
print(f"bm25s              {statistics.mean(ndcg):.4f}    {statistics.mean(recall):.4f}")
print(f"build (median)     {statistics.median(build):.3f} s")
print(f"queries (median)   {statistics.median(search):.3f} s for {len(qids)} ({statistics.median(search) / len(qids) * 1e3:.3f} ms each), one thread")
