"""Host-repeated lines (simhash_udf/evaluation/host_lines.py) against a brute-force count in Python."""
from __future__ import annotations

import random

from simhash_udf.core.text import normalize_text
from simhash_udf.evaluation.host_lines import without_host_repeated_lines

LINES = ["Home | News | Sports", "HOME | news | sports", "© 2024 Site. All rights reserved.", "Popular this week",
         "A sentence of prose that is this page's own.", "Another line of 12 words", "Another line of 99 words",
         "", "   ", "一个中文句子，在这个网站上。", "一个中文句子,在这个网站上."]


def reference(pages: list[tuple[int, str, str]], min_pages: int, edges_only: bool = False) -> dict[int, tuple[str, int]]:
    """id -> (text without host-repeated lines, characters removed), by counting every line of every page;
    edges_only: only the repeated and blank lines before the page's first own line and after its last."""
    on_pages: dict[tuple[str, str], set[int]] = {}
    for pid, host, text in pages:
        for line in text.split("\n"):
            if normalize_text(line):
                on_pages.setdefault((host, normalize_text(line)), set()).add(pid)
    out = {}
    for pid, host, text in pages:
        lines = text.split("\n")
        own = [i for i, ln in enumerate(lines)
               if normalize_text(ln) and len(on_pages[(host, normalize_text(ln))]) < min_pages]
        if edges_only:
            keep = lines[own[0]: own[-1] + 1] if own else []
        else:
            keep = [ln for ln in lines if not normalize_text(ln) or len(on_pages[(host, normalize_text(ln))]) < min_pages]
        if not own:  # only repeated lines: the page stays whole
            out[pid] = (text, 0)
        else:
            out[pid] = ("\n".join(keep), len(text) - len("\n".join(keep)))
    return out


def random_pages(seed: int, n: int) -> list[tuple[int, str, str]]:
    rng = random.Random(seed)
    pages = []
    for pid in range(n):
        own = [f"page {pid} says {rng.random()}"] if rng.random() < 0.8 else []
        lines = [rng.choice(LINES) for _ in range(rng.randint(0, 6))] + own
        rng.shuffle(lines)
        pages.append((pid, f"h{rng.randrange(3)}", "\n".join(lines)))
    return pages


def test_repeated_lines_match_a_brute_force_count(spark):
    pages = random_pages(1, 120)
    df = spark.createDataFrame(pages, "id long, host string, text string")
    for min_pages, edges_only in ((2, False), (3, False), (10, False), (2, True), (3, True)):
        want = reference(pages, min_pages, edges_only)
        got = {r["id"]: (r["text"], r["removed_chars"])
               for r in without_host_repeated_lines(df, min_pages, edges_only=edges_only).collect()}
        assert got == want, (min_pages, edges_only)
        assert any(removed for _, removed in want.values()) and any(not removed for _, removed in want.values())
    assert reference(pages, 3, True) != reference(pages, 3, False)


def test_same_result_whatever_the_partitioning(spark):
    pages = random_pages(2, 80)
    df = spark.createDataFrame(pages, "id long, host string, text string")
    one = sorted(without_host_repeated_lines(df.coalesce(1), 3).collect())
    many = sorted(without_host_repeated_lines(df.repartition(7, "text"), 3).collect())
    assert one == many and len(one) == len(pages)


def test_a_frame_is_dropped_on_its_host_only(spark):
    frame = "Site Hub - news\nHome | News\n{}\n© 2024 Site Hub"
    own = ["an article", "another article", "a third article"]  # (digits would normalise alike)
    pages = [(i, "a", frame.format(own[i])) for i in range(3)] + [(9, "b", frame.format("lone page"))]
    got = {r["id"]: r["text"] for r in without_host_repeated_lines(
        spark.createDataFrame(pages, "id long, host string, text string"), 3).collect()}
    assert got[0] == "an article" and got[9] == pages[3][2]
    middle = [(i, "a", f"Home | News\n{own[i]}\n© 2024 Site Hub\nthe end of {own[i]}") for i in range(3)]
    got = {r["id"]: r["text"] for r in without_host_repeated_lines(
        spark.createDataFrame(middle, "id long, host string, text string"), 3, edges_only=True).collect()}
    assert got[1] == "another article\n© 2024 Site Hub\nthe end of another article"
