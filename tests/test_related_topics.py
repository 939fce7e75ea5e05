"""The topic-labelled check of related lists (evaluation.related_topics): man pages labelled by their Debian
package; related lists of the default fingerprint score well above chance on them, and the same check fails
when the labels say nothing (shuffled)."""
import gzip
import os

import numpy as np
import pandas as pd
import pytest

from simhash_udf.evaluation.related_topics import (
    chance_precision,
    man_page_packages,
    same_topic_precision,
    topic_pages,
)
from simhash_udf.job.api import related_pages

PACKAGES = ("git-man", "openssl", "systemd", "iproute2", "coreutils", "libxt-dev", "passwd", "e2fsprogs")


def test_same_topic_precision_counts_rows_of_one_topic():
    topics = pd.Series(["a", "a", "b", "b", "b"], index=[10, 11, 12, 13, 14])
    related = pd.DataFrame({"id": [10, 10, 12, 13], "related_id": [11, 12, 13, 14], "rank": [1, 2, 1, 1]})
    got = same_topic_precision(related, topics)
    assert got == {"precision": 0.75, "pages_with_related": 3, "rows": 4, "chance": (2 * 1 + 3 * 2) / (5 * 4)}
    assert same_topic_precision(related, topics, 1)["precision"] == 1.0
    assert chance_precision(pd.Series(["a"])) == 0.0


def test_topic_pages_label_man_pages_by_package(tmp_path):
    """Pages of a package with enough distinct, long-enough pages, labelled by it; stubs and copies dropped."""
    owner = {}
    for package, count in (("big", 4), ("small", 1)):
        for i in range(count):
            path = tmp_path / f"{package}{i}.1.gz"
            with gzip.open(path, "wt") as fh:
                fh.write(f".TH X 1\n.PP\n{package} page {'abcd'[i]} " + "words of prose " * 50 + "\n")  # digits fold
            owner[str(path)] = package
    stub = tmp_path / "stub.1.gz"
    with gzip.open(stub, "wt") as fh:
        fh.write(".so man1/big0.1\n")
    owner[str(stub)] = "big"
    pages = topic_pages(owner, per_topic=10, min_per_topic=2, min_chars=100)
    assert pages["topic"].tolist() == ["big"] * 4 and pages["id"].tolist() == [0, 1, 2, 3]


@pytest.mark.skipif(not os.path.isdir("/var/lib/dpkg/info"), reason="needs installed Debian man pages")
def test_related_lists_of_the_default_fingerprint_share_topics_and_the_check_can_fail(spark):
    """On man pages of eight packages the default fingerprint's related lists (N = 5, D = 14) are mostly of
    the page's own package, several times chance; with the labels shuffled the same check fails."""
    owner = {path: package for path, package in man_page_packages().items() if package in PACKAGES}
    pages = topic_pages(owner, per_topic=12)
    if pages["topic"].nunique() < 4:
        pytest.skip("fewer than four of the packages are installed")
    topics = pages.set_index("id")["topic"]
    result = related_pages(spark.createDataFrame(pages[["id", "text"]]), n=5, distance=14)
    related = result.related.select("id", "related_id", "rank").toPandas()
    result.unpersist()

    def passes(labels: pd.Series) -> bool:
        got = same_topic_precision(related, labels)
        return got["rows"] >= 20 and got["precision"] >= max(0.3, 3 * got["chance"])

    assert passes(topics)
    shuffled = pd.Series(np.random.default_rng(1).permutation(topics.to_numpy()), index=topics.index)
    assert not passes(shuffled)
