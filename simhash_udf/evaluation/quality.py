"""Quality of a dedup run against an oracle computed from the text itself.

Pure numpy, no Spark. The oracle's similarity is the Jaccard index of the sets of character 5-gram
shingles of the normalised texts (the job's own normalize_text; a non-empty text shorter than 5 characters
is one shingle; an empty text has none and is similar to nothing). Shingles are hashed to 64 bits.

Oracle pairs (all pairs with Jaccard >= t): MinHash LSH candidates (20 bands of 5 rows), a length filter and
exact Jaccard. No false pair; a pair with J >= 0.9 is missed with probability below 2e-8, and the cost is
linear in the shingles whatever the corpus (an exact prefix-filter join was tried first: on English text its
prefixes fill with common 5-grams and the candidates grow quadratically).

Metrics, per bucket of pairs (a pair belongs to the bucket of its shorter document: length and language):
  recall    = oracle pairs (J >= 0.9) whose documents the job put in one cluster / oracle pairs
  precision = 1 - same-cluster pairs with J < 0.5 / same-cluster pairs (pairs with 0.5 <= J < 0.9 are not
              counted as false: the oracle cannot tell whether they are copies)
  F1        = 2 P R / (P + R)
  resemble precision = 1 - same-cluster pairs that do not resemble / same-cluster pairs, where a pair resembles
              when J >= 0.5 or one page is at least 0.9 inside the other within 1.6 times its characters (the
              job's promise for a removed page and its kept page, unlike_pairs): with containment on, an
              original's framed copy and its edited copy are both like it and often not Jaccard-like each other
Same-cluster pairs: all pairs of a cluster of up to SAMPLE_ABOVE members; in a bigger cluster
PAIRS_PER_BIG_CLUSTER distinct pairs are drawn (seeded) and each stands for C(n, 2) / drawn pairs, so one
giant chained cluster weighs what its pairs weigh without enumerating them. With the generator's truth:
truth recall = truth pairs (same true cluster) that the job joined / truth pairs; truth precision = job
pairs in one true cluster / job pairs (same weighting).
Per removed page (the job's promise, unlike_kept): the removed pages not like the page kept for them (J < 0.5,
and neither 0.9 inside the other within 1.6 times its characters).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..core.sentence_keys import pairs_within_groups
from ..core.shingles import SHINGLE, _mix, jaccard, shingle_set  # noqa: F401  (the oracle's similarity)

SAMPLE_ABOVE = 64
PAIRS_PER_BIG_CLUSTER = SAMPLE_ABOVE * (SAMPLE_ABOVE - 1) // 2


LSH_BANDS, LSH_ROWS = 20, 5  # P(a pair with J >= 0.9 is no candidate) = (1 - 0.9^5)^20 < 2e-8
_CHUNK = 4_000_000  # shingles per MinHash pass


def minhash_signatures(sets: list[np.ndarray], n_hashes: int, seed: int = 1) -> np.ndarray:
    """(docs x n_hashes) uint64 MinHash signatures; hash k of a shingle is (h xor s_k) * a_k mod 2^64 with
    seeded random s_k and odd a_k (the shingle hashes are already mixed). Empty sets get all-ones rows."""
    rng = np.random.default_rng(seed)
    salt = rng.integers(0, 2**63, n_hashes, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    mult = rng.integers(0, 2**63, n_hashes, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    out = np.full((len(sets), n_hashes), np.iinfo(np.uint64).max, dtype=np.uint64)
    sizes = np.fromiter(map(len, sets), dtype=np.int64, count=len(sets))
    d = 0
    while d < len(sets):
        e, total = d, 0
        while e < len(sets) and (total == 0 or total + sizes[e] <= _CHUNK):
            total += sizes[e]
            e += 1
        docs = np.flatnonzero(sizes[d:e]) + d
        if len(docs):
            h = np.concatenate([sets[i] for i in docs])
            starts = np.r_[0, np.cumsum(sizes[docs])[:-1]]
            with np.errstate(over="ignore"):
                for k in range(n_hashes):
                    out[docs, k] = np.minimum.reduceat((h ^ salt[k]) * mult[k], starts)
        d = e
    return out


def similar_pairs(sets: list[np.ndarray], threshold: float,
                  bands: int = LSH_BANDS, rows: int = LSH_ROWS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i < j) of documents with Jaccard(sets[i], sets[j]) >= threshold, and its Jaccard.

    Candidates from MinHash LSH (bands x rows; documents agreeing on a whole band), then a length filter
    (J <= min/max size) and exact Jaccard: no false pair; a true pair with J >= 0.9 is missed with
    probability (1 - J^rows)^bands < 2e-8 (deterministic: fixed seeds). Lower thresholds are refused: the
    bands are tuned for 0.9 (at J = 0.5 a pair would be a candidate only half of the time)."""
    if threshold < 0.9:
        raise ValueError(f"threshold {threshold} is below 0.9, which the LSH bands are tuned for")
    n = len(sets)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    sizes = np.fromiter(map(len, sets), dtype=np.int64, count=n)
    live = np.flatnonzero(sizes > 0)
    if len(live) < 2:
        return empty
    sig = minhash_signatures(sets, bands * rows)[live]
    codes = []
    with np.errstate(over="ignore"):
        for b in range(bands):
            key = np.zeros(len(live), dtype=np.uint64)
            for r in range(rows):
                key = _mix(key * np.uint64(0x100000001B3) + sig[:, b * rows + r])
            order = np.argsort(key, kind="stable")
            k = key[order]
            bounds = np.flatnonzero(np.r_[True, k[1:] != k[:-1], True])
            starts, g_sizes = bounds[:-1], np.diff(bounds)
            multi = g_sizes > 1
            left, right = pairs_within_groups(starts[multi], g_sizes[multi])
            a, c = live[order[left]], live[order[right]]
            codes.append(np.minimum(a, c) * n + np.maximum(a, c))
    code = np.unique(np.concatenate(codes))
    a, b = code // n, code % n
    ok = np.minimum(sizes[a], sizes[b]) >= threshold * np.maximum(sizes[a], sizes[b]) - 1e-9
    a, b = a[ok], b[ok]
    jac = np.fromiter((jaccard(sets[i], sets[j]) for i, j in zip(a.tolist(), b.tolist())), dtype=np.float64, count=len(a))
    ok = jac >= threshold
    return a[ok], b[ok], jac[ok]


BOTTOM_K, BOTTOM_SHARED = 16, 6  # P(a pair with containment >= 0.9 is no candidate) < 1e-7


def _held(a: np.ndarray, b: np.ndarray) -> int:
    """How many of sorted a's hashes sorted b holds."""
    at = np.minimum(np.searchsorted(b, a), len(b) - 1)
    return int(np.count_nonzero(b[at] == a))


def contained_pairs(sets: list[np.ndarray], sizes, threshold: float,
                    max_ratio: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (i, j), i != j, where sets[i] is at least `threshold` inside sets[j] (|i & j| / |i|) and j
    has sizes[i] to max_ratio times sizes[i] (sizes: characters), and that containment.

    Candidates: j holds at least BOTTOM_SHARED of the BOTTOM_K least hashes of i (all of them when i has
    fewer, as far as `threshold` needs), j's size inside i's window; then exact containment: no false pair, a
    true pair at 0.9 is missed with probability below 1e-7. The size window is what keeps a shingle that
    most pages hold (an English " the ") from pairing every page with every other."""
    n = len(sets)
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    lens = np.fromiter(map(len, sets), dtype=np.int64, count=n)
    if n < 2 or not lens.any():
        return empty
    sizes = np.asarray(sizes, dtype=np.int64)
    all_sh = np.concatenate(sets)
    all_doc = np.repeat(np.arange(n), lens)
    take = np.minimum(lens, BOTTOM_K)
    b_sh = np.concatenate([s[:BOTTOM_K] for s in sets])  # the sets are sorted: their least hashes come first
    b_doc = np.repeat(np.arange(n), take)
    keys = np.unique(b_sh)
    at = np.minimum(np.searchsorted(keys, all_sh), len(keys) - 1)
    held = keys[at] == all_sh
    posting = (at[held].astype(np.int64) << 32) | sizes[all_doc[held]]  # (key, size), sorted
    order = np.argsort(posting, kind="stable")
    posting, p_doc = posting[order], all_doc[held][order]
    b_key = np.searchsorted(keys, b_sh).astype(np.int64) << 32
    lo = np.searchsorted(posting, b_key | sizes[b_doc], "left")
    hi = np.searchsorted(posting, b_key | np.floor(max_ratio * sizes[b_doc] + 1e-9).astype(np.int64), "right")
    count = hi - lo
    small = np.repeat(b_doc, count)
    large = p_doc[np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count) + np.repeat(lo, count)]
    code, shared = np.unique((small * n + large)[small != large], return_counts=True)
    i, j = code // n, code % n
    need = np.minimum(BOTTOM_SHARED, np.ceil(threshold * take[i] - 1e-9))
    i, j = i[shared >= need], j[shared >= need]
    inside = np.fromiter((_held(sets[a], sets[b]) / len(sets[a]) for a, b in zip(i.tolist(), j.tolist())),
                         dtype=np.float64, count=len(i))
    ok = inside >= threshold - 1e-12
    return i[ok], j[ok], inside[ok]


def cluster_pairs(labels: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (i < j) of documents with the same label and the weight of each: all pairs of a cluster of up to
    SAMPLE_ABOVE members (weight 1); PAIRS_PER_BIG_CLUSTER distinct drawn pairs of a bigger one (weight
    C(n, 2) / drawn)."""
    labels = np.asarray(labels)
    order = np.argsort(labels, kind="stable")
    sorted_labels = labels[order]
    bounds = np.flatnonzero(np.r_[True, sorted_labels[1:] != sorted_labels[:-1], True])
    starts, sizes = bounds[:-1], np.diff(bounds)
    small = (sizes > 1) & (sizes <= SAMPLE_ABOVE)
    left, right = pairs_within_groups(starts[small], sizes[small])
    parts_a, parts_b, parts_w = [order[left]], [order[right]], [np.ones(len(left))]
    rng = np.random.default_rng(seed)
    for start, n in zip(starts[sizes > SAMPLE_ABOVE].tolist(), sizes[sizes > SAMPLE_ABOVE].tolist()):
        members = np.sort(order[start : start + n])
        codes: set[int] = set()
        while len(codes) < PAIRS_PER_BIG_CLUSTER:
            i, j = rng.integers(0, n, 2)
            if i != j:
                codes.add(min(i, j) * n + max(i, j))
        code = np.array(sorted(codes))
        parts_a.append(members[code // n])
        parts_b.append(members[code % n])
        parts_w.append(np.full(len(code), n * (n - 1) / 2 / len(code)))
    a, b = np.concatenate(parts_a), np.concatenate(parts_b)
    return np.minimum(a, b), np.maximum(a, b), np.concatenate(parts_w)


def unlike_pairs(sets: list[np.ndarray], lengths, a, b, false_below: float = 0.5, inside: float = 0.9,
                 max_ratio: float = 1.6) -> np.ndarray:
    """Which pairs (a[p], b[p]) do not resemble each other as the job promises a removed page resembles its kept
    page: Jaccard below false_below, and neither at least `inside` inside the other within max_ratio of its
    characters. Two empty texts resemble; an empty and a non-empty one do not."""
    lengths = np.asarray(lengths, dtype=np.int64)
    out = np.zeros(len(a), dtype=bool)
    for p, (i, k) in enumerate(zip(np.asarray(a).tolist(), np.asarray(b).tolist())):
        sa, sb = sets[i], sets[k]
        if not len(sa) or not len(sb):
            out[p] = len(sa) != len(sb)
            continue
        common = _held(sa, sb)
        small, large = (i, k) if lengths[i] <= lengths[k] else (k, i)
        within = lengths[large] <= max_ratio * lengths[small]
        out[p] = (common / (len(sa) + len(sb) - common) < false_below
                  and not (within and common >= inside * len(sets[small]) - 1e-9))
    return out


def unlike_kept(sets: list[np.ndarray], lengths, kept: np.ndarray, false_below: float = 0.5,
                inside: float = 0.9, max_ratio: float = 1.6) -> np.ndarray:
    """Which pages were removed (kept[i] != i) for a kept page they do not resemble (unlike_pairs). This is
    the job's promise for each removed page, which the pair precision (every two pages of a cluster) is
    stricter than: two copies of one page that add different parts are both like it, not like each other."""
    kept = np.asarray(kept)
    removed = np.flatnonzero(kept != np.arange(len(kept)))
    out = np.zeros(len(kept), dtype=bool)
    out[removed] = unlike_pairs(sets, lengths, removed, kept[removed], false_below, inside, max_ratio)
    return out


def length_bucket(length: int) -> str:
    return "short" if length < 140 else "long" if length >= 500 else "medium"


def guess_lang(text: str | None) -> str:
    """zh when at least 30% of the letters are Han characters, else en (for corpora without a lang column)."""
    letters = [c for c in (text or "") if c.isalpha()]
    han = sum("\u3400" <= c <= "\u9fff" for c in letters)
    return "zh" if letters and han >= 0.3 * len(letters) else "en"


@dataclass
class Evaluation:
    rows: list[dict]  # one per bucket: see evaluate()

    def table(self) -> str:
        cols = ["bucket", "docs", "oracle_pairs", "recall", "job_pairs", "false_pairs", "precision", "f1",
                "unlike_pairs", "resemble_precision", "truth_recall", "truth_precision", "truth_f1"]
        lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in self.rows:
            lines.append("| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |")
        return "\n".join(lines)


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if v < 1e4 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _ratio(num: float, den: float) -> float:
    return num / den if den else float("nan")


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r > 0 else float("nan")


BUCKETS = ("all", "long", "medium", "short", "zh long", "en long", "zh short", "en short")


class Oracle:
    """Shingle sets and the pairs with J >= recall_threshold of one corpus; evaluates any number of runs."""

    def __init__(self, texts: list[str | None], langs: list[str] | None = None,
                 recall_threshold: float = 0.9, false_below: float = 0.5):
        self.sets = [shingle_set(t) for t in texts]
        self.lengths = np.fromiter((len(t or "") for t in texts), dtype=np.int64, count=len(texts))
        self.langs = np.array(langs if langs is not None else [guess_lang(t) for t in texts], dtype=object)
        self.recall_threshold, self.false_below = recall_threshold, false_below
        self.pos_a, self.pos_b, _ = similar_pairs(self.sets, recall_threshold)

    def _bucket_masks(self, a: np.ndarray, b: np.ndarray) -> dict[str, np.ndarray]:
        shorter = np.where(self.lengths[a] <= self.lengths[b], a, b)
        length = self.lengths[shorter]
        size = np.where(length < 140, "short", np.where(length >= 500, "long", "medium"))
        lang = self.langs[shorter]
        masks = {"all": np.ones(len(a), bool)}
        for name in BUCKETS[1:]:
            parts = name.split()
            m = size == parts[-1]
            if len(parts) == 2:
                m &= lang == parts[0]
            masks[name] = m
        return masks

    def evaluate(self, job_cluster: np.ndarray, truth_cluster: np.ndarray | None = None) -> Evaluation:
        """job_cluster[i]: the job's cluster label of document i (same order as the texts)."""
        job_cluster = np.asarray(job_cluster)
        ja, jb, jw = cluster_pairs(job_cluster)
        jac = np.fromiter((jaccard(self.sets[i], self.sets[j]) for i, j in zip(ja.tolist(), jb.tolist())),
                          dtype=np.float64, count=len(ja))
        false = jac < self.false_below
        unlike = false.copy()  # of the false pairs, those that do not resemble either (no containment within bounds)
        unlike[false] = unlike_pairs(self.sets, self.lengths, ja[false], jb[false], self.false_below)
        found = job_cluster[self.pos_a] == job_cluster[self.pos_b]
        pos_masks = self._bucket_masks(self.pos_a, self.pos_b)
        job_masks = self._bucket_masks(ja, jb)
        if truth_cluster is not None:
            truth_cluster = np.asarray(truth_cluster)
            ta, tb, tw = cluster_pairs(truth_cluster)
            t_found = job_cluster[ta] == job_cluster[tb]
            t_masks = self._bucket_masks(ta, tb)
            j_true = truth_cluster[ja] == truth_cluster[jb]
        doc_size = np.where(self.lengths < 140, "short", np.where(self.lengths >= 500, "long", "medium"))
        rows = []
        for name in BUCKETS:
            parts = name.split()
            in_bucket = np.ones(len(self.lengths), bool) if name == "all" else doc_size == parts[-1]
            if len(parts) == 2:
                in_bucket &= self.langs == parts[0]
            pm, jm = pos_masks[name], job_masks[name]
            recall = _ratio(found[pm].sum(), pm.sum())
            job_pairs = jw[jm].sum()
            precision = 1 - _ratio(jw[jm & false].sum(), job_pairs) if job_pairs else float("nan")
            row = {"bucket": name, "docs": int(in_bucket.sum()), "oracle_pairs": int(pm.sum()), "recall": recall,
                   "job_pairs": round(float(job_pairs)), "false_pairs": round(float(jw[jm & false].sum())),
                   "precision": precision, "f1": _f1(precision, recall),
                   "unlike_pairs": round(float(jw[jm & unlike].sum())),
                   "resemble_precision": 1 - _ratio(jw[jm & unlike].sum(), job_pairs) if job_pairs else float("nan")}
            if truth_cluster is not None:
                tm = t_masks[name]
                t_recall = _ratio((tw * t_found)[tm].sum(), tw[tm].sum())
                t_precision = _ratio(jw[jm & j_true].sum(), job_pairs)
                row.update(truth_recall=t_recall, truth_precision=t_precision, truth_f1=_f1(t_precision, t_recall))
            rows.append(row)
        return Evaluation(rows)


def found_by_variant(variant: np.ndarray, truth_cluster: np.ndarray, job_cluster: np.ndarray,
                     lengths: np.ndarray) -> list[dict]:
    """Truth recall per edit kind and length bucket: the share of the generator's copies of each variant that
    the job put in the cluster of their original (the member of their truth cluster with variant "original").
    Pages without an original in their truth cluster (hard negatives: their own clusters) are not copies and
    count in precision only. Rows: variant, length bucket, copies, found, share."""
    variant, truth_cluster, job_cluster = map(np.asarray, (variant, truth_cluster, job_cluster))
    originals = np.flatnonzero(variant == "original")
    job_of_original = dict(zip(truth_cluster[originals].tolist(), job_cluster[originals].tolist()))
    rows = {}
    for i in np.flatnonzero(variant != "original"):
        kept = job_of_original.get(int(truth_cluster[i]))
        if kept is None:
            continue  # a copy whose original is not in the corpus
        key = (str(variant[i]), length_bucket(int(lengths[i])))
        n, f = rows.get(key, (0, 0))
        rows[key] = (n + 1, f + int(job_cluster[i] == kept))
    return [{"variant": v, "length": b, "copies": n, "found": f, "share": f / n}
            for (v, b), (n, f) in sorted(rows.items())]


def negatives_joined(variant: np.ndarray, ids: np.ndarray, related: np.ndarray, job_cluster: np.ndarray) -> list[dict]:
    """Per kind of negative (the generator's rows with a `related` page they are no copy of): how many the job
    put in one cluster with their related page, i.e. one of the two was removed as a duplicate of the other
    (the count to keep at 0). Rows: variant, negatives (with their related page in the corpus), removed."""
    variant, ids, job_cluster = map(np.asarray, (variant, ids, job_cluster))
    related = np.asarray(related, dtype=float)  # NaN where a row has none
    cluster_of = dict(zip(ids.tolist(), job_cluster.tolist()))
    rows: dict[str, list[int]] = {}
    for i in np.flatnonzero(~np.isnan(related)):
        other = cluster_of.get(int(related[i]))
        if other is None:
            continue  # the related page is not in the corpus
        counts = rows.setdefault(str(variant[i]), [0, 0])
        counts[0] += 1
        counts[1] += int(job_cluster[i] == other)
    return [{"variant": v, "negatives": n, "removed": r} for v, (n, r) in sorted(rows.items())]
