"""The verification signature: one-permutation MinHash with densification, b bits a bin (signature.py)."""
import hashlib

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_arrow, fingerprint_batch
from simhash_udf.core.signature import (
    SignatureSpec,
    densify,
    from_arrow,
    min_agreeing_bins,
    mix64,
    oph_signatures,
    similarity,
    to_arrow,
)

SPEC = SignatureSpec()
hashes64 = st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=300)


def _one(hs, spec=SPEC):
    sig, valid = oph_signatures(np.array(hs, dtype=np.uint64), np.array([0, len(hs)]), spec)
    assert valid[0]
    return sig[0]


def _reference(hs, spec=SPEC):
    """The definition, bin by bin in plain Python."""
    bits = spec.bins.bit_length() - 1
    mins = [None] * spec.bins
    for h in set(hs):
        g = int(mix64(np.array([h ^ 0x5BD1E9955BD1E995], dtype=np.uint64))[0])
        b, v = g >> (64 - bits), g & ((1 << (64 - bits)) - 1)
        mins[b] = v if mins[b] is None else min(mins[b], v)
    side = (mix64(np.arange(spec.bins, dtype=np.uint64) + np.uint64(0x632BE59BD9B4E019)) >> np.uint64(63)).astype(bool)
    out = []
    for b in range(spec.bins):
        j = b
        while mins[j % spec.bins] is None:
            j += 1 if side[b] else -1
        out.append(mins[j % spec.bins] & ((1 << spec.bits) - 1))
    return np.array(out, dtype=spec.dtype)


@settings(max_examples=200, deadline=None)
@given(hashes64, st.sampled_from([SignatureSpec(), SignatureSpec(64, 16), SignatureSpec(8, 8)]))
def test_signature_equals_the_definition(hs, spec):
    assert _one(hs, spec).tolist() == _reference(hs, spec).tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1), max_size=200), min_size=1, max_size=8),
       st.sampled_from([SignatureSpec(), SignatureSpec(64, 16), SignatureSpec(8, 8)]))
def test_a_batch_of_pages_equals_each_page_by_the_definition(pages, spec):
    """Pages of 0-200 features in one call (empty bins in most rows, rows without features between them):
    each row is the definition of its page alone."""
    hashes = np.array([h for p in pages for h in p], dtype=np.uint64)
    sig, valid = oph_signatures(hashes, np.r_[0, np.cumsum([len(p) for p in pages])], spec)
    for row, valid_row, page in zip(sig, valid, pages):
        assert valid_row == bool(page)
        assert row.tolist() == (_reference(page, spec).tolist() if page else [0] * spec.bins)


@settings(max_examples=100, deadline=None)
@given(hashes64, st.randoms(use_true_random=False))
def test_a_set_not_a_sequence(hs, rnd):
    shuffled = list(hs) + list(hs[: len(hs) // 2])
    rnd.shuffle(shuffled)
    assert _one(hs).tolist() == _one(shuffled).tolist()


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.2, 0.5, 0.8, 0.95]), st.sampled_from([30, 300, 2000]))
def test_estimate_is_close_to_the_jaccard_index(seed, j, n):
    rng = np.random.default_rng(seed)
    inter = int(round(2 * n * j / (1 + j)))
    pool = rng.integers(0, 2**64, n + n - inter, dtype=np.uint64)
    a, b = pool[:n], np.r_[pool[:inter], pool[n:]]
    exact = inter / (2 * n - inter)
    sig, _ = oph_signatures(np.r_[a, b], np.array([0, n, 2 * n]))
    est = float(similarity(sig[0], sig[1], 8))
    # six standard errors of an estimate from min(128, n) bins: a set of n < 128 features fills at most n bins, and
    # the densified rest copies them (with 128 alone, seed=297, j=0.8, n=30 erred by 0.226 against a bound of 0.224)
    assert abs(est - exact) < 6 * np.sqrt(max(exact * (1 - exact), 0.02) / min(128, n)) + 0.02


def test_batches_pages_without_features_and_arrow_round_trip():
    hs = np.arange(1, 51, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    offsets = np.array([0, 10, 10, 50])
    sig, valid = oph_signatures(hs, offsets)
    assert valid.tolist() == [True, False, True] and not sig[1].any()
    assert sig[0].tolist() == _one(hs[:10].tolist()).tolist() and sig[2].tolist() == _one(hs[10:].tolist()).tolist()
    arr = to_arrow(sig, valid)
    assert arr.null_count == 1 and arr[0].as_py() == sig[0].tobytes()
    assert from_arrow(pa.array([arr[0].as_py(), arr[2].as_py()]).slice(1), SPEC).tolist() == [sig[2].tolist()]
    mins = np.full((1, 4), np.uint64(2**64 - 1))
    mins[0, 2] = 7
    assert densify(mins, np.array([True])).tolist() == [[7, 7, 7, 7]]


def test_threshold_is_an_integer_number_of_bins():
    for t in (0.0, 0.5, 0.7, 0.9, 1.0):
        need = min_agreeing_bins(t, SPEC)
        below, at = np.zeros((1, 128), np.uint8), np.zeros((1, 128), np.uint8)
        other = np.ones((1, 128), np.uint8)
        below[0, : need - 1], at[0, :need] = 1, 1
        assert similarity(at, other, 8)[0] >= t - 1e-12
        if need > 0:
            assert similarity(below, other, 8)[0] < t


def test_signature_comes_with_the_fingerprint_in_one_pass():
    texts = ["黄河之水天上来，奔流到海不复回。The river flows to the sea.", None, "", "another page of words words"]
    fps, counts, sigs = fingerprint_batch(texts, FeatureSpec(), SPEC)
    fps2, counts2, sigs2 = fingerprint_arrow(pa.array(texts), FeatureSpec(), SPEC)
    assert fps.tolist() == fps2.tolist() and (sigs == sigs2).all()
    assert fingerprint_batch(texts, FeatureSpec())[0].tolist() == fps.tolist()  # the fingerprint is unchanged
    assert not sigs[1].any() and not sigs[2].any() and sigs[0].any()


def test_golden_signature():
    """Pins the definition (version oph128x8) on one text: stored signatures stay comparable across runs."""
    _, _, sigs = fingerprint_batch(["近似重复网页检测 near-duplicate detection of crawled pages, 2026"], FeatureSpec(), SPEC)
    assert SPEC.version() == "oph128x8"
    assert hashlib.sha1(sigs[0].tobytes()).hexdigest() == GOLDEN


GOLDEN = "27643e3318b5a9f1cb6c7db4a5e0cc3a58a00714"
