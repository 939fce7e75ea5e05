"""Write an evaluation corpus with ground truth (simhash_udf/evaluation/corpus.py says what is in it).

    python scripts/make_corpus.py --out work/corpus100k --n 100000 [--seed 1] [--source generated|manpages]

Writes OUT/docs.parquet (id, text, lang, host), the job's input, and OUT/truth.parquet (id, cluster, variant).
`--source manpages` builds the originals from real prose (Debian's manpages-zh, installed if missing and we
are root, and the machine's English man pages) and applies the same edits.
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import shutil
import subprocess
import sys
import time

from simhash_udf.evaluation.corpus import make_corpus, write_corpus


def manpages_zh_installed() -> bool:
    """Debian's manpages-zh is installed (dpkg's word where there is one: other packages put a few Chinese
    pages under /usr/share/man/zh_CN too, 17 on a machine without it, which made a corpus of 550 Chinese
    pages in 18,195 instead of thousands)."""
    if shutil.which("dpkg-query"):
        status = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "manpages-zh"], capture_output=True, text=True)
        return status.returncode == 0 and status.stdout.endswith(" installed")
    return len(glob.glob("/usr/share/man/zh_CN/man*/*.gz")) >= 500


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--n", type=int, default=100_000, help="about this many documents (default 100000)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--source", choices=("generated", "manpages"), default="generated")
    args = p.parse_args(argv)
    if args.source == "manpages" and not manpages_zh_installed() and os.geteuid() == 0:
        for cmd in (["apt-get", "install", "-y", "-qq", "manpages-zh"], ["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "manpages-zh"]):  # a fresh machine's package list is empty
            if subprocess.run(cmd, capture_output=True).returncode == 0 and "install" in cmd:
                break
    if args.source == "manpages" and not manpages_zh_installed():
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
