"""Agreement of the two segmentation backends (jieba, rjieba) on real Chinese text: the share of
documents whose token sequences are identical, and the Hamming distances between the fingerprints each
backend gives the same document.

    python scripts/compare_segmenters.py [--glob '/usr/share/man/zh_CN/man*/*.gz'] [--k 3]
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_fingerprint import corpus, man_page_texts  # noqa: E402

from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_batch  # noqa: E402
from simhash_udf.core.text import normalize_chars, tokens_auto  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--glob", default="/usr/share/man/zh_CN/man*/*.gz")
    ap.add_argument("--k", type=int, default=3)
    args = ap.parse_args()
    texts = man_page_texts(args.glob)
    source = args.glob
    if not texts:
        texts, source = corpus("zh", 2)
    normal = [normalize_chars(t) for t in texts]
    seconds, tokens = {}, {}
    for backend in ("jieba", "rjieba"):
        start = time.perf_counter()
        tokens[backend] = [tokens_auto(t, backend) for t in normal]
        seconds[backend] = time.perf_counter() - start
    same = sum(a == b for a, b in zip(tokens["jieba"], tokens["rjieba"]))
    n_tok = sum(len(t) for t in tokens["jieba"])
    differing_tokens = sum(
        sum((Counter(a) - Counter(b)).values()) for a, b in zip(tokens["jieba"], tokens["rjieba"])
    )
    fps = {b: fingerprint_batch(texts, FeatureSpec(segmenter=b))[0] for b in ("jieba", "rjieba")}
    dist = np.bitwise_count((fps["jieba"] ^ fps["rjieba"]).view(np.uint64))
    size = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(f"text: {source}: {len(texts)} documents, {size:.1f} MB, {n_tok:,} tokens (jieba)")
    print(f"identical token sequences: {same} of {len(texts)} documents ({same / len(texts):.1%})")
    print(f"tokens that differ: {differing_tokens:,} of {n_tok:,} ({differing_tokens / max(n_tok, 1):.3%})")
    hist = Counter(dist.tolist())
    print("Hamming distance between the backends' fingerprints: "
          + ", ".join(f"{d}: {hist[d]}" for d in sorted(hist)))
    print(f"within k={args.k}: {(dist <= args.k).mean():.1%}; max {dist.max()}")
    print(f"segmentation of Han runs: jieba {size / seconds['jieba']:.2f} MB/s, rjieba {size / seconds['rjieba']:.2f} MB/s")


if __name__ == "__main__":
    main()
