"""Resolve's text check of the pages joined by containment (core/verified.texts_confirm,
spark/containment_check.py): the pure rule against a brute-force definition on the texts' character 5-gram sets
(hypothesis), and the Spark step on a resolve result made by hand: a page whose texts hold stays, pages whose texts
do not leave the cluster and are clustered again among themselves by similarity, a page of an earlier run's cluster
is left as it is, and the result does not depend on the partitioning."""
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simhash_udf.core.shingles import SHINGLE, pair_overlaps
from simhash_udf.core.text import normalize_text
from simhash_udf.core.verified import TEXT_MIN_JACCARD, VerifySpec, texts_confirm


def brute_grams(text: str, n: int = SHINGLE) -> set[str]:
    normal = normalize_text(text)
    if not normal:
        return set()
    if len(normal) < n:
        return {normal}
    return {normal[i:i + n] for i in range(len(normal) - n + 1)}


def brute_confirm(a: str, b: str, spec: VerifySpec) -> bool:
    """The definition: the smaller text's (fewer characters; of two equal, fewer 5-grams) 5-grams at least
    min_containment inside the larger's, which has at most max_size_ratio times its characters; or the two
    5-gram sets' Jaccard index at least TEXT_MIN_JACCARD."""
    ga, gb = brute_grams(a), brute_grams(b)
    shared = len(ga & gb)
    small = ga if (len(a), len(ga)) <= (len(b), len(gb)) else gb
    inside = (len(small) > 0 and max(len(a), len(b)) <= spec.max_size_ratio * min(len(a), len(b))
              and shared >= spec.min_containment * len(small) - 1e-9)
    similar = bool(ga) and bool(gb) and shared >= TEXT_MIN_JACCARD * len(ga | gb) - 1e-9
    return inside or similar


PIECE = st.text(alphabet="ab c.。的是Ａ1\n", max_size=30)


@st.composite
def text_pairs(draw):
    """A text and another that holds it with something added around it, or a part of it, or something else."""
    core = draw(PIECE)
    kind = draw(st.sampled_from(["wrapped", "part", "other", "same"]))
    if kind == "wrapped":
        other = draw(PIECE) + core + draw(PIECE)
    elif kind == "part":
        i = draw(st.integers(0, len(core)))
        other = core[i:] + draw(PIECE)
    elif kind == "other":
        other = draw(PIECE)
    else:
        other = core
    return (core, other) if draw(st.booleans()) else (other, core)


@settings(max_examples=400, deadline=None)
@given(pairs=st.lists(text_pairs(), min_size=1, max_size=6), c=st.sampled_from([0.5, 0.8, 0.9, 1.0]),
       r=st.sampled_from([1.0, 1.6, 3.0]))
def test_texts_confirm_equals_the_definition(pairs, c, r):
    spec = VerifySpec(0.8, min_containment=c, max_size_ratio=r)
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    shared, size_a, size_b = pair_overlaps(a, b)
    for i, (x, y) in enumerate(pairs):
        gx, gy = brute_grams(x), brute_grams(y)
        assert (shared[i], size_a[i], size_b[i]) == (len(gx & gy), len(gx), len(gy))
    assert texts_confirm(a, b, spec).tolist() == [brute_confirm(x, y, spec) for x, y in pairs]


ARTICLE = " ".join(f"Sentence {w} tells of the river and the {w} mill that stood by it for years." for w in
                   ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"])
OTHER = " ".join(f"Unrelated {w} notes about compilers, their passes and a {w} register allocator." for w in
                 ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
FRAMED = f"Example site\nHome | News | About\n{ARTICLE}\nAll rights reserved."
SCHEMA = ("id long, fingerprint long, cluster_id long, is_duplicate boolean, signature binary, kept_fp long, "
          "similarity double, by_containment boolean, rank struct<i:long>, short_text string")
RNG = np.random.default_rng(3)
S1, S2 = (RNG.integers(0, 256, 128, dtype=np.uint8) for _ in range(2))
S1_NEAR = S1.copy()
S1_NEAR[:10] ^= 1  # 118 of 128 bins agree with S1: similar at 0.8


def resolved(spark, partitions: int):
    """A resolve result (resolve_verified's columns with containment): page 1 kept; 2 and 6 framed copies of it
    joined by containment; 3, 4, 7 and 8 other text joined by containment, of which 3, 4 and 8 are similar to
    each other by their signatures and 7 is not; 9 joined by containment to an earlier run's page (kept_fp null);
    10 joined by similarity."""
    def row(i, cluster, dup, by_containment, fp, sig=S2, kept_fp=101):  # 101: page 1's fingerprint
        return (i, fp, cluster, dup, sig.tobytes(), kept_fp, 0.6 if dup else None, by_containment, (i,), None)

    rows = [row(1, 1, False, False, 101), row(2, 1, True, True, 102), row(3, 1, True, True, 103, S1),
            row(4, 1, True, True, 103, S1), row(6, 1, True, True, 106), row(7, 1, True, True, 107),
            row(8, 1, True, True, 108, S1_NEAR), row(9, 900, True, True, 109, kept_fp=None), row(10, 1, True, False, 110)]
    texts = {1: ARTICLE, 2: FRAMED, 3: OTHER, 4: OTHER, 6: FRAMED, 7: OTHER + " Seven.", 8: OTHER, 9: OTHER, 10: OTHER}
    clusters = spark.createDataFrame(rows, SCHEMA).repartition(partitions)
    return clusters, spark.createDataFrame(sorted(texts.items()), "id long, text string").repartition(partitions)


@pytest.mark.spark
@pytest.mark.parametrize("partitions", [1, 3])
def test_pages_whose_texts_do_not_hold_leave_the_cluster_and_cluster_again(spark, partitions):
    from simhash_udf.core.signature import SignatureSpec, similarity
    from simhash_udf.spark.containment_check import ContainmentCheck, checked_containment

    spec = VerifySpec(0.8, min_containment=0.9)
    assert texts_confirm([ARTICLE, ARTICLE], [FRAMED, OTHER], spec).tolist() == [True, False]
    clusters, texts = resolved(spark, partitions)
    out, check = checked_containment(clusters, texts, spec, lambda df: df.cache(), lambda df: df.localCheckpoint())
    assert check == ContainmentCheck(checked_on_texts=6, left_cluster=4)
    assert out.columns == ["id", "fingerprint", "cluster_id", "is_duplicate", "signature", "kept_fp", "similarity"]
    got = out.toPandas().set_index("id").sort_index()
    near = float(similarity(S1_NEAR, S1, SignatureSpec().bits))
    # 3, 4 and 8 leave together, kept by 3 (the first in keep order); 7 alone
    want = {1: (1, False, 101, None), 2: (1, True, 101, 0.6), 3: (3, False, 103, None), 4: (3, True, 103, 1.0),
            6: (1, True, 101, 0.6), 7: (7, False, 107, None), 8: (3, True, 103, near), 9: (900, True, None, 0.6),
            10: (1, True, 101, 0.6)}
    assert got.index.tolist() == sorted(want)
    for i, (cluster, dup, kept_fp, sim) in want.items():
        row = got.loc[i]
        assert (row["cluster_id"], bool(row["is_duplicate"])) == (cluster, dup), i
        assert (pd.isna(row["similarity"]) and sim is None) or row["similarity"] == pytest.approx(sim), i
        assert (pd.isna(row["kept_fp"]) and kept_fp is None) or row["kept_fp"] == kept_fp, i
    # without texts (stored fingerprints) nothing is checked, and the clusters stay as resolve made them
    out, check = checked_containment(clusters, None, spec, lambda df: df.cache(), lambda df: df.localCheckpoint())
    assert check == ContainmentCheck(0, 0)
    same = out.toPandas().set_index("id").sort_index()
    assert np.array_equal(same["cluster_id"], [1, 1, 1, 1, 1, 1, 1, 900, 1])
