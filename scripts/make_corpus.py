"""Write an evaluation corpus with ground truth (simhash_udf/evaluation/corpus.py says what is in it).

    python scripts/make_corpus.py --out work/corpus100k --n 100000 [--seed 1] [--source generated|manpages]

Writes OUT/docs.parquet (id, text, lang, host), the job's input, and OUT/truth.parquet (id, cluster, variant).
`--source manpages` builds the originals from real prose (Debian's manpages-zh, installed if missing and we
are root, and the machine's English man pages) and applies the same edits.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time

from simhash_udf.evaluation.benchmark import ensure_manpages_zh
from simhash_udf.evaluation.corpus import make_corpus, write_corpus


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--n", type=int, default=100_000, help="about this many documents (default 100000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--source", choices=("generated", "manpages"), default="generated")
    args = p.parse_args(argv)
    if args.source == "manpages" and not ensure_manpages_zh():
        print("warning: Debian's manpages-zh is not installed, so the corpus has few Chinese pages "
              "(apt-get install manpages-zh)", file=sys.stderr)
    start = time.perf_counter()
    rows = make_corpus(args.n, args.seed, args.source)
    docs, truth = write_corpus(rows, args.out)
    kinds = collections.Counter(r["variant"] for r in rows)
    langs = collections.Counter(r["lang"] for r in rows)
    lengths = collections.Counter("short" if len(r["text"]) < 140 else "long" if len(r["text"]) >= 500 else "medium"
                                  for r in rows)
    print(f"{len(rows)} documents in {time.perf_counter() - start:.1f} s -> {docs}, {truth}")
    print("languages:", dict(langs), " lengths:", dict(lengths))
    print("variants:", dict(sorted(kinds.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
