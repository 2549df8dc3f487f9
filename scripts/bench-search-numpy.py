#!/usr/bin/env python3
"""numpy peer of `bench-search`: exact top-k the way a numpy user writes it.

Usage: bench-search-numpy.py VECTORS.f32 QUERIES.f32 N DIM NQ K

Loads the index's row-major little-endian `vectors.f32` and the queries into memory, prints
one JSON line describing numpy and its BLAS (threadpoolctl), then answers commands read from
stdin, one JSON line each:
  run   -> {"seconds": s, "cpu_seconds": c}   wall and process CPU time of
           scores = Q @ D.T, argpartition, sort of the top k
  sgemm -> {"seconds": s, "cpu_seconds": c}   the same for scores = Q @ D.T alone (the
           BLAS sgemm that bounds the score kernel, into an output allocated once; no top-k)
  sgemm1 -> the same on one BLAS thread (no time spent by threads waiting for each other;
           {"seconds": null} without threadpoolctl)
  ids   -> {"ids": [[row, ...], ...]}   the top k rows per query, best first
  quit
"""
import json
import sys
import time

import numpy as np

try:
    from threadpoolctl import threadpool_info, threadpool_limits
except ImportError:  # pragma: no cover - informative only
    threadpool_info = None
    threadpool_limits = None


def top_k(q, d, k):
    scores = q @ d.T
    idx = np.argpartition(scores, -k, axis=1)[:, -k:]
    top = np.take_along_axis(scores, idx, axis=1)
    order = np.argsort(-top, axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1)


def main():
    vectors, queries, n, dim, nq, k = sys.argv[1:7]
    n, dim, nq, k = int(n), int(dim), int(nq), int(k)
    d = np.fromfile(vectors, dtype="<f4").reshape(n, dim)
    q = np.fromfile(queries, dtype="<f4").reshape(nq, dim)
    info = {"numpy": np.__version__}
    if threadpool_info is not None:
        info["blas"] = [
            {key: p.get(key) for key in ("internal_api", "version", "architecture", "num_threads", "threading_layer")}
            for p in threadpool_info()
        ]
    print(json.dumps(info), flush=True)
    # The sgemm output, allocated and paged in once, so that "sgemm" times the BLAS alone.
    out = np.ones((nq, n), dtype=np.float32)
    for line in sys.stdin:
        command = line.strip()
        if command == "run":
            t = time.perf_counter()
            c = time.process_time()
            top_k(q, d, k)
            seconds = time.perf_counter() - t
            cpu = time.process_time() - c
            print(json.dumps({"seconds": seconds, "cpu_seconds": cpu}), flush=True)
        elif command == "sgemm":
            t = time.perf_counter()
            c = time.process_time()
            np.matmul(q, d.T, out=out)
            seconds = time.perf_counter() - t
            cpu = time.process_time() - c
            print(json.dumps({"seconds": seconds, "cpu_seconds": cpu}), flush=True)
        elif command == "sgemm1":
            if threadpool_limits is None:
                print(json.dumps({"seconds": None, "cpu_seconds": None}), flush=True)
                continue
            with threadpool_limits(limits=1, user_api="blas"):
                t = time.perf_counter()
                c = time.process_time()
                np.matmul(q, d.T, out=out)
                seconds = time.perf_counter() - t
                cpu = time.process_time() - c
            print(json.dumps({"seconds": seconds, "cpu_seconds": cpu}), flush=True)
        elif command == "ids":
            print(json.dumps({"ids": top_k(q, d, k).tolist()}), flush=True)
        elif command == "quit":
            break


if __name__ == "__main__":
    main()
