"""Brute-force references the tests compare against (slow, obviously correct)."""
from __future__ import annotations

from collections import Counter

import numpy as np

from simhash_udf.core.fingerprint import mmh3_64


def loop_simhash(features, weight) -> int:
    """SimHash as the definition says it: for each feature and each of its hash's 64 bits, + or - its weight;
    bit i of the fingerprint set where the sum is positive (a signed 64-bit value)."""
    v = [0] * 64
    for t in features:
        h = mmh3_64(t)
        for i in range(64):
            v[i] += weight(t) if (h >> i) & 1 else -weight(t)
    fp = sum(1 << i for i in range(64) if v[i] > 0)
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def hamming(a: int, b: int) -> int:
    """Bits in which two 64-bit fingerprints (signed or not) differ."""
    return bin((a ^ b) & (2**64 - 1)).count("1")


class UnionFind:
    def __init__(self):
        self.parent = {}

    def find(self, a):
        self.parent.setdefault(a, a)
        while self.parent[a] != a:
            self.parent[a] = self.parent[self.parent[a]]
            a = self.parent[a]
        return a

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def components_of(nodes, edges) -> dict:
    """node -> smallest node of its component (union-find)."""
    uf = UnionFind()
    for n in nodes:
        uf.find(n)
    for a, b in edges:
        uf.union(a, b)
    return {n: uf.find(n) for n in nodes}


def roots_of(edges) -> dict:
    """node -> smallest node of its component, for every node of the edges that is not that smallest node (the
    connected-components search's rows)."""
    edges = list(edges)
    comp = components_of({n for e in edges for n in e}, edges)
    return {n: r for n, r in comp.items() if n != r}


def within_k_pairs(fps, k):
    """All index pairs (i < j) with popcount(fps[i] ^ fps[j]) <= k, by brute force over every pair."""
    arr = np.asarray(fps, dtype=np.int64).view(np.uint64)
    pairs = []
    for i in range(len(arr)):
        d = np.bitwise_count(arr[i] ^ arr[i + 1 :])
        pairs.extend((i, i + 1 + int(j)) for j in np.flatnonzero(d <= k))
    return pairs


def brute_force_clusters(ids, fps, k) -> dict:
    """id -> smallest id of its cluster, where a cluster is a component of the 'distance <= k' graph."""
    comp = components_of(range(len(ids)), within_k_pairs(fps, k))
    smallest = {}
    for i, c in comp.items():
        smallest[c] = min(smallest.get(c, ids[i]), ids[i])
    return {ids[i]: smallest[comp[i]] for i in range(len(ids))}


def planted_fingerprints(rng: np.random.Generator, n_centres: int, k: int, max_extra: int = 2) -> list[int]:
    """Random centres, each with a few variants at distances 0..k + max_extra (so pairs just inside and
    just outside k are both present), as int64."""
    out = []
    for _ in range(n_centres):
        c = int(rng.integers(0, 2**64, dtype=np.uint64))
        out.append(c)
        for _ in range(int(rng.integers(0, 4))):
            d = int(rng.integers(0, k + max_extra + 1))
            bits = rng.choice(64, size=d, replace=False)
            v = c
            for b in bits:
                v ^= 1 << int(b)
            out.append(v)
    return [v - (1 << 64) if v >= 1 << 63 else v for v in out]


def brute_force_star(ids, fps, k) -> dict:
    """id -> kept id in star mode: components of the 'distance <= k' graph; inside each, fingerprints in the
    order of their smallest id; each not yet taken becomes a centre and takes every untaken one within k."""
    clusters = brute_force_clusters(ids, fps, k)
    best = {}
    for i, fp in zip(ids, fps):
        best[fp] = min(best.get(fp, i), i)
    members: dict = {}
    for fp, i in best.items():
        members.setdefault(clusters[i], []).append(fp)
    kept_of_fp = {}
    for fps_in in members.values():
        fps_in.sort(key=lambda f: best[f])
        for f in fps_in:
            if f in kept_of_fp:
                continue
            for g in fps_in:
                if g not in kept_of_fp and hamming(f, g) <= k:
                    kept_of_fp[g] = best[f]
    return {i: kept_of_fp[fp] for i, fp in zip(ids, fps)}


def brute_force_short_pairs(ids, texts, fps, spec, candidates_too=False):
    """The short-text mode's verified pairs, from its definition (short_pairs.py), by brute force: index pairs
    of documents whose main fingerprints are then joined.

    Representatives: per main fingerprint, the short page (with a short fingerprint) of smallest id. Heads: per
    short fingerprint, the representative of smallest id. Candidates: each representative with its head, and
    every two heads within spec.k on the short fingerprint (all pairs compared). A candidate is a pair iff the
    shingle Jaccard of the two texts is >= spec.min_jaccard. candidates_too: also the candidate pairs."""
    from simhash_udf.core.shingles import jaccard, shingle_set
    from simhash_udf.core.short_text import short_fingerprints

    sfps, valid = short_fingerprints(texts, spec)
    rep = {}
    for i in range(len(ids)):
        if valid[i] and fps[i] is not None and (fps[i] not in rep or ids[i] < ids[rep[fps[i]]]):
            rep[fps[i]] = i
    head = {}
    for i in rep.values():
        s = int(sfps[i])
        if s not in head or ids[i] < ids[head[s]]:
            head[s] = i
    candidates = [(i, head[int(sfps[i])]) for i in rep.values() if head[int(sfps[i])] != i]
    heads = sorted(head.values())
    candidates += [(heads[a], heads[b]) for a, b in within_k_pairs([int(sfps[h]) for h in heads], spec.k)]
    if not candidates:
        return ([], 0, []) if candidates_too else ([], 0)
    verified = [(a, b) for a, b in candidates
                if jaccard(shingle_set(texts[a], spec.char_ngram), shingle_set(texts[b], spec.char_ngram))
                >= spec.min_jaccard]
    return (verified, len(candidates), candidates) if candidates_too else (verified, len(candidates))


def agreeing(a, b) -> int:
    """Bins on which two signatures (bytes) agree, one by one."""
    return sum(x == y for x, y in zip(a, b))


def usable_band(part) -> bool:
    """A band with at least min(4, bins) runs of equal adjacent bins (one byte a bin)."""
    return 1 + sum(part[i] != part[i + 1] for i in range(len(part) - 1)) >= min(4, len(part))


def band_pairs(nodes, rep, k, bands, bins) -> list:
    """Pairs of distinct fingerprints more than k bits apart whose signatures (bytes, one byte a bin) are equal
    on every bin of at least one usable band of `bands` bands of `bins` consecutive bins (usable_band): the
    band search's candidates."""
    out = []
    for a in range(len(nodes)):
        for b in range(a + 1, len(nodes)):
            if hamming(nodes[a], nodes[b]) <= k:
                continue
            sa, sb = rep[nodes[a]], rep[nodes[b]]
            if any(sa[i * bins:(i + 1) * bins] == sb[i * bins:(i + 1) * bins] and usable_band(sa[i * bins:(i + 1) * bins])
                   for i in range(bands)):
                out.append((nodes[a], nodes[b]))
    return out


def brute_force_verified(ids, fps, sigs, k, need, bands=None) -> dict:
    """id -> kept id under the verified cluster policy, from its definition (verified.py), page by page.

    Units: pages with the same (fingerprint, signature); a unit's best page is its smallest id. Each
    fingerprint's signature is that of its unit with the smallest best id. Edges: fingerprint pairs within
    k whose signatures agree on >= need bins (with bands: also the band_pairs that agree so). Components of
    the fingerprints; inside each, units by best
    id; the first unit left is a centre and takes every unit left whose signature agrees with its own on
    >= need bins."""
    best = {}
    for i, fp, s in zip(ids, fps, sigs):
        best[(fp, s)] = min(best.get((fp, s), i), i)
    rep = {}
    for (fp, s), _ in sorted(best.items(), key=lambda kv: kv[1]):
        rep.setdefault(fp, s)
    nodes = sorted(rep)
    edges = [(nodes[a], nodes[b]) for a, b in within_k_pairs(nodes, k) if agreeing(rep[nodes[a]], rep[nodes[b]]) >= need]
    if bands is not None:  # (bands, bins): the signature-band candidates, verified the same way
        edges += [(a, b) for a, b in band_pairs(nodes, rep, k, *bands) if agreeing(rep[a], rep[b]) >= need]
    comp = components_of(nodes, edges)
    members: dict = {}
    for unit in best:
        members.setdefault(comp[unit[0]], []).append(unit)
    kept = {}
    for units in members.values():
        units.sort(key=lambda u: best[u])
        left = list(units)
        while left:
            c = left[0]
            for u in list(left):
                if agreeing(u[1], c[1]) >= need:
                    kept[u] = best[c]
                    left.remove(u)
    return {i: kept[(fp, s)] for i, fp, s in zip(ids, fps, sigs)}


def planted_signatures(rng: np.random.Generator, fps, bins: int = 128) -> list[bytes]:
    """A signature per fingerprint: pages of one planted family share a random base signature of which a
    random share (0 to 60%) of bins is redrawn, so some pairs verify and some do not; equal fingerprints
    usually get equal signatures, sometimes not (the same fingerprint with another signature)."""
    base: dict = {}
    out = []
    for fp in fps:
        family = fp >> 40  # planted variants share their top bits with their centre most of the time
        sig = base.setdefault(family, rng.integers(0, 256, bins, dtype=np.uint8)).copy()
        redraw = rng.random(bins) < rng.choice([0.0, 0.0, 0.1, 0.3, 0.6])
        sig[redraw] = rng.integers(0, 256, int(redraw.sum()), dtype=np.uint8)
        out.append(sig.tobytes())
    return out


def brute_force_verified_short(ids, texts, fps, sigs, k, need, spec, extra_edges, bands=None) -> dict:
    """id -> kept id under the verified policy with the short-text mode, from the definition: units are
    pages with the same (fingerprint, signature, short text), the short text being the page's text when it
    is short and has a short fingerprint; edges: fingerprint pairs within k whose representative signatures
    agree on >= need bins (with bands: also the band_pairs that agree so), plus the short-text mode's verified
    pairs (extra_edges, index pairs); per
    component, greedy centres in id order, a unit joining a centre when both are short and their shingle
    Jaccard is >= spec.min_jaccard, or otherwise their signatures agree on >= need bins. Pages without a
    fingerprint are their own cluster."""
    from simhash_udf.core.shingles import jaccard, shingle_set
    from simhash_udf.core.short_text import short_fingerprints

    _, valid = short_fingerprints(texts, spec)
    unit = {i: (fps[i], sigs[i], texts[i] if valid[i] else None) for i in range(len(ids)) if fps[i] is not None}
    best = {}
    for i, u in unit.items():
        best[u] = min(best.get(u, ids[i]), ids[i])
    rep = {}
    for u, _ in sorted(best.items(), key=lambda kv: kv[1]):
        rep.setdefault(u[0], u[1])
    nodes = sorted(rep)
    edges = [(nodes[a], nodes[b]) for a, b in within_k_pairs(nodes, k) if agreeing(rep[nodes[a]], rep[nodes[b]]) >= need]
    if bands is not None:  # (bands, bins): the signature-band candidates, verified on their signatures
        edges += [(a, b) for a, b in band_pairs(nodes, rep, k, *bands) if agreeing(rep[a], rep[b]) >= need]
    edges += [(fps[a], fps[b]) for a, b in extra_edges]
    comp = components_of(nodes, edges)

    def verified(u, c):
        if u[2] is not None and c[2] is not None:
            return jaccard(shingle_set(u[2], spec.char_ngram), shingle_set(c[2], spec.char_ngram)) >= spec.min_jaccard
        return agreeing(u[1], c[1]) >= need

    members: dict = {}
    for u in best:
        members.setdefault(comp[u[0]], []).append(u)
    kept = {}
    for units in members.values():
        left = sorted(units, key=lambda u: best[u])
        while left:
            c = left[0]
            for u in [u for u in left if u == c or verified(u, c)]:
                kept[u] = best[c]
                left.remove(u)
    return {ids[i]: kept[unit[i]] if i in unit else ids[i] for i in range(len(ids))}


def shape_reference(rows, held=frozenset()):
    """cluster_shape by its definition, in plain Python ints (pandas would turn fingerprints with a missing one
    into floats): sizes of the groups of rows by cluster_id, and per cluster with duplicates whose kept page is
    among the rows, the largest distance of a duplicate's fingerprint to the kept page's. held: the (cluster_id,
    fingerprint) pairs of pages of earlier runs (--history): a duplicate of such a fingerprint in that cluster is
    an exact copy of an earlier member."""
    members = Counter(cid for _, cid, _, _ in rows)
    kept = {i: fp for i, _, dup, fp in rows if not dup}
    far: dict[int, int] = {}
    for _, cid, dup, fp in rows:
        if dup and fp is not None and kept.get(cid) is not None:
            far[cid] = max(far.get(cid, 0), hamming(fp, kept[cid]))
    # exact duplicates: per cluster and fingerprint, all duplicates if the kept page (among the rows) or a page of
    # an earlier run in the cluster has that fingerprint, else all but one
    groups = Counter((cid, fp) for _, cid, dup, fp in rows if dup and fp is not None)
    exact = sum(n if kept.get(cid) == fp or (cid, fp) in held else n - 1 for (cid, fp), n in groups.items())
    return dict(Counter(members.values())), dict(Counter(far.values())), exact


def check_kept_fp_and_shape(collected, histogram, stats, kept_elsewhere=lambda row: False, held=frozenset()):
    """The resolved clusters' rows (collected Spark rows) carry kept_fp, their kept page's fingerprint (None
    where kept_elsewhere(row): an earlier run's kept page), and the report's sizes and chaining made from it
    (histogram, stats.max_distance_to_kept) equal shape_reference on these rows (held: as there, the clusters
    as (cluster_id, kept_run_date))."""
    fp_of = {r.id: r.fingerprint for r in collected}
    assert [r.kept_fp for r in collected] == [None if kept_elsewhere(r) else fp_of[r.cluster_id] for r in collected]
    run = [r.asDict().get("kept_run_date") for r in collected]  # with --history, a cluster is (kept id, its run)
    sizes, chaining, exact = shape_reference([((r.id, d), (r.cluster_id, d), r.is_duplicate, r.fingerprint)
                                              for r, d in zip(collected, run)], held)
    assert histogram == sizes and stats.exact_duplicates == exact
    assert stats.max_distance_to_kept == {str(d): chaining[d] for d in sorted(chaining)}


def brute_force_related(ids, fps, clusters, n, distance) -> list[tuple]:
    """(id, related_id, distance, rank) by the definition: for each page, every other page outside its cluster
    within `distance` bits, ordered by (distance, related id), the first n ranked from 1."""
    out = []
    for i, (a, fa) in enumerate(zip(ids, fps)):
        found = sorted((hamming(fa, fb), b) for j, (b, fb) in enumerate(zip(ids, fps))
                       if j != i and (clusters is None or clusters[i] != clusters[j]) and hamming(fa, fb) <= distance)
        out.extend((a, b, d, r + 1) for r, (d, b) in enumerate(found[:n]))
    return sorted(out)
