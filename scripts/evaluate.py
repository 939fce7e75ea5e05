"""Evaluate a dedup run against the text itself: Jaccard of character 5-gram shingles after the job's
normalisation is the oracle.

    python scripts/evaluate.py --input CORPUS --output JOB_OUTPUT_DIR [--truth group] [--id-col id --text-col text]

- recall: of all document pairs with shingle Jaccard >= 0.9 (found exactly, see below), the share the job put
  in one cluster;
- precision: of the pairs the job put in one cluster, the share with Jaccard >= 0.5 (pairs below count as
  false). A cluster of more than --max-cluster-sample members is judged on that many members drawn at
  random (seeded), so a cluster of 10^5 mirrors costs 10^4 pairs, not 5 x 10^9;
- with --truth COLUMN (e.g. the generator's `group`), the same against that column: a pair is true when
  both documents carry the same value.

Printed for long (both documents >= 500 characters) and short (both < 140) pairs, per language (zh when
at least 30% of the characters are Han, else en), and for all pairs.

The Jaccard >= 0.9 pairs come from prefix filtering (exact, no sampling): order each document's shingle set by
document frequency (rarest first); two sets with Jaccard >= t share one of the first |x| - ceil(t |x|) + 1
shingles of each, so an inverted index over those prefixes yields every such pair; each candidate is then
verified with its exact Jaccard.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from simhash_udf.text import HAN, normalize_text  # noqa: E402

SHINGLE = 5
RECALL_T = 0.9
PRECISION_T = 0.5
_P = np.uint64(1099511628211)  # FNV prime: the rolling polynomial hash of a shingle's code points
_HAN_CP = [(0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x3134F)]
assert HAN  # the same ranges as the tokenizer's


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: spreads the polynomial hash over all 64 bits."""
    h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def shingles(text: str | None, n: int = SHINGLE) -> np.ndarray:
    """Sorted distinct 64-bit hashes of the character n-grams of the normalised text (a text shorter than n
    is one shingle; an empty text has none)."""
    cps = np.frombuffer(normalize_text(text or "").encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    if len(cps) == 0:
        return np.zeros(0, np.uint64)
    m = max(len(cps) - n + 1, 1)
    h = np.zeros(m, np.uint64)
    with np.errstate(over="ignore"):
        for j in range(min(n, len(cps))):
            h = h * _P + cps[j : j + m]
        return np.unique(_mix(h))


def jaccard(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) == 0 and len(b) == 0:
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


def similar_pairs(sets: list[np.ndarray], threshold: float = RECALL_T) -> dict[tuple[int, int], float]:
    """Every pair (i < j) of documents with Jaccard >= threshold, with its Jaccard (prefix filtering)."""
    nonempty = [i for i, s in enumerate(sets) if len(s)]
    if not nonempty:
        return {}
    all_sh = np.concatenate([sets[i] for i in nonempty])
    uniq, df = np.unique(all_sh, return_counts=True)
    prefix_doc, prefix_tok = [], []
    for i in nonempty:
        s = sets[i]
        rank = df[np.searchsorted(uniq, s)].astype(np.float64) + (s.astype(np.float64) / 2.0**64)  # rarest first
        k = len(s) - int(np.ceil(threshold * len(s) - 1e-9)) + 1  # (the epsilon keeps float error from shortening it)
        prefix = s[np.argsort(rank, kind="stable")[:k]]
        prefix_tok.append(prefix)
        prefix_doc.append(np.full(len(prefix), i, dtype=np.int64))
    tok = np.concatenate(prefix_tok)
    doc = np.concatenate(prefix_doc)
    order = np.lexsort((doc, tok))
    tok, doc = tok[order], doc[order]
    starts = np.flatnonzero(np.r_[True, tok[1:] != tok[:-1]])
    ends = np.r_[starts[1:], len(tok)]
    candidates: set[tuple[int, int]] = set()
    for s, e in zip(starts, ends):
        if e - s > 1:
            members = doc[s:e]
            for x in range(len(members)):
                for y in range(x + 1, len(members)):
                    candidates.add((int(members[x]), int(members[y])))
    out = {}
    for i, j in candidates:
        a, b = sets[i], sets[j]
        if min(len(a), len(b)) < threshold * max(len(a), len(b)) - 1e-9:  # length filter: Jaccard <= |small| / |large|
            continue
        jac = jaccard(a, b)
        if jac >= threshold:
            out[(i, j)] = jac
    return out


def same_cluster_pairs(cluster_ids: np.ndarray, max_sample: int, seed: int = 0) -> list[tuple[int, int]]:
    """Pairs (i < j) of documents in one cluster; clusters larger than max_sample are sampled."""
    rng = np.random.default_rng(seed)
    members: dict = defaultdict(list)
    for i, c in enumerate(cluster_ids):
        members[c].append(i)
    pairs = []
    for group in members.values():
        if len(group) > max_sample:
            group = sorted(rng.choice(group, size=max_sample, replace=False).tolist())
        pairs.extend((group[x], group[y]) for x in range(len(group)) for y in range(x + 1, len(group)))
    return pairs


def language(text: str | None) -> str:
    t = text or ""
    han = sum(1 for ch in t if any(lo <= ord(ch) <= hi for lo, hi in _HAN_CP))
    return "zh" if t and han >= 0.3 * len(t) else "en"


def length_class(n: int) -> str:
    return "long" if n >= 500 else "short" if n < 140 else "medium"


def evaluate(docs: pd.DataFrame, cluster_of: dict, truth: str | None = None, max_sample: int = 200) -> pd.DataFrame:
    """docs: id, text (and the truth column); cluster_of: id -> cluster_id. One row per (length, language) slice."""
    ids = docs["id"].tolist()
    texts = docs["text"].tolist()
    missing = [i for i in ids if i not in cluster_of]
    if missing:
        raise SystemExit(f"{len(missing)} documents of the corpus are not in the job's clusters, e.g. {missing[:3]}")
    sets = [shingles(t) for t in texts]
    lengths = [len(t or "") for t in texts]
    langs = [language(t) for t in texts]
    oracle = similar_pairs(sets)
    clusters = np.array([cluster_of[i] for i in ids], dtype=object)
    judged = same_cluster_pairs(clusters, max_sample)
    groups = docs[truth].tolist() if truth else None
    truth_pairs = same_cluster_pairs(np.array(groups, dtype=object), 10**9) if truth else []

    def slices(i, j):
        a, b = length_class(lengths[i]), length_class(lengths[j])
        size = a if a == b else "mixed"
        lang = langs[i] if langs[i] == langs[j] else "mixed"
        return [("all", "all"), (size, "all"), (size, lang)]

    stats: dict = defaultdict(lambda: defaultdict(int))
    for (i, j) in oracle:
        for key in slices(i, j):
            stats[key]["oracle_pairs"] += 1
            stats[key]["oracle_found"] += int(clusters[i] == clusters[j])
    for i, j in judged:
        bad = jaccard(sets[i], sets[j]) < PRECISION_T
        for key in slices(i, j):
            stats[key]["cluster_pairs"] += 1
            stats[key]["cluster_pairs_below_0.5"] += int(bad)
            if truth:
                stats[key]["cluster_pairs_true"] += int(groups[i] == groups[j])
    for i, j in truth_pairs:
        for key in slices(i, j):
            stats[key]["truth_pairs"] += 1
            stats[key]["truth_found"] += int(clusters[i] == clusters[j])
    rows = []
    for (size, lang), s in sorted(stats.items()):
        row = {"length": size, "lang": lang, **s}
        row["recall"] = s["oracle_found"] / s["oracle_pairs"] if s["oracle_pairs"] else float("nan")
        row["precision"] = 1 - s["cluster_pairs_below_0.5"] / s["cluster_pairs"] if s["cluster_pairs"] else float("nan")
        row["f1"] = _f1(row["precision"], row["recall"])
        if truth:
            row["truth_recall"] = s["truth_found"] / s["truth_pairs"] if s["truth_pairs"] else float("nan")
            row["truth_precision"] = s["cluster_pairs_true"] / s["cluster_pairs"] if s["cluster_pairs"] else float("nan")
        rows.append(row)
    return pd.DataFrame(rows)


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p == p and r == r and p + r > 0 else float("nan")


def read_corpus(path: str) -> pd.DataFrame:
    if path.endswith((".jsonl", ".json")):
        return pd.read_json(path, lines=True)
    return pd.read_parquet(path)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True, help="the corpus the job read (Parquet file/dir or JSON Lines)")
    ap.add_argument("--output", required=True, help="the job's output directory (its clusters/ is read)")
    ap.add_argument("--id-col", default="id")
    ap.add_argument("--text-col", default="text")
    ap.add_argument("--truth", help="a column of the corpus holding the true cluster of each document")
    ap.add_argument("--max-cluster-sample", type=int, default=200)
    args = ap.parse_args(argv)
    cols = [args.id_col, args.text_col] + ([args.truth] if args.truth else [])
    docs = read_corpus(args.input)[cols].rename(columns={args.id_col: "id", args.text_col: "text"})
    clusters = pd.read_parquet(os.path.join(args.output, "clusters"), columns=["id", "cluster_id"])
    table = evaluate(docs, dict(zip(clusters["id"], clusters["cluster_id"])), args.truth, args.max_cluster_sample)
    show = ["length", "lang", "oracle_pairs", "recall", "cluster_pairs", "precision", "f1"]
    if args.truth:
        show += ["truth_pairs", "truth_recall", "truth_precision"]
    print(table[show].to_markdown(index=False, floatfmt=".3f") if _has_tabulate() else table[show].to_string(index=False))


def _has_tabulate() -> bool:
    try:
        import tabulate  # noqa: F401

        return True
    except ImportError:
        return False


if __name__ == "__main__":
    main()
