"""The fusion oracle of crates/core/tests/fusion_ranx.rs: ranx's `fuse` on the runs it is given.

Reads one JSON object from standard input:
  {"jobs": [{"runs": [{QUERY: {DOC: SCORE}}, ...],
             "configs": [{"method": "rrf", "norm": null, "params": {"k": 60}}, ...]}, ...]}
and writes {"ranx": VERSION, "jobs": [{"fused": [{QUERY: {DOC: SCORE}}, ...]}, ...]}, one
fused run per config. Exits 3 when ranx cannot be imported (the test then skips, saying so).
"""
import json
import sys
import warnings

try:
    warnings.simplefilter("ignore")  # numba's type-safety notes on ranx's own casts
    from ranx import Run, fuse
except Exception as e:  # noqa: BLE001 - any import failure means "no oracle"
    print(f"ranx cannot be imported: {e}", file=sys.stderr)
    sys.exit(3)
from importlib.metadata import version  # noqa: E402

out = []
for job in json.load(sys.stdin)["jobs"]:
    runs = [Run(r) for r in job["runs"]]
    fused_runs = []
    for c in job["configs"]:
        fused = fuse(runs=runs, norm=c["norm"], method=c["method"], params=c.get("params") or {})
        fused_runs.append(
            {q: {d: float(s) for d, s in docs.items()} for q, docs in fused.to_dict().items()}
        )
    out.append({"fused": fused_runs})
json.dump({"ranx": version("ranx"), "jobs": out}, sys.stdout)
