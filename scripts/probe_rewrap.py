"""Chinese pages wrapped at two widths (the hard line breaks inside their sentences moved): how often the two
copies are within k (default 3, the job's) and verify (signature similarity >= --min-similarity, default 0.8),
with the simhash_udf on the path. The signature bands (the job's second candidate source) are not probed:
a pair farther than k apart can still be found by them.

    python scripts/probe_rewrap.py work/man/docs.parquet [--k 3] [--min-similarity 0.8]

An earlier checkout can be measured the same way (PYTHONPATH=that checkout); its old flat layout is tried
first, because an editable install of this one would also answer simhash_udf.core.* imports.
"""
from __future__ import annotations

import argparse
import re

import numpy as np
import pandas as pd

try:
    from simhash_udf.fingerprint import FeatureSpec, fingerprint_batch  # the layout before core/
    from simhash_udf.signature import SignatureSpec, similarity
except ImportError:
    from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_batch
    from simhash_udf.core.signature import SignatureSpec, similarity

HAN = re.compile(r"[\u4e00-\u9fff]")
HAN_GAP = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")


def wrap(text: str, width: int) -> str:
    """text with the white space between its Han characters removed, then a line break after every `width`
    characters where both neighbours are Han."""
    text = HAN_GAP.sub("", text)
    out, col = [], 0
    for i, c in enumerate(text):
        out.append(c)
        col += 1
        if col >= width and HAN.match(c) and i + 1 < len(text) and HAN.match(text[i + 1]):
            out.append("\n")
            col = 0
    return "".join(out)


def main(path: str, k: int = 3, min_similarity: float = 0.8) -> None:
    docs = pd.read_parquet(path)
    zh = [t for t in docs.text if t and len(t) >= 500 and len(HAN.findall(t)) > 0.3 * len(t)]
    n = len(zh)
    pages = [wrap(t, 30) for t in zh] + [wrap(t, 37) for t in zh]
    fps, _, sigs = fingerprint_batch(pages, FeatureSpec(), SignatureSpec())
    dist = np.array([bin((int(fps[i]) ^ int(fps[i + n])) & (2**64 - 1)).count("1") for i in range(n)])
    sim = np.array([similarity(sigs[i], sigs[i + n], SignatureSpec().bits) for i in range(n)])
    print(f"fingerprint version {FeatureSpec().version()}")
    print(f"{n} Chinese pages of 500+ characters wrapped at 30 and at 37 characters: within k = {k} "
          f"{np.mean(dist <= k):.3f}, signatures verify (>= {min_similarity}) {np.mean(sim >= min_similarity):.3f}, "
          f"found (both) {np.mean((dist <= k) & (sim >= min_similarity)):.3f}; median distance {np.median(dist):.0f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("docs", help="a corpus's docs.parquet (scripts/make_corpus.py)")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--min-similarity", type=float, default=0.8)
    args = ap.parse_args()
    main(args.docs, args.k, args.min_similarity)
