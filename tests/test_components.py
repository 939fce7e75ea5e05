"""Connected components on Spark (large-star / small-star) against union-find."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import roots_of as expected_roots

from simhash_udf.spark.components import connected_components


@pytest.fixture(scope="module")
def cc(spark, tmp_path_factory):
    spark.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("ckpt")))

    def run(edges):
        df = spark.createDataFrame([(int(a), int(b)) for a, b in edges], "src long, dst long")
        roots, rounds, n_roots = connected_components(df, lambda d: d.checkpoint(eager=True))
        got = {r.node: r.root for r in roots.collect()}
        assert n_roots == len(got)  # the count resolve uses instead of counting the roots again
        return got, rounds

    return run


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(-50, 50), st.integers(-50, 50)), max_size=80))
def test_random_graphs_match_union_find(cc, edges):
    got, _ = cc(edges)
    assert got == expected_roots([(a, b) for a, b in edges if a != b])


@pytest.mark.parametrize("shape", ["path", "star", "many_small"])
def test_bad_shapes_converge_in_few_rounds(cc, shape):
    n = 100_000
    rng = np.random.default_rng(3)
    labels = rng.permutation(n) * 7 - 10_000  # node ids in random order, some negative
    if shape == "path":
        edges = [(labels[i], labels[i + 1]) for i in range(n - 1)]
    elif shape == "star":
        edges = [(labels[0], labels[i]) for i in range(1, n)]
    else:
        edges = [(labels[i], labels[i + 1]) for i in range(0, n - 1) if i % 5 != 4]
    got, rounds = cc(edges)
    assert got == expected_roots(edges)
    print(f"{shape} of {n:,} nodes: {rounds} rounds")
    assert rounds <= 2 * int(np.ceil(np.log2(n)))  # O(log n) rounds


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def test_unique_key_aggregation_plans_one_phase_and_puts_the_setting_back(spark):
    """The rounds' aggregations (and the id check, the count of pages per fingerprint) are planned in one phase
    inside session.unique_key_aggregation; a DataFrame persisted there keeps that plan, with the same rows, and
    the session's setting is as before afterwards."""
    from pyspark.sql import functions as F

    from simhash_udf.spark.session import UNIQUE_KEY_SETTINGS, unique_key_aggregation

    (key,) = UNIQUE_KEY_SETTINGS
    before = spark.conf.get(key, None)
    df = spark.range(3000).withColumn("k", F.col("id") % 1234)
    two_phase = df.groupBy("k").agg(F.count(F.lit(1)).alias("n"))
    assert "partial_count" in _plan(two_phase)
    with unique_key_aggregation(spark):
        one_phase = df.groupBy("k").agg(F.count(F.lit(1)).alias("n")).where("n > 2").persist()
    try:
        one_phase.count()
        assert spark.conf.get(key, None) == before
        cached_plan = one_phase._jdf.queryExecution().optimizedPlan().toString()
        assert "InMemoryRelation" in cached_plan
        assert "partial_count" not in _plan(one_phase) + cached_plan
        assert sorted(map(tuple, one_phase.collect())) == sorted(map(tuple, two_phase.where("n > 2").collect()))
    finally:
        one_phase.unpersist()


def test_a_large_table_of_the_driver_is_read_from_its_checkpoint_not_shipped_in_every_task(spark, tmp_path):
    """driver_frame (the components found on the driver, the sentence-key pairs verified there): a table of more
    than SHIPPED_BYTES is checkpointed in pieces, so that a task reading it carries no rows (a local relation's scan
    ships its partition's rows in every task that reads it, even from a cache); a small one stays a local relation.
    The same rows and at most the partitions asked for either way, and the session's setting as before."""
    import pyarrow as pa

    from simhash_udf.spark.driver_tables import SHIPPED_BYTES, driver_frame

    spark.sparkContext.setCheckpointDir(str(tmp_path))
    checkpoints = []

    def checkpoint(df):
        checkpoints.append(df.rdd.getNumPartitions())
        return df.checkpoint(eager=True)

    key = "spark.sql.leafNodeDefaultParallelism"
    before = spark.conf.get(key, None)
    for n in (100, SHIPPED_BYTES // 8):  # 1.6 KB and 2 x SHIPPED_BYTES of two long columns
        table = pa.table({"node": np.arange(n, dtype=np.int64), "root": np.arange(n, dtype=np.int64) // 3})
        df = driver_frame(spark, table, "node long, root long", 1, checkpoint)
        assert sorted(map(tuple, df.collect())) == list(zip(range(n), (i // 3 for i in range(n))))
        assert df.rdd.getNumPartitions() == 1
        assert ("LocalTableScan" in _plan(df)) == (n == 100), _plan(df)
    assert checkpoints == [-(-table.nbytes // SHIPPED_BYTES)]  # one checkpoint, in pieces of SHIPPED_BYTES
    assert spark.conf.get(key, None) == before
