"""Key groups shuffled packed (spark/packed_groups.py): each packed value lands on the partition it was made
for, no row is lost or changed on the way, and the groups are exactly those of (key, tag)."""
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from simhash_udf.core.bands import SignatureBands
from simhash_udf.spark.bands import band_key_rows, band_rows
from simhash_udf.spark.packed_groups import (
    PACKED_SCHEMA,
    packed_batch,
    partition_of_keys,
    partition_values,
    sorted_groups,
    unpacked,
    walk_packed_groups,
)


@pytest.mark.parametrize("partitions", [1, 2, 7, 40, 200])
def test_each_partition_value_lands_on_its_partition(spark, partitions):
    """Spark's repartition(n, col) sends partition_values(n)[j] to partition j (the Murmur3 of Spark's hash())."""
    values = partition_values(partitions)
    df = spark.createDataFrame([(int(v),) for v in values], "part long").repartition(partitions, "part")
    got = dict(df.select("part", F.spark_partition_id().alias("p")).collect())
    assert got == {int(v): j for j, v in enumerate(values)}


rows_strategy = st.lists(st.tuples(st.integers(-8, 8), st.integers(-(2**63), 2**63 - 1), st.integers(0, 3)),
                         max_size=80)


@settings(max_examples=200, deadline=None)
@given(rows=rows_strategy, partitions=st.integers(1, 9), cut=st.integers(1, 30), min_size=st.integers(1, 3))
def test_packed_rows_come_back_as_their_key_groups(rows, partitions, cut, min_size):
    """Packed in batches of `cut` rows, sent to their partitions and grouped per partition: every (key, tag)
    group of at least min_size rows is whole in one partition with exactly its members, and no other row
    comes back (brute force: a dict of the rows)."""
    keys = np.array([r[0] * 0x1000_0000_0001 for r in rows], np.int64)  # few distinct keys, far apart in bits
    members = np.array([r[1] for r in rows], np.int64)
    tags = np.array([r[2] for r in rows], np.int32)
    by_part = defaultdict(list)
    values = {int(v): j for j, v in enumerate(partition_values(partitions))}
    for s in range(0, len(rows), cut):
        batch = packed_batch(keys[s:s + cut], members[s:s + cut], tags[s:s + cut], partitions)
        for part, blob in zip(batch.column("part").to_pylist(), batch.column("rows").to_pylist()):
            by_part[values[part]].append(pa.RecordBatch.from_arrays(
                [pa.array([part], pa.int64()), pa.array([blob], pa.binary())], names=["part", "rows"]))
    got = {}
    for j, batches in by_part.items():
        k, m, t = unpacked(batches)
        assert (partition_of_keys(k, partitions) == j).all()
        gm, offsets, gt, gk = sorted_groups(k, m, t, min_size)
        assert offsets[0] == 0 and offsets[-1] == len(gm) and (np.diff(offsets) >= min_size).all()
        for g in range(len(gk)):
            assert (int(gk[g]), int(gt[g])) not in got
            got[(int(gk[g]), int(gt[g]))] = sorted(gm[offsets[g]:offsets[g + 1]].tolist())
    expect = defaultdict(list)
    for key, member, tag in zip(keys.tolist(), members.tolist(), tags.tolist()):
        expect[(key, tag)].append(member)
    assert got == {g: sorted(m) for g, m in expect.items() if len(m) >= min_size}


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 5000), repeated=st.floats(0, 0.5), min_size=st.integers(1, 4))
def test_groups_of_many_single_keys_equal_brute_force(seed, n, repeated, min_size):
    """sorted_groups on wide random keys, most met once (as band keys are), some repeated 2-5 times: exactly
    the (key, tag) groups of at least min_size rows (the bucket count that drops single keys before the sort
    must not drop a repeated one)."""
    rng = np.random.default_rng(seed)
    keys = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    for i in np.flatnonzero(rng.random(n) < repeated):
        keys[i] = keys[rng.integers(0, i + 1)]  # a key met earlier, or its own
    members = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)
    tags = rng.integers(0, 2, n).astype(np.int32)
    gm, offsets, gt, gk = sorted_groups(keys, members, tags, min_size)
    got = {(int(gk[g]), int(gt[g])): sorted(gm[offsets[g]:offsets[g + 1]].tolist()) for g in range(len(gk))}
    assert len(got) == len(gk)
    expect = defaultdict(list)
    for key, member, tag in zip(keys.tolist(), members.tolist(), tags.tolist()):
        expect[(key, tag)].append(member)
    assert got == {g: sorted(m) for g, m in expect.items() if len(m) >= min_size}


def test_walk_in_spark_sees_every_group_once(spark):
    """Through a real shuffle: every (key, tag) group reaches one task whole (rows made in 3 input partitions,
    5 shuffle partitions)."""
    rng = np.random.default_rng(7)
    n = 3000
    keys = rng.integers(0, 400, n).astype(np.int64) << 20
    members, tags = rng.integers(-(2**62), 2**62, n), rng.integers(0, 2, n).astype(np.int32)
    src = spark.createDataFrame(pa.table({"key": keys, "member": members, "tag": tags}).to_pandas()).repartition(3)

    def pack(batches):
        for b in batches:
            yield packed_batch(*(b.column(c).to_numpy() for c in ("key", "member", "tag")), 5)

    def per_groups(m, offsets, t, k):
        sizes = np.diff(offsets)
        yield pa.RecordBatch.from_arrays([pa.array(np.repeat(k, sizes)), pa.array(np.repeat(t, sizes).astype(np.int64)),
                                          pa.array(m), pa.array(np.repeat(np.arange(len(sizes)), sizes))],
                                         names=["key", "tag", "member", "group"])

    out = walk_packed_groups(src.mapInArrow(pack, PACKED_SCHEMA), 5,
                             "key long, tag long, member long, `group` long", per_groups)
    rows = out.select("*", F.spark_partition_id().alias("p")).collect()
    assert sorted((r.key, r.tag, r.member) for r in rows) == sorted(zip(keys.tolist(), tags.tolist(), members.tolist()))
    where = defaultdict(set)
    for r in rows:
        where[(r.key, r.tag)].add((r.p, r.group))
    assert all(len(w) == 1 for w in where.values())
    assert len({r.p for r in rows}) > 1


def test_band_key_rows_are_the_sql_band_rows(spark):
    """The numpy band rows of (fingerprint, signature) batches (band_key_rows, what the band search packs)
    are exactly the rows of the SQL explode of the key arrays (band_rows), unusable bands left out."""
    bands = SignatureBands()
    rng = np.random.default_rng(3)
    nbytes = bands.signature.bins * bands.signature.bits // 8
    sigs = [bytes(rng.integers(0, 4, nbytes, dtype=np.uint8)) for _ in range(300)]
    sigs += [bytes(nbytes)] * 3  # constant signatures: no usable band
    fps = [int(i) * 7919 - 10**6 for i in range(len(sigs))]
    df = spark.createDataFrame(list(zip(fps, sigs)), "fingerprint long, signature binary")
    expect = sorted((r.fingerprint, r.band, r.key) for r in band_rows(df, bands).collect())
    table = pa.table({"fingerprint": pa.array(fps, pa.int64()), "signature": pa.array(sigs, pa.binary())})
    got = []
    for b in table.to_batches(max_chunksize=37):  # slices: offsets not starting at 0
        f, band, keys = band_key_rows(b, bands)
        got += zip(f.tolist(), band.tolist(), keys.tolist())
    assert sorted(got) == expect
    assert len(expect) < 303 * bands.bands  # some bands were unusable


def test_reduce_tasks_sized_by_rows_find_the_same_members(spark, monkeypatch):
    """A run whose shuffle partitions are too few for its rows gets more reduce tasks (none holds more than
    MAX_ROWS_PER_TASK rows in numpy), with the same members and pair counts."""
    from reference import planted_fingerprints

    from simhash_udf.core.blocks import plan_tables
    from simhash_udf.spark import packed_groups
    from simhash_udf.spark.candidates import group_members

    plan = plan_tables(3)
    fps = sorted(set(planted_fingerprints(np.random.default_rng(5), 150, 3)))
    df = spark.createDataFrame([(f,) for f in fps], "fingerprint long").repartition(3)

    def result(members):
        rows = members.collect()
        found = sorted((r.table, r.key, r.fingerprint) for r in rows if r.fingerprint is not None)
        stats = [sum(r[c] or 0 for r in rows) for c in ("compared", "accepted", "groups")]
        return found, stats

    session_tasks = int(spark.conf.get("spark.sql.shuffle.partitions"))
    before = group_members(df, plan, n_fingerprints=len(fps))
    assert before.rdd.getNumPartitions() == session_tasks
    monkeypatch.setattr(packed_groups, "MAX_ROWS_PER_TASK", 64)
    after = group_members(df, plan, n_fingerprints=len(fps))
    assert after.rdd.getNumPartitions() == -(-len(fps) * len(plan.tables) // 64) > session_tasks
    expect = result(before)
    assert expect[1][1] > 0  # some pairs within k were planted
    assert result(after) == expect
