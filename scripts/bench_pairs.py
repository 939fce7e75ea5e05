"""The pair comparison inside key groups (core/candidates.py `_small_group_pairs`, the numpy part of the
candidate search) against the way it was done before: flat index arrays into all members, one pair each.
Both run on the same groups, taking turns; the table prints nanoseconds a pair compared and the ratio, and
checks that both give the same pairs in the same order.

    python scripts/bench_pairs.py [--sizes 1000000,4000000,10000000] [--rounds 5]

The groups are those one task of the job sees at k = 3 (4 tables of 16-bit keys): N random fingerprints
keyed by their low 16 bits, the keys below 4096 kept (a sixteenth of one table), so a group holds about
N / 65536 members; 5% of them get a copy 3 bits away in the same group, so some pairs are accepted.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simhash_udf.core.blocks import plan_tables  # noqa: E402
from simhash_udf.core.candidates import SMALL_GROUP, _small_group_pairs, key_groups, pair_filter  # noqa: E402


def flat_index_pairs(members, starts, sizes, tables, filt, pairs_per_chunk=1 << 22):
    """The former _small_group_pairs: for each group size, (i, j) index arrays of every pair of every group
    into all members, then two gathers and the filter on the flat XORs."""
    out_i, out_j = [], []
    for s in np.unique(sizes):
        iu, ju = np.triu_indices(int(s), 1)
        sel = np.flatnonzero(sizes == s)
        per_chunk = max(1, pairs_per_chunk // len(iu))
        for c in range(0, len(sel), per_chunk):
            g = sel[c : c + per_chunk]
            i = (starts[g][:, None] + iu[None, :]).ravel()
            j = (starts[g][:, None] + ju[None, :]).ravel()
            t = np.repeat(tables[g], len(iu))
            ok = filt.accept(members[i] ^ members[j], t)
            out_i.append(i[ok])
            out_j.append(j[ok])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.concatenate(out_i), np.concatenate(out_j)


def task_groups(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    fps = rng.integers(-(2**63), 2**63 - 1, size=n, dtype=np.int64, endpoint=True)
    fps = fps[(fps & 0xFFFF) < 4096]
    copies = rng.choice(fps, size=len(fps) // 20)
    flips = np.zeros(len(copies), dtype=np.uint64)
    for _ in range(3):  # up to 3 bits above the key (two draws may hit the same bit)
        flips |= np.uint64(1) << rng.integers(16, 64, len(copies)).astype(np.uint64)
    fps = np.unique(np.r_[fps, (copies.view(np.uint64) ^ flips).view(np.int64)])
    key = fps & 0xFFFF
    order = np.argsort(key, kind="stable")
    fps, key = fps[order], key[order]
    offsets = np.r_[0, np.flatnonzero(key[1:] != key[:-1]) + 1, len(key)]
    tables = rng.integers(0, 4, len(offsets) - 1)
    return key_groups(fps, offsets, tables)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000000,4000000,10000000", help="N fingerprints (comma-separated)")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    plan = plan_tables(3)
    filt = pair_filter(plan)
    print("| N | members | mean group | pairs compared | pairs accepted | flat index ns/pair | job ns/pair | flat / job "
          "| same pairs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        members, tables, starts, sizes = task_groups(n)
        small = (sizes >= 2) & (sizes <= SMALL_GROUP)
        call = (members, starts[small], sizes[small], tables[small], filt)
        compared = int((sizes[small] * (sizes[small] - 1) // 2).sum())
        best = {"flat": float("inf"), "job": float("inf")}
        for _ in range(args.rounds):
            for name, fn in (("flat", flat_index_pairs), ("job", _small_group_pairs)):
                t = time.perf_counter()
                out = fn(*call)
                best[name] = min(best[name], time.perf_counter() - t)
                if name == "flat":
                    ref = out
                else:
                    same = all(np.array_equal(a, b) for a, b in zip(out, ref))
        ns = {k: v / compared * 1e9 for k, v in best.items()}
        print(f"| {n:,} | {len(members):,} | {sizes.mean():.1f} | {compared:,} | {len(ref[0]):,} | {ns['flat']:.2f} | "
              f"{ns['job']:.2f} | {ns['flat'] / ns['job']:.2f} | {same} |")


if __name__ == "__main__":
    main()
