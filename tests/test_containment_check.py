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


def brute_confirm(a: str, b: str, spec: VerifySpec, similar_too: bool = True) -> bool:
    """The definition: the smaller text's (fewer characters; of two equal, fewer 5-grams) 5-grams at least
    min_containment inside the larger's, which has at most max_size_ratio times its characters; or the two
    5-gram sets' Jaccard index at least TEXT_MIN_JACCARD (similar_too)."""
    ga, gb = brute_grams(a), brute_grams(b)
    shared = len(ga & gb)
    small = ga if (len(a), len(ga)) <= (len(b), len(gb)) else gb
    inside = (len(small) > 0 and max(len(a), len(b)) <= spec.max_size_ratio * min(len(a), len(b))
              and shared >= spec.min_containment * len(small) - 1e-9)
    similar = bool(ga) and bool(gb) and shared >= TEXT_MIN_JACCARD * len(ga | gb) - 1e-9
    return inside or (similar_too and similar)


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
    assert texts_confirm(a, b, spec, similar_too=False).tolist() == [brute_confirm(x, y, spec, False) for x, y in pairs]


ARTICLE = " ".join(f"Sentence {w} tells of the river and the {w} mill that stood by it for years." for w in
                   ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth"])
OTHER = " ".join(f"Unrelated {w} notes about compilers, their passes and a {w} register allocator." for w in
                 ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
FRAMED = f"Example site\nHome | News | About\n{ARTICLE}\nAll rights reserved."
SCHEMA = ("id long, fingerprint long, cluster_id long, is_duplicate boolean, signature binary, kept_fp long, "
          "similarity double, by_containment boolean, rank struct<i:long>, short_text string")
# The same rows with a keep rank of two fields whose order is not the ids' (as --keep longest or earliest:COL give):
# the larger id first.
REVERSED_SCHEMA = SCHEMA.replace("rank struct<i:long>", "rank struct<l:long,i:long>")


def with_rank_order(rows: list[tuple], order: str) -> tuple[list[tuple], str]:
    """rows (SCHEMA's, rank (i,)) and their schema in keep order `order`: "id", or "reversed" (rank (-i, i))."""
    if order == "id":
        return rows, SCHEMA
    return [r[:8] + ((-r[8][0], r[8][0]),) + r[9:] for r in rows], REVERSED_SCHEMA


RNG = np.random.default_rng(3)
S1, S2 = (RNG.integers(0, 256, 128, dtype=np.uint8) for _ in range(2))
S1_NEAR = S1.copy()
S1_NEAR[:10] ^= 1  # 118 of 128 bins agree with S1: similar at 0.8


def resolved(spark, partitions: int, order: str = "id"):
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
    clusters = spark.createDataFrame(*with_rank_order(rows, order)).repartition(partitions)
    return clusters, spark.createDataFrame(sorted(texts.items()), "id long, text string").repartition(partitions)


@pytest.mark.spark
@pytest.mark.parametrize("partitions", [1, 3])
def test_pages_whose_texts_do_not_hold_leave_the_cluster_and_cluster_again(spark, partitions):
    from simhash_udf.core.signature import SignatureSpec, similarity
    from simhash_udf.spark.containment_check import (
        ContainmentCheck,
        checked_containment,
        pages_to_check,
        rows_to_compare,
    )

    spec = VerifySpec(0.8, min_containment=0.9)
    assert texts_confirm([ARTICLE, ARTICLE], [FRAMED, OTHER], spec).tolist() == [True, False]
    clusters, texts = resolved(spark, partitions)
    flagged, n_flagged = pages_to_check(rows_to_compare(clusters, None, 0, lambda df: df.localCheckpoint()))
    assert n_flagged == 6
    out, check = checked_containment(clusters, flagged, n_flagged, texts, spec, lambda df: df.cache())
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
    out, check = checked_containment(clusters, None, 0, None, spec, lambda df: df.cache())
    assert check == ContainmentCheck(0, 0)
    same = out.toPandas().set_index("id").sort_index()
    assert np.array_equal(same["cluster_id"], [1, 1, 1, 1, 1, 1, 1, 900, 1])


ARTICLE2 = " ".join(f"The {w} bridge over the canal was rebuilt in stone after the flood of that spring." for w in
                    ["old", "new", "north", "south", "east", "west", "iron", "wooden"])
FRAMED2 = f"Another site\nMenu | Archive\n{ARTICLE2}\nContact us."
FRAMED2_AGAIN = f"{FRAMED2}\nShared 3 times."


def before_the_check(spark, partitions: int, order: str = "id"):
    """Resolve's rows with rank (the pages' ids as their keep order): cluster 1 (page 1 kept, 10 a duplicate)
    and cluster 40 (40, 41), both of the article; pages alone: 2 (the article framed), 7 (other text), 20 (a
    second article), 21 (that article framed), 22 (a copy of 21 with a line more), 30; page 9 a duplicate of an
    earlier run's cluster. Sentence-key pairs (by fingerprint = 100 + id): 2 with 10 and with 41, 7 with 10,
    21 with 20, 22 with 21, 30 with 9."""
    def row(i, cluster, dup, kept_fp=None, sig=S2):
        return (i, 100 + i, cluster, dup, sig.tobytes(), 100 + cluster if kept_fp is None else kept_fp, None, False,
                (i,), None)

    rows = [row(1, 1, False), row(10, 1, True), row(40, 40, False), row(41, 40, True), row(2, 2, False, sig=S1),
            row(7, 7, False), row(20, 20, False), row(21, 21, False, sig=S1_NEAR), row(22, 22, False), row(30, 30, False),
            (9, 109, 900, True, S2.tobytes(), None, 0.9, False, (9,), None)]
    texts = {1: ARTICLE, 10: ARTICLE, 40: ARTICLE + " Copy.", 41: ARTICLE, 2: FRAMED, 7: OTHER + " Seven.",
             20: ARTICLE2, 21: FRAMED2, 22: FRAMED2_AGAIN, 30: ARTICLE, 9: ARTICLE}
    pairs = [(102, 110), (141, 102), (107, 110), (120, 121), (121, 122), (109, 130)]
    return (spark.createDataFrame(*with_rank_order(rows, order)).repartition(partitions),
            spark.createDataFrame(pairs, "src long, dst long").repartition(partitions),
            spark.createDataFrame(sorted(texts.items()), "id long, text string").repartition(partitions))


@pytest.mark.spark
@pytest.mark.parametrize("partitions,where", [(1, "driver"), (3, "driver"), (3, "spark")])
def test_pages_alone_join_the_first_cluster_whose_kept_page_holds_them_on_the_texts(spark, partitions, where,
                                                                                     monkeypatch, caplog):
    """The step on the driver (few proposals) and in Spark (here every side is taken as large, and the texts as
    more than the driver takes) gives the same clusters."""
    from simhash_udf.core.signature import SignatureSpec, similarity
    from simhash_udf.spark import joins
    from simhash_udf.spark.containment_check import (
        DRIVER_TEXT_BYTES,
        JoinedOnTexts,
        joined_on_texts,
        lone_proposals,
        rows_to_compare,
    )

    text_bytes = 0
    if where == "spark":
        monkeypatch.setattr(joins, "BROADCAST_MAX_ROWS", -1)  # joins.is_small: no side is small
        text_bytes = DRIVER_TEXT_BYTES + 1  # containment_check.texts_on_driver: too much text for the driver

    spec = VerifySpec(0.8, min_containment=0.9)
    # the premises: the framed copies hold their article on the texts, the copy of a framed copy holds it, the
    # other text does not
    assert texts_confirm([FRAMED, FRAMED2, FRAMED2, OTHER + " Seven."], [ARTICLE, ARTICLE2, FRAMED2_AGAIN, ARTICLE],
                         spec, similar_too=False).tolist() == [True, True, True, False]
    clusters, pairs, texts = before_the_check(spark, partitions)
    rows = rows_to_compare(clusters, pairs, 6, lambda df: df.localCheckpoint())
    proposals, n_proposals, n_lone = lone_proposals(rows, pairs, lambda df: df.localCheckpoint())
    # 2 -> kept pages 1 and 40; 7 -> 1; 21 -> 20 (alone, first in keep order); 22 -> 21; none for 20 (21 comes
    # after it) and 30 (its partner is in an earlier run's cluster)
    got = sorted((r["id"], r["kept"], r["alone"]) for r in proposals.collect())
    assert got == [(2, 1, False), (2, 40, False), (7, 1, False), (21, 20, True), (22, 21, True)]
    assert (n_proposals, n_lone) == (5, 4)
    with caplog.at_level("INFO", logger="simhash_dedup"):
        out, joined = joined_on_texts(clusters.drop("by_containment", "rank", "short_text"), proposals, n_proposals,
                                      n_lone, texts, spec, lambda df: df.cache(), text_bytes)
    assert ("on the driver" if where == "driver" else "in Spark") in caplog.text
    assert joined == JoinedOnTexts(alone_compared=4, joined_on_texts=2)
    assert out.columns == ["id", "fingerprint", "cluster_id", "is_duplicate", "signature", "kept_fp", "similarity"]
    got = out.toPandas().set_index("id").sort_index()
    # 2 joins cluster 1 (before 40 in keep order), 21 joins 20; 22 holds with 21, which joined another page,
    # so it stays alone (no chains); 7's texts do not hold
    want = {1: (1, False), 10: (1, True), 40: (40, False), 41: (40, True), 2: (1, True), 7: (7, False),
            20: (20, False), 21: (20, True), 22: (22, False), 30: (30, False), 9: (900, True)}
    assert {i: (int(r["cluster_id"]), bool(r["is_duplicate"])) for i, r in got.iterrows()} == want
    assert got.loc[2, "kept_fp"] == 101 and got.loc[21, "kept_fp"] == 120
    bits = SignatureSpec().bits
    assert got.loc[2, "similarity"] == pytest.approx(float(similarity(S1, S2, bits)))
    assert got.loc[21, "similarity"] == pytest.approx(float(similarity(S1_NEAR, S2, bits)))
    assert pd.isna(got.loc[22, "similarity"]) and got.loc[9, "similarity"] == 0.9


@pytest.mark.spark
@pytest.mark.parametrize("case", ["check", "pages alone"])
@pytest.mark.parametrize("order", ["id", "reversed"])
def test_both_steps_on_the_driver_equal_the_steps_in_spark(spark, case, order, monkeypatch):
    """text_steps_on_driver (a small run: rows, pairs and texts collected, the rules in Python) gives the clusters
    and counts of checked_containment then joined_on_texts in Spark (every side taken as large), on the resolve
    results above: the pages whose texts do not hold leave and cluster again; the pages alone join the first
    cluster whose kept page holds them; in keep order by id and in a keep order of two fields that is not the ids'
    (the collected rows' ranks are dicts: their values, not their field names, order them)."""
    from simhash_udf.core.verified import lone_proposal_rows
    from simhash_udf.spark import containment_check, joins
    from simhash_udf.spark.containment_check import (
        checked_containment,
        joined_on_texts,
        lone_proposals,
        pages_to_check,
        rows_to_compare,
        text_steps_on_driver,
    )

    spec = VerifySpec(0.8, min_containment=0.9)
    if case == "check":
        (clusters, texts), pairs, n_pairs = resolved(spark, 3, order), None, 0
    else:
        clusters, pairs, texts = before_the_check(spark, 3, order)
        n_pairs = 6
    rows = rows_to_compare(clusters, pairs, n_pairs, lambda df: df)
    table = rows.toArrow()
    on_driver = text_steps_on_driver(clusters, table, pairs.toArrow() if pairs is not None else None, texts, spec)
    if pairs is not None and order == "id":  # the proposals' rule in Python, against the expected ones (the test above)
        got = [(p[0], p[1], p[4]) for p in lone_proposal_rows(table.to_pylist(), pairs.toPandas().itertuples(index=False))]
        assert got == [(2, 1, False), (2, 40, False), (7, 1, False), (21, 20, True), (22, 21, True)]
    monkeypatch.setattr(joins, "BROADCAST_MAX_ROWS", -1)
    monkeypatch.setattr(containment_check, "DRIVER_TEXT_PROPOSALS", -1)  # texts_on_driver: too many proposals
    flagged, n_flagged = pages_to_check(rows)
    out, check = checked_containment(clusters, flagged, n_flagged, texts, spec, lambda df: df.cache())
    joined = None
    if pairs is not None:
        proposals, n_proposals, n_lone = lone_proposals(rows, pairs, lambda df: df.localCheckpoint())
        out, joined = joined_on_texts(out, proposals, n_proposals, n_lone, texts, spec, lambda df: df.cache())
    assert on_driver[1] == check and (joined is None or on_driver[2] == joined)
    assert (check.left_cluster > 0) if case == "check" else (joined.joined_on_texts > 0)
    assert on_driver[0].columns == out.columns
    pd.testing.assert_frame_equal(on_driver[0].toPandas().sort_values("id").reset_index(drop=True),
                                  out.toPandas().sort_values("id").reset_index(drop=True))


def test_few_proposals_over_little_text_are_compared_on_the_driver(monkeypatch):
    """texts_on_driver: within both bounds only, and never for a number not known (negative)."""
    from simhash_udf.spark import containment_check
    from simhash_udf.spark.containment_check import texts_on_driver

    monkeypatch.setattr(containment_check, "DRIVER_TEXT_PROPOSALS", 10)
    monkeypatch.setattr(containment_check, "DRIVER_TEXT_BYTES", 1000)
    assert texts_on_driver(0, 0) and texts_on_driver(10, 1000)
    assert not texts_on_driver(11, 0) and not texts_on_driver(10, 1001)
    assert not texts_on_driver(-1, 0) and not texts_on_driver(5, -1)


@pytest.mark.spark
def test_texts_of_gives_the_texts_of_the_ids_and_their_utf8_bytes(spark):
    """texts_of: the rows of the ids asked for (from several frames, repeated), and the UTF-8 bytes of their
    texts (a Han character is 3; a null text none)."""
    from simhash_udf.spark.containment_check import texts_of

    texts = spark.createDataFrame([(1, "abc"), (2, "重复的"), (3, "never asked"), (4, None)], "id long, text string")
    a = spark.createDataFrame([(1,), (2,)], "x long")
    b = spark.createDataFrame([(2,), (4,)], "y long")
    got, n_bytes = texts_of(texts, [a, b], 4, lambda df: df.cache())
    assert sorted((r["id"], r["text"]) for r in got.collect()) == [(1, "abc"), (2, "重复的"), (4, None)]
    assert n_bytes == 3 + 9
