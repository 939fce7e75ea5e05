"""Key groups by sort: packed keys identify (table, key bits) exactly, and the group walk sees the same
groups wherever the Arrow batches are cut."""
from itertools import groupby

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import planted_fingerprints

from simhash_udf.core.blocks import packed_key_shift, plan_tables, table_keys
from simhash_udf.spark.blocks import block_rows, key_runs, walk_groups


def record_groups(seen):
    def per_groups(members, offsets, tables):
        for g in range(len(offsets) - 1):
            seen.append((int(tables[g]), members[offsets[g]:offsets[g + 1]].tolist()))
        return iter(())
    return per_groups


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 3), st.integers(-2, 2), st.integers(-50, 50)), max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=8),
)
def test_walk_groups_sees_the_same_groups_wherever_batches_are_cut(rows, cuts):
    rows = sorted(rows)
    expect = [(t, [fp for _, _, fp in grp]) for (t, _), grp in groupby(rows, key=lambda r: r[:2])]
    bounds = [0] + sorted(min(c, len(rows)) for c in cuts) + [len(rows)]  # repeated cuts: empty batches

    def batch(part):
        return pa.RecordBatch.from_arrays(
            [pa.array([r[0] for r in part], pa.int32()), pa.array([r[1] for r in part], pa.int64()),
             pa.array([r[2] for r in part], pa.int64())], ["table", "key", "fingerprint"])

    seen = []
    list(walk_groups((batch(rows[a:b]) for a, b in zip(bounds, bounds[1:])), record_groups(seen)))
    assert seen == expect


PLANS = [(0, None), (1, None), (1, 8), (3, None), (3, 6), (6, 8), (6, 9), (2, 20), (1, 20)]


@pytest.mark.parametrize("k,m", PLANS)
def test_block_keys_identify_table_and_masked_key(spark, k, m):
    """Grouping the job's block rows by their key gives exactly the groups of (table, fingerprint AND
    mask), packed or not; and the sorted runs keep each group together."""
    plan = plan_tables(k, m)
    # (1, 20): 20 tables need 5 bits beside keys of up to 61; (2, 20): 190 tables need 8 beside 58
    assert (packed_key_shift(plan) is None) == ((k, m) in {(1, 20), (2, 20)})
    rng = np.random.default_rng(k * 100 + (m or 0))
    fps = sorted(set(planted_fingerprints(rng, 60, max(k, 1))))
    df = spark.createDataFrame([(f,) for f in fps], "fingerprint long").repartition(3)
    rows = block_rows(df, plan)
    got = {}
    for r in rows.collect():
        got.setdefault((r.table, r.key), set()).add(r.fingerprint)
    expect = {}
    for t, mask in enumerate(plan.table_masks()):
        for f in fps:
            expect.setdefault((t, f & mask), set()).add(f)
    assert sorted(map(sorted, got.values())) == sorted(map(sorted, expect.values()))
    assert {t for t, _ in got} == set(range(len(plan.tables)))
    # the keys numpy makes for the packed search (core/blocks.table_keys) are the SQL keys, row for row
    keys = table_keys(np.array(fps, dtype=np.int64), plan)
    assert {(t, int(keys[t, i]), f) for t in range(len(plan.tables)) for i, f in enumerate(fps)} == {
        (r.table, r.key, r.fingerprint) for r in rows.collect()}
    # every (table, key) is one contiguous run of one partition after the shuffle and sort
    runs = key_runs(rows, plan).rdd.glom().collect()
    seen = set()
    for part in runs:
        for group, _ in groupby(part, key=lambda r: (r.table, r.key)):
            assert group not in seen
            seen.add(group)
    assert seen == set(got)
