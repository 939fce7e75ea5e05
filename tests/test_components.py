"""Connected components on Spark (large-star / small-star) against union-find."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import components_of

from simhash_udf.spark.components import connected_components


@pytest.fixture(scope="module")
def cc(spark, tmp_path_factory):
    spark.sparkContext.setCheckpointDir(str(tmp_path_factory.mktemp("ckpt")))

    def run(edges):
        df = spark.createDataFrame([(int(a), int(b)) for a, b in edges], "src long, dst long")
        roots, rounds = connected_components(df, lambda d: d.checkpoint(eager=True))
        return {r.node: r.root for r in roots.collect()}, rounds

    return run


def expected_roots(edges):
    nodes = {n for e in edges for n in e}
    comp = components_of(nodes, edges)
    return {n: r for n, r in comp.items() if n != r}


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
