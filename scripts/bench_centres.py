"""The resolve stage's walk over components (spark/verified.component_centres: the greedy centres of each
component of two or more units), without Spark, on synthetic components of 2-4 units shaped like the 10M
benchmark's (signatures of one component share a base with 0, 10 or 30% of the bins redrawn). Each checkout
runs in its own Python process, taking turns, best of --runs; prints seconds, the ratio, and whether the
centres are the same.

    python scripts/bench_centres.py                                  # this checkout
    git worktree add /tmp/before 9bf4f96 && python scripts/bench_centres.py --compare /tmp/before
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import hashlib, json, sys, time
import numpy as np, pyarrow as pa
from simhash_udf.job.config import DedupConfig
from simhash_udf.spark.verified import component_centres
n_comp, batch = int(sys.argv[1]), int(sys.argv[2])
spec = DedupConfig().verify
rng = np.random.default_rng(0)
sizes = rng.integers(2, 5, n_comp)
comp = np.repeat(np.arange(n_comp, dtype=np.int64) * 11, sizes)
n = len(comp)
pos = np.concatenate([np.arange(1, s + 1) for s in sizes]).astype(np.int32)
sigs = np.repeat(rng.integers(0, 256, (n_comp, spec.signature.bins), dtype=np.uint8), sizes, axis=0)
redraw = rng.random(sigs.shape) < rng.choice([0.0, 0.1, 0.3], n)[:, None]
sigs[redraw] = rng.integers(0, 256, int(redraw.sum()), dtype=np.uint8)
table = pa.table({"comp": comp, "pos": pos, "signature": pa.array(list(map(bytes, sigs)), pa.binary()),
                  "short_text": pa.nulls(n, pa.string()), "fixed": np.zeros(n, bool), "fingerprint": comp,
                  "unit_id": np.arange(n, dtype=np.int64), "h_cluster": pa.nulls(n, pa.int64()),
                  "h_kept_date": pa.nulls(n, pa.string())})
batches = table.to_batches(max_chunksize=batch)
start = time.perf_counter()
out = pa.Table.from_batches(list(component_centres(iter(batches), spec)))
seconds = time.perf_counter() - start
kept = out.sort_by("unit_id").column("kept_id").to_numpy()
print(json.dumps({"seconds": seconds, "rows": n, "centres": hashlib.sha1(kept.tobytes()).hexdigest()}))
"""


def run(code: str, n_comp: int, batch: int) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, str(n_comp), str(batch)], capture_output=True, text=True, cwd=code,
                          env={**os.environ, "PYTHONPATH": code}, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--components", type=int, default=200_000)
    ap.add_argument("--batch", type=int, default=10_000, help="rows per Arrow batch (Spark's default)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--compare", nargs="*", default=[], help="other checkouts to run beside this one")
    args = ap.parse_args()
    codes = [ROOT, *[os.path.abspath(c) for c in args.compare]]
    best: dict[str, dict] = {}
    for _ in range(args.runs):
        for code in codes:
            r = run(code, args.components, args.batch)
            if code not in best or r["seconds"] < best[code]["seconds"]:
                best[code] = r
    mine = best[ROOT]
    print(f"{args.components:,} components, {mine['rows']:,} units, best of {args.runs}:\n")
    print("| checkout | seconds | this / it | same centres |")
    print("|---|---|---|---|")
    for code in codes:
        r = best[code]
        print(f"| {'this' if code == ROOT else code} | {r['seconds']:.2f} | {mine['seconds'] / r['seconds']:.3f} "
              f"| {'yes' if r['centres'] == mine['centres'] else 'NO'} |")


if __name__ == "__main__":
    main()
