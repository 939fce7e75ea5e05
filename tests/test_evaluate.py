"""scripts/evaluate.py: the Jaccard oracle's pairs equal brute force, and the metrics on a hand-checked case."""
import os
import sys

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))

from evaluate import evaluate, jaccard, shingles, similar_pairs  # noqa: E402

WORDS = ["北京", "新闻", "发布会", "城市", "规划", "alpha", "beta", "gamma", "delta", " ", "，", "。"]
base_text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=30).map("".join)


@st.composite
def corpora(draw):
    """Small corpora with many near pairs: texts and copies of them with a few edits."""
    texts = draw(st.lists(base_text, min_size=1, max_size=8))
    for t in list(texts):
        if draw(st.booleans()):
            cut = draw(st.integers(0, len(t)))
            texts.append(t[:cut] + draw(st.sampled_from(WORDS)) + t[cut:])
    return texts


def python_shingles(text, n=5):
    from simhash_udf.text import normalize_text

    t = normalize_text(text)
    return {t} if 0 < len(t) <= n else {t[i : i + n] for i in range(len(t) - n + 1)}


@settings(max_examples=100, deadline=None)
@given(corpora(), st.sampled_from([0.5, 0.8, 0.9]))
def test_similar_pairs_equal_brute_force(texts, threshold):
    sets = [shingles(t) for t in texts]
    for t, s in zip(texts, sets):
        assert len(s) == len(python_shingles(t))
    expect = {}
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            a, b = python_shingles(texts[i]), python_shingles(texts[j])
            if a or b:
                jac = len(a & b) / len(a | b)
                if jac >= threshold and a and b:
                    expect[(i, j)] = jac
    got = similar_pairs(sets, threshold)
    assert set(got) == set(expect)
    for key, jac in got.items():
        assert abs(jac - expect[key]) < 1e-12


def test_metrics_on_a_hand_checked_case():
    story = "北京今天举行新闻发布会，介绍城市规划的最新进展和下一步安排。" * 20
    other = "The quick brown fox jumps over the lazy dog near the river bank today. " * 10
    docs = pd.DataFrame({
        "id": [1, 2, 3, 4],
        "text": [story, story + "广告", other, other.upper()],  # 1~2 and 3~4 (case folds) are copies
        "group": [1, 1, 3, 3],
    })
    assert jaccard(shingles(story), shingles(story + "广告")) >= 0.9
    # the job joined 1, 2 and 3; left 4 alone: one of two true pairs found; of three joined pairs, two are false
    table = evaluate(docs, {1: 1, 2: 1, 3: 1, 4: 4}, truth="group").set_index(["length", "lang"])
    row = table.loc[("all", "all")]
    assert (row["oracle_pairs"], row["oracle_found"]) == (2, 1)
    assert (row["cluster_pairs"], row["cluster_pairs_below_0.5"]) == (3, 2)
    assert np.isclose(row["recall"], 0.5) and np.isclose(row["precision"], 1 / 3)
    assert np.isclose(row["truth_recall"], 0.5) and np.isclose(row["truth_precision"], 1 / 3)
    assert table.loc[("long", "zh"), "recall"] == 1.0 and table.loc[("long", "en"), "recall"] == 0.0
