"""Verified clusters, the pure part (numpy, no Spark): which candidate pairs become edges, and which page of
a component each page is a duplicate of.

Two pages are *verified-similar* when
  - both are short pages (short-text mode) and the exact Jaccard index of their character n-gram shingle
    sets is >= short_min_jaccard (the short-text check, shingles.py), or otherwise
  - the estimated Jaccard index of their feature sets, from their signatures (signature.py), is
    >= min_similarity (an integer comparison of agreeing bins: no rounding decides a pair), or
  - with containment on (min_containment > 0) and both pages' feature counts known: the smaller page's
    features are at least min_containment contained in the larger's, and the larger has at most
    max_size_ratio times as many features (`contained`). A page inside another page (a site's frame,
    comments, an ad around it) is not Jaccard-similar to its original when the added part is large; the size
    bound keeps a poem from being a duplicate of the anthology that holds it.

Edges: a candidate pair (within k bits and accepted in its first shared table, candidates.py) is an edge
only if the two fingerprints' signatures verify; a key group then emits a spanning forest of its verified
pairs. Clusters (`verified_centres`): inside a component, units (distinct fingerprint, signature and short
text) in keep order; the first is a centre, every unit verified-similar to it joins it; the first unit left
is the next centre, and so on (with containment on, the centre is instead the unit left whose take would join
the most units left: `verified_centres`). So every duplicate is verified-similar to the page kept for it,
however the component was chained together, and the result depends only on the units and their order.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .bands import FarFilter, SignatureBands
from .candidates import SMALL_GROUP, _small_group_pairs, bfs_forest, key_groups, pair_filter, spanning_forest_edges
from .shingles import SHINGLE, ShingleSets, pair_overlaps, shingle_sets
from .signature import SignatureSpec, agreeing_bins, agreement_similarity, min_agreeing_bins, similarity

BANDS = 10  # similarity bands of the report: [0, 0.1), ..., [0.9, 1.0]


@dataclass(frozen=True)
class VerifySpec:
    min_similarity: float = 0.8  # estimated Jaccard of the feature sets a pair needs (docs/quality.md)
    signature: SignatureSpec = field(default_factory=SignatureSpec)
    short_min_jaccard: float = 0.7  # exact shingle Jaccard two short pages need
    short_ngram: int = 5
    min_containment: float = 0.9  # estimated share of the smaller page's features in the larger's; 0 = off
    max_size_ratio: float = 1.6  # a contained pair's larger page has at most this many times the characters

    @property
    def need(self) -> int:
        """Agreeing bins a verified pair needs."""
        return min_agreeing_bins(self.min_similarity, self.signature)

    def describe(self) -> dict:
        return {"min_similarity": self.min_similarity, "signature": self.signature.version(),
                "agreeing_bins_needed": self.need, "bins": self.signature.bins,
                "short_min_jaccard": self.short_min_jaccard, "min_containment": self.min_containment,
                "max_size_ratio": self.max_size_ratio}

    @property
    def containment(self) -> bool:
        return self.min_containment > 0


def containment_estimate(jaccard_index, n_a, n_b) -> np.ndarray:
    """The share of the smaller set inside the larger, from their Jaccard index J and sizes: |A & B| =
    J (|A| + |B|) / (1 + J), divided by the smaller size (1 for two empty sets)."""
    j = np.asarray(jaccard_index, dtype=np.float64)
    n_a, n_b = np.asarray(n_a, dtype=np.float64), np.asarray(n_b, dtype=np.float64)
    small = np.minimum(n_a, n_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(small > 0, np.minimum(j * (n_a + n_b) / ((1 + j) * np.maximum(small, 1)), 1.0), 1.0)


def contained(agree: np.ndarray, n_a, n_b, spec: VerifySpec, size_a=None, size_b=None) -> np.ndarray:
    """Whether pairs with `agree` agreeing signature bins and feature counts n_a, n_b (<= 0: not known) are
    contained within the size bound. containment_estimate(J) >= C  <=>  J >= C s / (s + l - C s) (s, l: the
    smaller and larger count): compared on J so that a tie is decided the same way everywhere. The size bound
    is on size_a, size_b (the pages' characters) when given (<= 0: not known, not contained), otherwise on the
    feature counts: a frame of menu words or a comment adds more distinct words per character than an article
    has, so a copy's feature count grows faster than its text."""
    n_a, n_b = np.asarray(n_a, dtype=np.float64), np.asarray(n_b, dtype=np.float64)
    small, large = np.minimum(n_a, n_b), np.maximum(n_a, n_b)
    if not spec.containment:
        return np.zeros(np.shape(agree), dtype=bool)
    if size_a is not None and size_b is not None:
        size_a, size_b = np.asarray(size_a, dtype=np.float64), np.asarray(size_b, dtype=np.float64)
        size_small, size_large = np.minimum(size_a, size_b), np.maximum(size_a, size_b)
    else:
        size_small, size_large = small, large
    c = spec.min_containment
    with np.errstate(divide="ignore", invalid="ignore"):
        j_need = c * small / (small + large - c * small)
    chance = 2.0 ** -spec.signature.bits
    j_est = (np.asarray(agree, dtype=np.float64) / spec.signature.bins - chance) / (1 - chance)
    return ((small > 0) & (size_small > 0) & (size_large <= spec.max_size_ratio * size_small)
            & (j_est >= j_need - 1e-9))


def pairs_verify(sig_a: np.ndarray, sig_b: np.ndarray, n_a=None, n_b=None, spec: VerifySpec | None = None,
                 size_a=None, size_b=None) -> tuple[np.ndarray, np.ndarray]:
    """(verified, by_containment) of pairs of signatures (rows x bins, or one row against many): verified-
    similar, or (feature counts given) contained within the size bound (on size_a, size_b, the pages'
    characters, when given: `contained`); by_containment: verified only by containment."""
    return agreement_verifies(agreeing_bins(sig_a, sig_b), n_a, n_b, spec, size_a, size_b)


def agreement_verifies(agree: np.ndarray, n_a=None, n_b=None, spec: VerifySpec | None = None,
                       size_a=None, size_b=None) -> tuple[np.ndarray, np.ndarray]:
    """pairs_verify of pairs whose agreeing bins are known (agree: any shape the other arguments broadcast
    to), so that a component's units are compared once."""
    similar = agree >= spec.need
    if n_a is None or n_b is None or not spec.containment:
        return similar, np.zeros(np.shape(similar), dtype=bool)
    by_containment = ~similar & contained(agree, n_a, n_b, spec, size_a, size_b)
    return similar | by_containment, by_containment


# A pair joined by containment whose texts share at least this Jaccard index of their character 5-grams resembles
# its kept page although the smaller is not min_containment inside the larger: below it, the oracle of
# docs/quality.md (evaluation/quality.py) calls two pages no copy.
TEXT_MIN_JACCARD = 0.5


def texts_confirm(texts_a: list[str | None], texts_b: list[str | None], spec: VerifySpec,
                  similar_too: bool = True) -> np.ndarray:
    """Whether each pair (a_i, b_i) of texts, joined by containment on their signatures' estimate, holds on the
    texts themselves: the smaller text's (fewer characters; of two equal, fewer shingles) character 5-gram set is
    at least spec.min_containment inside the larger's, which has at most spec.max_size_ratio times its
    characters; or (similar_too) the two sets' Jaccard index is at least TEXT_MIN_JACCARD. The estimate's error at
    128 bins, multiplied by the size ratio, lets pages through that are ~0.85 inside; the texts are exact."""
    chars_a = np.fromiter((len(t or "") for t in texts_a), dtype=np.int64, count=len(texts_a))
    chars_b = np.fromiter((len(t or "") for t in texts_b), dtype=np.int64, count=len(texts_b))
    if not similar_too:  # only the pairs within the size bound can hold: the others' shingles are not needed
        within = np.flatnonzero(np.maximum(chars_a, chars_b) <= spec.max_size_ratio * np.minimum(chars_a, chars_b))
        holds = np.zeros(len(texts_a), dtype=bool)
        if len(within) < len(texts_a):
            holds[within] = texts_confirm([texts_a[i] for i in within], [texts_b[i] for i in within], spec, False)
            return holds
    shared, size_a, size_b = pair_overlaps(texts_a, texts_b, SHINGLE)
    a_smaller = (chars_a < chars_b) | ((chars_a == chars_b) & (size_a <= size_b))
    small_set = np.where(a_smaller, size_a, size_b)
    small_chars, large_chars = np.minimum(chars_a, chars_b), np.maximum(chars_a, chars_b)
    inside = ((small_set > 0) & (large_chars <= spec.max_size_ratio * small_chars)
              & (shared >= spec.min_containment * small_set - 1e-9))
    if not similar_too:
        return inside
    union = size_a + size_b - shared
    similar = (union > 0) & (size_a > 0) & (size_b > 0) & (shared >= TEXT_MIN_JACCARD * union - 1e-9)
    return inside | similar


def first_holding_targets(ids: list, kept: list, alone: list[bool], kept_rank: list, holds) -> list[int]:
    """Which page each page alone joins (containment_check.joined_on_texts): of the proposals i (page ids[i]
    with target kept[i], a cluster's kept page, or alone[i] a page alone; kept_rank[i] the target's keep rank)
    whose texts hold, the indices of the first of each page by (alone, kept_rank, kept), leaving out targets that
    are themselves pages with a proposal that holds (they move, or may: a page that moves receives none). A rank
    is a tuple whose fields may be None, ordered first (as Spark orders a struct's nulls)."""
    movers = {ids[i] for i in range(len(ids)) if holds[i]}
    best: dict = {}
    for i in range(len(ids)):
        if holds[i] and kept[i] not in movers:
            order = (bool(alone[i]), rank_key(kept_rank[i]), kept[i])
            if ids[i] not in best or order < best[ids[i]][0]:
                best[ids[i]] = (order, i)
    return sorted(i for _, i in best.values())


def rank_fields(rank) -> tuple:
    """A keep rank's field values in order: from a Row or tuple, or from the dict pyarrow's to_pylist makes of a
    struct (whose iteration gives the field names, not their values)."""
    return tuple(rank.values()) if isinstance(rank, dict) else tuple(rank)


def rank_key(rank) -> tuple:
    """A keep rank (a struct's fields: rank_fields) as a tuple Python orders as Spark orders the struct: nulls
    first."""
    return tuple((v is not None, v if v is not None else 0) for v in rank_fields(rank))


PROPOSAL_FIELDS = ("id", "kept", "kept_fp_b", "kept_rank", "alone", "sig_a", "sig_b")


def lone_proposal_rows(rows: list[dict], pairs) -> list[tuple]:
    """containment_check.lone_proposals on the driver: rows are rows_to_compare's (dicts with id, fingerprint,
    cluster_id, is_duplicate, kept_fp, signature, rank, multi, in_pairs), pairs the (src, dst) fingerprints that
    share a key. Each page alone (not multi) whose fingerprint shares a key with a page of a cluster of two or
    more is proposed that cluster's kept page, and with a page alone that precedes it in keep order that page:
    the distinct tuples (PROPOSAL_FIELDS), by id, kept and alone."""
    partners: dict = {}
    for src, dst in pairs:
        partners.setdefault(src, set()).add(dst)
        partners.setdefault(dst, set()).add(src)
    touched = [r for r in rows if r["in_pairs"]]
    lone: dict = {}
    in_cluster: dict = {}
    for r in touched:
        if r["multi"]:
            in_cluster.setdefault(r["fingerprint"], []).append((r["cluster_id"], r["kept_fp"]))
        else:
            lone.setdefault(r["fingerprint"], []).append(r)
    kept = {r["id"]: r for r in rows if r["multi"] and not r["is_duplicate"]}
    out = set()
    for fp_a, pages in lone.items():
        for fp_b in partners.get(fp_a, ()):
            for a in pages:
                for target, target_fp in in_cluster.get(fp_b, ()):
                    k = kept.get(target)
                    if k is not None:
                        out.add((a["id"], target, target_fp, rank_fields(k["rank"]), False, a["signature"],
                                 k["signature"]))
                for b in lone.get(fp_b, ()):
                    if (rank_key(b["rank"]), b["id"]) < (rank_key(a["rank"]), a["id"]):
                        out.add((a["id"], b["id"], fp_b, rank_fields(b["rank"]), True, a["signature"], b["signature"]))
    return sorted(out, key=lambda p: (p[0], p[1], p[4]))


def band_of(sim: np.ndarray) -> np.ndarray:
    return np.minimum((np.asarray(sim) * BANDS).astype(np.int64), BANDS - 1)


@dataclass
class VerifiedGroups:
    src: np.ndarray  # forest edges (int64 fingerprints)
    dst: np.ndarray
    verified_by_band: np.ndarray  # accepted pairs by similarity band, verified ones
    rejected_by_band: np.ndarray  # and the rejected ones


def _check(sigs, i, j, spec: VerifySpec | None, verified: np.ndarray, rejected: np.ndarray) -> np.ndarray:
    """Which accepted pairs (i, j) verify; their similarity bands are added to verified / rejected."""
    if spec is None or sigs is None:  # no signatures: every accepted pair is an edge
        verified[BANDS - 1] += len(i)
        return np.ones(len(i), dtype=bool)
    ok = agreeing_bins(sigs[i], sigs[j]) >= spec.need
    band = band_of(similarity(sigs[i], sigs[j], spec.signature.bits))
    verified += np.bincount(band[ok], minlength=BANDS)
    rejected += np.bincount(band[~ok], minlength=BANDS)
    return ok


def verify_groups(members: np.ndarray, sigs: np.ndarray | None, offsets: np.ndarray, tables: np.ndarray,
                  plan, spec: VerifySpec | None, small_group: int = SMALL_GROUP) -> VerifiedGroups:
    """Verified spanning-forest edges of many key groups. members: fingerprints (int64/uint64) of all groups
    one after another, sigs: their signatures (rows x bins) or None (then every accepted pair verifies, for
    runs without signatures); group g owns offsets[g]:offsets[g+1] and is of table tables[g]. Small groups
    compare all pairs at once; a large one is counted by blocks of rows and its forest found by breadth-first
    search, so a hot key costs O(n) memory and at most n - 1 edges."""
    u, tables, starts, sizes = key_groups(members, offsets, tables)
    filt = pair_filter(plan)
    verified, rejected = np.zeros(BANDS, np.int64), np.zeros(BANDS, np.int64)
    small = (sizes >= 2) & (sizes <= small_group)
    i, j = _small_group_pairs(u, starts[small], sizes[small], tables[small], filt)
    ok = _check(sigs, i, j, spec, verified, rejected)
    fi, fj = spanning_forest_edges(i[ok], j[ok])
    src, dst = [u[fi]], [u[fj]]
    for g in np.flatnonzero(sizes > small_group):
        s, e = int(starts[g]), int(starts[g] + sizes[g])
        fps, gs = u[s:e], None if sigs is None else sigs[s:e]
        for a in range(0, e - s, 512):  # the bands of every accepted pair, by blocks of rows
            b = min(a + 512, e - s)
            ii, jj = np.nonzero(np.arange(a, b)[:, None] < np.arange(e - s)[None, :])
            ii += a
            acc = filt.accept(fps[ii] ^ fps[jj], int(tables[g]))
            _check(gs, ii[acc], jj[acc], spec, verified, rejected)
        verify = None
        if spec is not None and gs is not None:
            verify = lambda x, idx, gs=gs: agreeing_bins(gs[idx], gs[x]) >= spec.need  # noqa: E731
        bi, bj = bfs_forest(fps, int(tables[g]), filt, verify)
        src.append(fps[bi])
        dst.append(fps[bj])
    return VerifiedGroups(np.concatenate(src).view(np.int64), np.concatenate(dst).view(np.int64), verified, rejected)


def verify_band_groups(members: np.ndarray, sigs: np.ndarray, offsets: np.ndarray, group_bands: np.ndarray,
                       k: int, bands: SignatureBands, spec: VerifySpec, small_group: int = SMALL_GROUP) -> VerifiedGroups:
    """Verified spanning-forest edges of many band key groups (bands.py), the second pass: group g (members
    offsets[g]:offsets[g+1], signatures sigs, rows x bins) holds fingerprints whose signatures share band
    group_bands[g]. A pair is accepted in the first band it shares if it is more than k bits apart, and is
    counted (verified or rejected, by similarity band) there; every verified pair may be an edge, so a
    group emits a spanning forest of its verified pairs (large groups by breadth-first search)."""
    u, group_bands, starts, sizes = key_groups(members, offsets, group_bands)
    far = FarFilter(k)
    verified, rejected = np.zeros(BANDS, np.int64), np.zeros(BANDS, np.int64)

    def accepted_checked(i, j, band):
        acc = bands.first_shared(sigs[i], sigs[j]) == band
        ok = np.zeros(len(i), dtype=bool)
        ok[acc] = _check(sigs, i[acc], j[acc], spec, verified, rejected)
        return ok

    small = (sizes >= 2) & (sizes <= small_group)
    i, j = _small_group_pairs(u, starts[small], sizes[small], group_bands[small], far)
    t = np.repeat(group_bands, sizes)[i] if len(i) else np.zeros(0, np.int64)
    ok = accepted_checked(i, j, t)
    fi, fj = spanning_forest_edges(i[ok], j[ok])
    src, dst = [u[fi]], [u[fj]]
    for g in np.flatnonzero(sizes > small_group):
        s, e = int(starts[g]), int(starts[g] + sizes[g])
        for a in range(s, e, 512):  # every accepted pair counted, by blocks of rows
            b = min(a + 512, e)
            ii, jj = np.nonzero(np.arange(a, b)[:, None] < np.arange(s, e)[None, :])
            ii, jj = ii + a, jj + s
            keep = far.accept(u[ii] ^ u[jj])
            accepted_checked(ii[keep], jj[keep], int(group_bands[g]))
        gs = sigs[s:e]
        bi, bj = bfs_forest(u[s:e], 0, far, lambda x, idx, gs=gs: agreeing_bins(gs[idx], gs[x]) >= spec.need)
        src.append(u[s:e][bi])
        dst.append(u[s:e][bj])
    return VerifiedGroups(np.concatenate(src).view(np.int64), np.concatenate(dst).view(np.int64), verified, rejected)


def verify_band_pairs(sig_a: np.ndarray, sig_b: np.ndarray, found_in: np.ndarray, bands: SignatureBands,
                      spec: VerifySpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The far pairs of small band groups (bands.band_pairs_and_members), each once with its two signatures
    (rows x bins) and the bands of the small groups it was met in: found_in (pairs x 2) uint64, bit b of
    column b // 64 set for band b (a Spark bit_or, which needs no array per pair). A pair is accepted when
    its first shared band is one of them: that band's group holds it (its key is made from the same bytes),
    so the pair is counted once, as verify_band_groups counts it there; when that group was large,
    verify_band_groups counts it instead. Returns (verified, verified_by_band, rejected_by_band): which pairs
    verify (accepted and verified-similar), and the accepted pairs by similarity band."""
    n = len(sig_a)
    first = bands.first_shared(sig_a, sig_b)
    word = np.asarray(found_in, dtype=np.uint64).reshape(n, 2)[np.arange(n), np.maximum(first, 0) // 64]
    accepted = (first >= 0) & ((word >> (np.maximum(first, 0) % 64).astype(np.uint64)) & np.uint64(1)).astype(bool)
    verified_by_band, rejected_by_band = np.zeros(BANDS, np.int64), np.zeros(BANDS, np.int64)
    idx = np.flatnonzero(accepted)
    ok = np.zeros(n, dtype=bool)
    m = len(idx)
    ok[idx] = _check(np.concatenate([sig_a[idx], sig_b[idx]]), np.arange(m), np.arange(m, 2 * m), spec,
                     verified_by_band, rejected_by_band)
    return ok, verified_by_band, rejected_by_band


RESEMBLE = 0.5  # estimated Jaccard two pages joined to one centre by containment need at least, if they do not verify
FRAME_PROSE = 1.1  # a page in a frame has at most this many times the prose letters of the page (adds_frame)
MEDOID_MAX = 256  # open units of a component up to which, with containment on, the centre is the unit joining the most


def _agreement(sigs: np.ndarray) -> np.ndarray:
    """(units x units) the agreeing bins of each two units' signatures (the diagonal: every bin)."""
    return np.stack([agreeing_bins(sigs, s) for s in sigs]) if len(sigs) else np.zeros((0, 0), dtype=np.int64)


def _column(values, at=None):
    """values as a column (units x 1) for comparing every two units, or values[at]; None stays None."""
    if values is None:
        return None
    values = np.asarray(values)
    return values[:, None] if at is None else values[at]


def _verify_all(agree: np.ndarray, counts, sizes, spec: VerifySpec) -> np.ndarray:
    """(units x units) whether each two units of one component verify (similar, or contained within the bound;
    the diagonal false), from their agreeing bins (_agreement)."""
    out = agreement_verifies(agree, _column(counts), counts, spec, _column(sizes), sizes)[0].copy()
    np.fill_diagonal(out, False)
    return out


def adds_frame(prose: np.ndarray, sizes, a, b) -> np.ndarray:
    """Whether the larger of units a and b (by sizes, the characters) is the smaller in a site frame: the
    smaller has prose (prose: units x (letters, lead, tail), sentence_keys.page_prose), the larger at most
    FRAME_PROSE times its prose letters and more text both before its first prose sentence and after its
    last. A frame is short lines above and below a page; a run of a page's paragraphs that holds one of them
    adds prose, or adds on one side only. False where either is not known (< 0)."""
    a, b = np.asarray(a), np.asarray(b)
    a_larger = np.asarray(sizes[a]) >= np.asarray(sizes[b])
    small, large = prose[np.where(a_larger, b, a)], prose[np.where(a_larger, a, b)]
    return ((np.minimum(small, large) >= 0).all(axis=-1) & (small[..., 0] > 0)
            & (large[..., 0] <= FRAME_PROSE * small[..., 0]) & (large[..., 1] > small[..., 1])
            & (large[..., 2] > small[..., 2]))


def _resembling(sigs, counts, sizes, spec: VerifySpec, taken: np.ndarray, u: int) -> np.ndarray:
    """Whether unit u resembles each of `taken`: verifies with it, or has an estimated Jaccard of at least
    RESEMBLE with it."""
    agree = agreeing_bins(sigs[taken], sigs[u])
    ok = agreement_verifies(agree, counts[taken], counts[u], spec, _column(sizes, taken), _column(sizes, u))[0]
    return ok | (agreement_similarity(agree, spec.signature) >= RESEMBLE)


def _agreeing(sigs, counts, sizes, spec: VerifySpec, c: int, candidates: np.ndarray, prose=None,
              resemble: np.ndarray | None = None) -> np.ndarray:
    """Which of `candidates` (units contained in centre c or holding it, the closest to it first) may join
    it: each in turn joins when it resembles (verifies with, or has an estimated Jaccard of at least RESEMBLE
    with) c and every candidate joined before it. Two runs of one page's paragraphs are both inside that page
    and need not resemble each other: a cluster of the page would make them duplicates of each other through
    it. A candidate is not compared with the units similar to c (those resemble c closely; comparing them too
    lost more framed copies than it saved false pairs on the man-page corpus, docs/quality.md). With the
    units' prose (and sizes) known, a candidate that is c in a site's frame or c without its frame (adds_frame)
    joins without the check, and later candidates are not compared with it: a frame of menu words makes a
    copy's word Jaccard with a commented copy of the same page 0.3-0.5, as low as two runs of paragraphs
    around one, while the runs add prose or add on one side only. resemble: the units' _resembling matrix
    (units x units) when it is known, so that a take simulated many times compares no signatures."""
    taken = [int(c)]
    keep = np.zeros(len(candidates), dtype=bool)
    framed = (adds_frame(prose, sizes, candidates, np.full(len(candidates), c)) if prose is not None and sizes is not None
              else np.zeros(len(candidates), dtype=bool))
    for x, u in enumerate(candidates):
        if framed[x]:
            keep[x] = True
            continue
        t = np.array(taken)
        ok = resemble[u, t] if resemble is not None else _resembling(sigs, counts, sizes, spec, t, u)
        if ok.all():
            taken.append(int(u))
            keep[x] = True
    return keep


def _reach_and_resemble(agree: np.ndarray, counts, sizes, is_short: np.ndarray,
                        spec: VerifySpec) -> tuple[np.ndarray, np.ndarray]:
    """(reach, resemble) of one component's units (units x units) from their agreeing bins (_agreement):
    reach[c, u], whether c's take may join u (they verify, or both are short: their shingles decide), the bound
    _most_joined tries units by; resemble, _resembling of every two units, for _agreeing."""
    links = _verify_all(agree, counts, sizes, spec)
    resemble = links | (agreement_similarity(agree, spec.signature) >= RESEMBLE)
    reach = links | (is_short[:, None] & is_short[None, :])
    np.fill_diagonal(reach, False)
    return reach, resemble


def _most_joined(open_: np.ndarray, reach: np.ndarray, joins) -> int:
    """The position in open_ of the unit whose take would join the most of the other open units (joins(c,
    others): the mask of others c's take joins), the first in keep order among equals. reach (units x units)
    bounds a take from above (reach[c, u]: c may join u): units are tried by that bound, the highest first,
    until none left could join more than the best found, so a round usually simulates one or two takes."""
    bound = reach[np.ix_(open_, open_)].sum(axis=1)
    best, best_at = -1, 0
    for x in np.argsort(-bound, kind="stable"):
        if bound[x] < best or (bound[x] == best and x > best_at):
            continue
        got = int(joins(int(open_[x]), np.delete(open_, x)).sum())
        if got > best or (got == best and x < best_at):
            best, best_at = got, int(x)
    return best_at


def _short_near(shingles: ShingleSets, a: np.ndarray, b: int, min_jaccard: float) -> np.ndarray:
    """Whether each short unit a (indices among the short units) has a shingle Jaccard index >= min_jaccard
    with the short unit b. A Jaccard index is at most the smaller set's size over the larger's: the pairs below
    the threshold by their sizes alone (with a margin for rounding) are not compared."""
    near = np.zeros(len(a), dtype=bool)
    size_a, size_b = shingles.counts[a], shingles.counts[b]
    may = np.minimum(size_a, size_b) >= (min_jaccard - 1e-9) * np.maximum(size_a, size_b)
    if may.any():
        near[may] = shingles.jaccard(a[may], np.full(int(may.sum()), b)) >= min_jaccard
    return near


def verified_centres(sigs: np.ndarray | None, short_texts: list[str | None] | None, spec: VerifySpec | None,
                     fixed: int = 0, n: int | None = None, counts: np.ndarray | None = None,
                     sizes: np.ndarray | None = None, prose: np.ndarray | None = None) -> np.ndarray:
    """The centre (an index) of each unit of one component, units in keep order (best first).

    The first `fixed` units are centres given in advance (the kept pages of earlier runs' clusters, with
    --history): they take what they verify first, in their order, and are never taken themselves. Then the
    first unit left is a centre and takes every unit left that is verified-similar to it, and so on.
    sigs: (units x bins) or None (no signatures: every unit verifies, as in transitive mode); short_texts:
    each unit's short text (None for a page that is not short), or None when the mode is off; n: the number
    of units when neither is given; counts: each unit's feature count (<= 0: not known), for containment
    (None: similarity alone), sizes: its characters, for containment's size bound (None: on the counts), prose:
    its prose (units x (letters, lead, tail), sentence_keys.page_prose; < 0 or None: not known), for _agreeing.

    With containment (spec.containment and counts given), two rules more. A unit only contained in the centre
    or holding it joins when it resembles every unit joined to the centre by containment before it (_agreeing):
    pages that do not resemble each other are not made duplicates of each other through a third that holds both
    (or that both hold); with prose given, except a unit that is the centre in a site's frame, or the centre
    without it (adds_frame). And the centre is not the first unit left but the one whose take, by these rules,
    would join the most units left (the first in keep order among equals; a component of more than MEDOID_MAX
    units left: the first): an original is inside each of its framed, commented and ad copies and similar to its
    edited ones, while a copy (framed, or cut short) is often not within the bound of another copy; and a unit
    that verifies with many units that would not join it (runs of paragraphs that do not resemble each other)
    is a worse centre than one that keeps them together."""
    n = len(sigs) if sigs is not None else len(short_texts) if short_texts is not None else n
    if spec is None or sigs is None:  # everyone joins the first centre
        centre = np.zeros(n, dtype=np.int64)
        centre[:fixed] = np.arange(fixed)
        return centre
    is_short = np.zeros(n, dtype=bool)
    if short_texts is not None:  # the short units' shingle sets, made in one batch (shingle_sets)
        is_short = np.array([t is not None for t in short_texts], dtype=bool)
        shingles = ShingleSets(*shingle_sets([t for t in short_texts if t is not None], spec.short_ngram),
                               int(is_short.sum()))
        short_at = np.cumsum(is_short) - 1  # a short unit's index among the short ones
    with_containment = spec.containment and counts is not None
    reach = resemble = agree = None
    if with_containment and n - fixed <= MEDOID_MAX:
        agree = _agreement(sigs)
        reach, resemble = _reach_and_resemble(agree, counts, sizes, is_short, spec)
    centre = np.full(n, -1, dtype=np.int64)
    centre[:fixed] = np.arange(fixed)
    open_ = np.arange(fixed, n)

    def joins(c: int, others: np.ndarray) -> np.ndarray:
        """Which of `others` the centre c takes."""
        closeness = agreeing_bins(sigs[others], sigs[c]) if agree is None else agree[others, c]
        near, by_containment = agreement_verifies(closeness, _column(counts, others), _column(counts, c), spec,
                                                  _column(sizes, others), _column(sizes, c))
        if with_containment:
            by = np.flatnonzero(by_containment)
            if len(by) > 1:  # the closest to the centre first, then keep order
                by = by[np.argsort(-closeness[by], kind="stable")]
                near[by] = _agreeing(sigs, counts, sizes, spec, c, others[by], prose, resemble)
        both_short = np.flatnonzero(is_short[others] & is_short[c])
        if len(both_short):  # the shingles' exact Jaccard decides (shingles.jaccard, all pairs with c at once)
            near[both_short] = _short_near(shingles, short_at[others[both_short]], short_at[c],
                                           spec.short_min_jaccard)
        return near

    def take(c: int) -> None:
        nonlocal open_
        if len(open_):
            near = joins(c, open_)
            centre[open_[near]] = c
            open_ = open_[~near]

    for c in range(fixed):
        take(c)
    while len(open_):
        first = 0 if reach is None else _most_joined(open_, reach, joins)
        c = int(open_[first])
        centre[c] = c
        open_ = np.delete(open_, first)
        take(c)
    return centre


def greedy_centres(sigs: np.ndarray, starts: np.ndarray, spec: VerifySpec, counts: np.ndarray | None = None,
                   sizes: np.ndarray | None = None, prose: np.ndarray | None = None) -> np.ndarray:
    """verified_centres of many components at once, for components without fixed units or short texts:
    sigs (rows x bins), the rows of each component consecutive and in keep order, component c being rows
    starts[c]:starts[c + 1]. Returns each row's centre as a row index.

    Round by round over all components together: each component's first open row is a centre and takes its
    open rows that are verified-similar to it (>= need agreeing bins), or contained within the size bound
    (counts: each row's feature count, None: similarity alone; sizes: its characters, for the size bound;
    prose: its prose, verified_centres').
    A round costs numpy calls over the open rows, not a Python call per component; a component drops out when
    it has no open row left. Rounds: the most centres any component has (usually 1 or 2). With containment
    (spec.containment and counts given), a component of three or more rows is one verified_centres call (its
    centre is the row whose take joins the most rows); a pair is the same either way (each of the two joins the
    other or neither does, and the first is the centre)."""
    n = len(sigs)
    comp = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    centre = np.empty(n, dtype=np.int64)
    open_ = np.arange(n)
    if spec.containment and counts is not None:
        big = np.diff(starts) >= 3
        for a, b in zip(starts[:-1][big], starts[1:][big]):
            centre[a:b] = a + verified_centres(sigs[a:b], None, spec, 0, None, counts[a:b],
                                               None if sizes is None else sizes[a:b],
                                               None if prose is None else prose[a:b])
        open_ = open_[~big[comp]]
    while len(open_):
        c = comp[open_]
        first = np.r_[True, c[1:] != c[:-1]]
        heads = open_[first]
        centre[heads] = heads
        head = heads[np.cumsum(first) - 1][~first]  # each other open row's head this round
        rest = open_[~first]
        near = pairs_verify(sigs[rest], sigs[head], None if counts is None else counts[rest],
                            None if counts is None else counts[head], spec, None if sizes is None else sizes[rest],
                            None if sizes is None else sizes[head])[0]
        centre[rest[near]] = head[near]
        open_ = rest[~near]
    return centre
