"""Short Chinese texts and their reposts with the punctuation typed in ASCII: the share of reposts the job
puts in the cluster of their original.

    python scripts/bench/short_punct.py --out work/punct                 # write, run the job, score
    python scripts/bench/short_punct.py --out work/punct --write-only    # only OUT/docs.parquet and truth
    python scripts/bench/short_punct.py --out work/punct --score DIR     # score a job's output DIR

Originals: real short Chinese texts, the sentences and short paragraphs (20-139 characters, with Chinese
punctuation) of Debian's Chinese man pages (manpages-zh), or with --source generated the short Chinese
pages of the generated corpus (jieba's dictionary). Each original has two reposts: every full-width mark in
ASCII (copy_kinds.punct_swapped: ，。！？；：、“” ...), and the same with a space after each ASCII mark (typed on
an English keyboard). The job runs at its defaults (options after -- are passed to it).
"""
from __future__ import annotations

import argparse
import glob
import os
import random
import re
import subprocess
import sys

import pandas as pd

from simhash_udf.core.text import normalize_text
from simhash_udf.evaluation.copy_kinds import PUNCT_TO_ASCII, punct_swapped
from simhash_udf.evaluation.corpus import SHORT_MAX, generated_original, man_page_paragraphs

_SENTENCE = re.compile(r"[^。！？]*[。！？]")
_ASCII_MARK_AFTER_HAN = re.compile(r"(?<=[\u4e00-\u9fff])([,.!?;:])(?=[\u4e00-\u9fff])")
_FULL_WIDTH = set(PUNCT_TO_ASCII)


def man_page_texts(pattern: str = "/usr/share/man/zh_CN/man*/*.gz") -> list[str]:
    """Sentences and paragraphs of the Chinese man pages that are short and hold Chinese punctuation."""
    out = []
    for path in sorted(glob.glob(pattern)):
        for para in man_page_paragraphs(path):
            out.extend(s.strip() for s in [para, *_SENTENCE.findall(para)])
    return [t for t in out if 20 <= len(t) < SHORT_MAX and set(t) & _FULL_WIDTH and re.search("[\u4e00-\u9fff]{4}", t)]


def generated_texts(n: int, seed: int) -> list[str]:
    docs = (generated_original(seed, i)[0] for i in range(n * 8))
    return [d.body for d in docs if d.lang == "zh" and len(d.body) < SHORT_MAX and set(d.body) & _FULL_WIDTH]


def corpus(texts: list[str], n: int, seed: int) -> pd.DataFrame:
    """n distinct originals (normalised-distinct, seeded choice) and their two reposts: id, text, cluster, variant."""
    seen, unique = set(), []
    for t in texts:
        key = normalize_text(t)
        if key not in seen:
            seen.add(key)
            unique.append(t)
    chosen = random.Random(seed).sample(unique, min(n, len(unique)))
    rows = []
    for i, text in enumerate(chosen):
        swapped = punct_swapped(text)
        spaced = _ASCII_MARK_AFTER_HAN.sub(r"\1 ", swapped)
        for variant, t in (("original", text), ("punct", swapped), ("punct_spaced", spaced)):
            rows.append({"id": len(rows) + 1, "text": t, "cluster": 3 * i + 1, "variant": variant})
    return pd.DataFrame(rows)


def score(docs: pd.DataFrame, out: str) -> dict[str, float]:
    """The share of each repost kind in the job's cluster of its original."""
    clusters = pd.read_parquet(os.path.join(out, "clusters"), columns=["id", "cluster_id"])
    df = docs.merge(clusters, on="id", validate="one_to_one")
    kept = df[df.variant == "original"].set_index("cluster")["cluster_id"]
    copies = df[df.variant != "original"]
    found = copies["cluster_id"].to_numpy() == kept.loc[copies["cluster"]].to_numpy()
    return {v: float(found[(copies.variant == v).to_numpy()].mean()) for v in sorted(copies.variant.unique())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=2000, help="originals (default 2000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--source", choices=("manpages", "generated"), default="manpages")
    p.add_argument("--write-only", action="store_true")
    p.add_argument("--score", help="score this job output instead of running the job")
    args, job_options = p.parse_known_args(argv)
    texts = man_page_texts() if args.source == "manpages" else generated_texts(args.n, args.seed)
    docs = corpus(texts, args.n, args.seed)
    os.makedirs(args.out, exist_ok=True)
    docs[["id", "text"]].to_parquet(os.path.join(args.out, "docs.parquet"), index=False)
    docs.drop(columns="text").to_parquet(os.path.join(args.out, "truth.parquet"), index=False)
    print(f"{len(docs)} pages ({len(docs) // 3} originals, {args.source}) -> {args.out}")
    if args.write_only:
        return 0
    out = args.score or os.path.join(args.out, "job")
    if not args.score:
        cmd = [sys.executable, "-m", "simhash_udf.job.cli", "--input", os.path.join(args.out, "docs.parquet"),
               "--output", out, "--overwrite", *[o for o in job_options if o != "--"]]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    for variant, share in score(docs, out).items():
        print(f"{variant}: {share:.4f} found")
    return 0


if __name__ == "__main__":
    sys.exit(main())
