"""Which verification signature: how well each separates copies from non-copies among the job's candidate pairs.

    python scripts/compare_signatures.py --corpus work/man20k [--corpus work/gen100k --sample 30000]

For each corpus (make_corpus.py output: DIR/docs.parquet): the default features of every page, its 64-bit
SimHash and every candidate signature from the same feature hashes; the candidate pairs are all pairs within
--k bits of the SimHash (brute force) plus the oracle's pairs (character 5-gram Jaccard >= 0.9, quality.py).
Printed per signature: bytes a page, ms per MB of text to compute it (from the feature hashes, one core,
best of 3), and for thresholds t: the share of oracle copies (J >= 0.9) whose estimate is >= t (kept) and
the share of candidate pairs with J < 0.5 whose estimate is >= t (let through).

Signatures compared: one-permutation MinHash with optimal densification, b bits a bin (oph{bins}x{bits},
signature.py), and 192 more SimHash bits from three re-mixed copies of each feature hash (estimate: the
angle from the Hamming distance, turned into the Jaccard index of two sets of equal size)."""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simhash_udf.core.fingerprint import _HASHES, FeatureSpec, simhash_from_hashes, weighted_features  # noqa: E402
from simhash_udf.core.shingles import jaccard, shingle_set  # noqa: E402
from simhash_udf.core.signature import SignatureSpec, mix64, oph_signatures, similarity  # noqa: E402
from simhash_udf.evaluation.quality import similar_pairs  # noqa: E402

THRESHOLDS = (0.5, 0.6, 0.7, 0.8)


def simhash192(hashes, offsets):
    words = [simhash_from_hashes(mix64(hashes ^ np.uint64(0x9E3779B97F4A7C15 * (s + 1) % 2**64)), offsets) for s in range(3)]
    return np.stack(words, axis=1)


def simhash192_similarity(a, b):
    d = np.bitwise_count(a ^ b).sum(axis=-1)
    c = np.cos(np.pi * d / 192)
    return np.clip(c / (2 - c), 0, 1)  # cosine of two equal-size sets -> their Jaccard index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--sample", type=int, default=0, help="use the first N pages only")
    ap.add_argument("--k", type=int, default=3, help="default: the job's k (the tables in docs/quality.md were made at 6)")
    args = ap.parse_args()
    spec = FeatureSpec()
    options = {"oph128x8": SignatureSpec(128, 8), "oph64x16": SignatureSpec(64, 16), "oph256x8": SignatureSpec(256, 8),
               "oph128x16": SignatureSpec(128, 16)}
    for corpus in args.corpus:
        table = pq.read_table(os.path.join(corpus, "docs.parquet"), columns=["id", "text"])
        texts = table.column("text").to_pylist()[: args.sample or None]
        mb = sum(len(t.encode()) for t in texts) / 1e6
        feats = [list(weighted_features(t, spec)[0]) for t in texts]
        lengths = np.array([len(f) for f in feats])
        keep = np.flatnonzero(lengths > 0)
        offsets = np.r_[0, np.cumsum(lengths[keep])]
        hashes = np.array([_HASHES[x] for i in keep for x in feats[i]], dtype=np.uint64)
        fps = simhash_from_hashes(hashes, offsets)
        texts = [texts[i] for i in keep]
        # candidate pairs: within k by brute force, plus the oracle's copies
        pi, pj = [], []
        for i in range(len(fps) - 1):
            d = np.bitwise_count(fps[i] ^ fps[i + 1 :])
            j = np.flatnonzero(d <= args.k) + i + 1
            pi.append(np.full(len(j), i)), pj.append(j)
        sets = [shingle_set(t) for t in texts]
        oi, oj, _ = similar_pairs(sets, 0.9)
        pairs = set(zip(np.concatenate(pi).tolist(), np.concatenate(pj).tolist())) | set(zip(oi.tolist(), oj.tolist()))
        a = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
        truth = np.array([jaccard(sets[x], sets[y]) for x, y in zip(*a)])
        pos, neg = truth >= 0.9, truth < 0.5
        print(f"\n{corpus}: {len(texts):,} pages, {mb:.1f} MB, {len(pairs):,} pairs "
              f"({pos.sum():,} with J >= 0.9, {neg.sum():,} with J < 0.5)\n")
        head = "| signature | bytes a page | ms per MB | " + " | ".join(f"kept / let through at {t}" for t in THRESHOLDS) + " |"
        print(head + "\n|" + "---|" * (3 + len(THRESHOLDS)))
        rows = [(name, s.nbytes, lambda s=s: oph_signatures(hashes, offsets, s)[0],
                 lambda x, y, s=s: similarity(x, y, s.bits)) for name, s in options.items()]
        rows.append(("simhash192", 24, lambda: simhash192(hashes, offsets), simhash192_similarity))
        for name, nbytes, make, sim in rows:
            best = min((lambda t0: (make(), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(3))
            sig = make()
            est = sim(sig[a[0]], sig[a[1]])
            cells = [f"{(est[pos] >= t).mean():.4f} / {(est[neg] >= t).mean():.4f}" for t in THRESHOLDS]
            print(f"| {name} | {nbytes} | {best * 1000 / mb:.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
