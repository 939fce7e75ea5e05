"""The Bloom filter of a run's keys (history search): no false negatives, few false positives, filter keys
that tell exactly the (table, key) and (band, key) groups apart, and the Spark build equal to the numpy one
whatever the partitioning."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simhash_udf.core.key_filter as kf
from simhash_udf.core.blocks import plan_tables

longs = st.integers(-(1 << 63), (1 << 63) - 1)


@settings(max_examples=60, deadline=None)
@given(st.lists(longs, max_size=300), st.integers(kf.MIN_LOG2_BITS, 20))
def test_every_key_built_from_is_found(keys, log2_bits):
    keys = np.array(keys, dtype=np.int64)
    bitmap = kf.build_bitmap(keys, log2_bits)
    assert len(bitmap) == (1 << log2_bits) // 8
    assert kf.might_contain(bitmap, keys, log2_bits).all()


@pytest.mark.parametrize("n", [1000, 100_000])
def test_false_positives_are_few_at_the_planned_size(n):
    rng = np.random.default_rng(n)
    keys = rng.integers(-(1 << 63), (1 << 63) - 1, size=n, dtype=np.int64)
    log2_bits = kf.log2_bits_for(n)
    bitmap = kf.build_bitmap(keys, log2_bits)
    others = rng.integers(-(1 << 63), (1 << 63) - 1, size=200_000, dtype=np.int64)
    share = kf.might_contain(bitmap, np.setdiff1d(others, keys), log2_bits).mean()
    assert share < 0.005, share  # 0.16% expected at 24 bits a key, less when the size rounds up


def test_structured_keys_spread_like_random_ones():
    """Table keys are masked fingerprints (most bits zero) and band keys small integers in tests: the mix must
    still spread them, or the filter would let most rows through."""
    keys = np.arange(50_000, dtype=np.int64) << 20
    log2_bits = kf.log2_bits_for(len(keys))
    bitmap = kf.build_bitmap(keys, log2_bits)
    others = (np.arange(50_000, 250_000, dtype=np.int64) << 20) | 7
    assert kf.might_contain(bitmap, others, log2_bits).mean() < 0.005


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 6), st.lists(st.integers(0, 15), min_size=2, max_size=40), st.integers(0, 2**32))
def test_table_filter_keys_equal_exactly_when_the_table_bits_agree(k, picks, seed):
    """Brute force: two fingerprints have the same filter key in table t iff they agree on t's key bits, and
    keys of different tables never meet."""
    plan = plan_tables(k)
    rng = np.random.default_rng(seed)
    base = rng.integers(-(1 << 63), (1 << 63) - 1, size=4, dtype=np.int64)
    flips = rng.integers(0, 64, size=16)
    fps = np.array([(int(base[p % 4]) ^ (1 << int(flips[p]))) & ((1 << 64) - 1) if p >= 4 else int(base[p]) & ((1 << 64) - 1)
                    for p in picks], dtype=np.uint64).view(np.int64)
    keys = kf.table_filter_keys(fps, plan)
    masks = plan.table_masks()
    for i in range(len(fps)):
        for j in range(len(fps)):
            for t, mask in enumerate(masks):
                agree = (int(fps[i]) ^ int(fps[j])) & mask == 0
                assert (keys[i, t] == keys[j, t]) == agree
                for u in range(len(masks)):
                    if u != t:
                        assert keys[i, t] != keys[j, u]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(-3, 3)), min_size=1, max_size=60))
def test_band_filter_keys_equal_exactly_when_band_and_key_do(rows):
    bands = np.array([b for b, _ in rows], dtype=np.int32)
    keys = np.array([k for _, k in rows], dtype=np.int64)
    out = kf.band_filter_keys(bands, keys)
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (out[i] == out[j]) == (rows[i] == rows[j])


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(longs, max_size=200), st.integers(1, 5), st.integers(0, 4000))
def test_spark_build_equals_numpy_and_keeps_the_right_rows(spark, keys, partitions, most):
    """The bitmap ORed from the partitions' chunks by Spark equals the one built from all keys at once, for any
    partitioning; applied to other rows, the filter keeps exactly those numpy says may be in it."""
    from simhash_udf.spark.key_filter import build_key_bloom

    def keys_of(batch):
        return batch.column("key").to_numpy(zero_copy_only=False)

    df = spark.createDataFrame([(k,) for k in keys], "key long").repartition(partitions)
    bloom = build_key_bloom(df, keys_of, most)
    assert bloom.log2_bits == kf.log2_bits_for(most)
    expected = kf.build_bitmap(np.array(keys, dtype=np.int64), bloom.log2_bits)
    assert np.array_equal(bloom.bitmap, expected)

    probe = np.r_[np.array(keys[:50], dtype=np.int64), np.arange(300, dtype=np.int64) * 7919]
    rows = spark.createDataFrame([(int(k), i) for i, k in enumerate(probe)], "key long, i int").repartition(partitions)
    kept = sorted(r.i for r in bloom.rows_that_may_match(rows, keys_of).collect())
    assert kept == np.flatnonzero(kf.might_contain(expected, probe, bloom.log2_bits)).tolist()


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.one_of(st.none(), st.integers(-5, 5)), min_size=3, max_size=3), max_size=40),
       st.lists(st.tuples(st.integers(0, 2), st.integers(-5, 5)), max_size=20), st.integers(1, 3))
def test_band_arrays_pass_when_a_usable_band_key_is_the_days(spark, arrays, day, partitions):
    """History rows of band-key arrays (null: band not usable) against a filter of the day's (band, key) rows:
    a row passes iff one of its non-null (band, key) may be in the filter, a null never counts; every row
    that holds a day (band, key) passes."""
    from simhash_udf.spark.history_search import array_filter_keys, row_filter_keys
    from simhash_udf.spark.key_filter import build_key_bloom

    day_df = spark.createDataFrame(day, "band int, key long").repartition(partitions)
    bloom = build_key_bloom(day_df, row_filter_keys, 10)
    hist = spark.createDataFrame([(i, keys) for i, keys in enumerate(arrays)], "fingerprint long, keys array<long>")
    kept = sorted(r.fingerprint for r in bloom.rows_that_may_match(hist.repartition(partitions), array_filter_keys).collect())

    def may(b, k):
        key = kf.band_filter_keys(np.array([b]), np.array([k], dtype=np.int64))
        return bool(kf.might_contain(bloom.bitmap, key, bloom.log2_bits)[0])

    assert kept == [i for i, keys in enumerate(arrays) if any(k is not None and may(b, k) for b, k in enumerate(keys))]
    assert {i for i, keys in enumerate(arrays) if any((b, k) in set(day) for b, k in enumerate(keys))} <= set(kept)
