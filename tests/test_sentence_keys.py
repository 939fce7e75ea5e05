"""Longest-sentence keys and containment: the pure core against brute-force references (hypothesis), and the
Spark search on framed copies, a comment thread, an ad and a contained-but-not-a-copy page through the stages."""
import itertools
import json
import unicodedata

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_text_batch import CHARS

from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_batch
from simhash_udf.core.sentence_keys import (
    END,
    LETTER,
    LETTER_LIMIT,
    OTHER,
    SentenceKeySpec,
    char_classes,
    key_group_pairs,
    key_groups,
    longest_sentences,
    page_prose,
    sentence_key,
    sentence_keys,
    sentence_keys_and_prose,
)
from simhash_udf.core.shingles import jaccard, shingle_set
from simhash_udf.core.signature import SignatureSpec, agreeing_bins, oph_signatures, similarity
from simhash_udf.core.verified import (
    FRAME_PROSE,
    RESEMBLE,
    VerifySpec,
    adds_frame,
    contained,
    containment_estimate,
    greedy_centres,
    pairs_verify,
    texts_confirm,
    verified_centres,
)

SPEC = SentenceKeySpec(3, 5, 10)
LINE_ENDS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def is_end(c: str) -> bool:
    return c in LINE_ENDS or any(e in unicodedata.normalize("NFKC", c) for e in "。.!?;")


def is_letter(c: str) -> bool:
    return c.isalnum() and not c.isdecimal()


def brute_longest(text: str, spec: SentenceKeySpec) -> list[str]:
    """The definition one character at a time: cut at every character whose NFKC holds a sentence end (or a
    line end), count each sentence's letters, keep its letters after NFKC and lower case as its text."""
    pieces, current = [], []
    for c in text:
        if is_end(c):
            pieces.append("".join(current))
            current = []
        else:
            current.append(c)
    pieces.append("".join(current))
    best = {}
    for piece in pieces:
        letters = sum(is_letter(c) for c in piece)
        t = "".join(c for c in unicodedata.normalize("NFKC", piece).lower() if is_letter(c))
        if letters >= spec.min_chars and t:
            best[t] = max(best.get(t, 0), letters)
    return [t for t, _ in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[: spec.n]]


TEXT = st.text(alphabet=st.sampled_from(list("abcAB xyz12。.!?;\n，,！？；．中文句子长短…①_") + [
    "\u3000", "Ａ", "ß", "ﬁ", "㏂", "⒈", "\u0301", "\u2028", "\U00020000", "\U0001F600"]), max_size=120)


@settings(max_examples=300, deadline=None)
@given(text=TEXT, n=st.integers(0, 4), min_chars=st.integers(1, 8))
def test_longest_sentences_equal_brute_force(text, n, min_chars):
    spec = SentenceKeySpec(n, min_chars, 10)
    assert longest_sentences(text, spec) == brute_longest(text, spec)
    keys, offsets = sentence_keys([text], spec)
    assert keys.tolist() == [sentence_key(t) for t in brute_longest(text, spec)]


def test_character_table_equals_the_definition_on_every_code_point():
    """char_classes only scans some ranges for sentence ends, and no code point above LETTER_LIMIT for
    letters: an exhaustive scan finds no other."""
    table = char_classes()
    for c in range(0x110000):
        if 0xD800 <= c < 0xE000:
            continue
        ch = chr(c)
        want = END if is_end(ch) else LETTER if is_letter(ch) else OTHER
        got = table[c] if c < LETTER_LIMIT else OTHER
        assert got == want, hex(c)
        if 0x3400 <= c < 0xA000:  # sentence_keys takes text_batch.classify's Han of three bytes as letters
            assert (want == LETTER) == (not 0x4DC0 <= c < 0x4E00), hex(c)


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), TEXT), max_size=8))
def test_batch_keys_are_each_pages_keys(texts):
    keys, offsets = sentence_keys(texts, SPEC)
    for i, text in enumerate(texts):
        want = [] if text is None else [sentence_key(s) for s in brute_longest(text, SPEC)]
        assert keys[offsets[i]:offsets[i + 1]].tolist() == want


# Every class of character text_batch.classify tells apart (its tests' CHARS) and sentence ends of every kind: the
# sentence texts of pages without a slow character are read from the batch's letters (sentence_keys._letters).
MIXED = st.lists(st.one_of(st.sampled_from(["。", ". ", "!", "？", "；", "\n", "…", "﹒", "Ａ", "ａ", "１", "ª", "ℌ"]),
                           CHARS, st.sampled_from(["The quick brown fox ", "今天天气很好我们去公园", "ＡＢＣ ｄｅｆ"])),
                 max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), MIXED), min_size=1, max_size=8), min_chars=st.integers(1, 12))
def test_batch_keys_of_mixed_text_are_the_definitions(texts, min_chars):
    spec = SentenceKeySpec(3, min_chars, 10)
    keys, offsets = sentence_keys(pa.array(texts, pa.string()), spec)
    for i, text in enumerate(texts):
        want = [] if text is None else [sentence_key(s) for s in brute_longest(text, spec)]
        assert keys[offsets[i]:offsets[i + 1]].tolist() == want


# Sentences that tie on letters and share the first 16 bytes of their texts (or all of them), repeated, with a
# slow character, Han beyond the BMP, cutting characters of one to four bytes and pages that end without one:
# the batch's order of candidates in numpy (letters, then the texts' first 16 bytes) and its way out to _chosen.
SENTENCES = st.sampled_from(["abcdefghijklmnopqrstu", "abcdefghijklmnopqrstv", "ABCDEFGHIJKLMNOPQRSTU",
                             "uabcdefghijklmnopqrst", "今天天气很好我们去公园散步", "ｂｃｄｅｆｇｈｉｊｋｌｍｎ", "mnopqrstuvwxy",
                             "ééé abcdefghij", "zzzz",
                             "\U00020000\U00020001" * 4, "1234 ab", "ⓐⓑⓒ ²³ abc", "abcabc", "ABCABC", "²³²³"])
ENDS = st.sampled_from([".", "。", "！", "\n", "\x85", "\u2028", "…", "\U0001F100", ". ", ""])
TIED = st.lists(st.tuples(SENTENCES, ENDS).map("".join), max_size=10).map("".join)


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), TIED), min_size=1, max_size=6), n=st.integers(1, 4),
       min_chars=st.integers(1, 22))
def test_batch_keys_of_tied_and_repeated_sentences_are_the_definitions(texts, n, min_chars):
    spec = SentenceKeySpec(n, min_chars, 10)
    keys, offsets = sentence_keys(pa.array(texts, pa.string()), spec)
    for i, text in enumerate(texts):
        want = [] if text is None else [sentence_key(s) for s in brute_longest(text, spec)]
        assert keys[offsets[i]:offsets[i + 1]].tolist() == want


def brute_prose(text: str, min_letters: int) -> tuple[int, int, int]:
    """page_prose one character at a time: the letters of the sentences of at least min_letters letters, and
    the UTF-8 bytes before the first of them and after the last (the page's bytes for both without one)."""
    sentences, start = [], 0  # (letters, first character, end) of each sentence
    for at, c in enumerate(text + "\n"):
        if is_end(c):
            sentences.append((sum(is_letter(x) for x in text[start:at]), start, at))
            start = at + 1
    prose = [s for s in sentences if s[0] >= min_letters]
    size = len(text.encode("utf-8"))
    if not prose:
        return 0, size, size
    return (sum(s[0] for s in prose), len(text[:prose[0][1]].encode("utf-8")),
            len(text[prose[-1][2]:].encode("utf-8")))


@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.one_of(st.none(), TEXT, MIXED), min_size=1, max_size=8), min_chars=st.integers(1, 12),
       prose_min=st.integers(1, 12))
def test_batch_prose_is_each_pages_and_leaves_the_keys_alone(texts, min_chars, prose_min):
    """sentence_keys_and_prose: each page's page_prose is the definition (brute_prose), whatever the keys'
    minimum, and the keys are sentence_keys' (with keys off too)."""
    for spec in (SentenceKeySpec(3, min_chars, 10), SentenceKeySpec(0, min_chars, 10)):
        keys, offsets, prose = sentence_keys_and_prose(pa.array(texts, pa.string()), spec, prose_min=prose_min)
        want_keys, want_offsets = sentence_keys(texts, spec)
        assert keys.tolist() == want_keys.tolist() and offsets.tolist() == want_offsets.tolist()
        for i, text in enumerate(texts):
            if text is not None:
                assert tuple(prose[i]) == brute_prose(text, prose_min) == page_prose(text, prose_min)
    assert sentence_keys_and_prose(texts, SPEC)[2] is None


def test_a_frame_adds_no_prose_and_wraps_the_page():
    """A site frame (a header, a menu and link lines above, a footer below) leaves a page's prose letters as
    they are and adds to its lead and tail; a run of paragraphs adds prose letters."""
    article = _article(np.random.default_rng(3), 6)
    letters, lead, tail = page_prose(article, 40)
    framed = f"Example site - news and more\nHome | News | About\nPopular this week\n\n{article}\n\nMore from us\n© 2020"
    assert page_prose(framed, 40)[0] == letters and page_prose(framed, 40)[1] > lead and page_prose(framed, 40)[2] > tail
    run = f"{_article(np.random.default_rng(4), 3)}\n\n{article}"
    assert page_prose(run, 40)[0] > FRAME_PROSE * letters


def test_keys_ignore_punctuation_width_digits_and_case():
    zh = "今天天气很好，我们去公园散步吧。公园里有很多人在跑步和打太极拳！晚上我们一起回家"
    assert sentence_keys([zh], SPEC)[0].tolist() == sentence_keys(
        [zh.replace("，", ",").replace("。", ".").replace("！", "!")], SPEC)[0].tolist()
    en = "The Quick brown fox jumps over 12 lazy dogs; it was seen at 3 pm.\nMenu"
    assert sentence_keys([en], SPEC)[0].tolist() == sentence_keys(
        [en.upper().replace("12", "7").replace(";", "；")], SPEC)[0].tolist()
    assert len(sentence_keys([zh], SPEC)[0]) == 3  # 。 ！ and the line's end cut the page into three sentences


def test_a_framed_copy_shares_its_originals_longest_sentences():
    article = ("Rivers carry sediment from the mountains down to the sea over many centuries. "
               "Engineers measure the flow at gauging stations along the banks every hour. "
               "The data show that floods have become more frequent in the last decade. Short one.")
    frame = "Home | News | About\nSign in\n" + article + "\nCopyright ExampleSite\nPrivacy | Terms"
    keys_a, keys_b = set(sentence_keys([article], SentenceKeySpec())[0]), set(sentence_keys([frame], SentenceKeySpec())[0])
    assert keys_a == keys_b and len(keys_a) == 3


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(0, 12), st.integers(0, 6)), max_size=60), max_group=st.integers(2, 6))
def test_key_group_pairs_equal_all_pairs_sharing_a_small_key(rows, max_group):
    fps = np.array([r[0] for r in rows], dtype=np.int64)
    keys = np.array([r[1] for r in rows], dtype=np.int64)
    a, b, skipped, groups = key_group_pairs(fps, keys, max_group)
    holders = {}
    for fp, key in rows:
        holders.setdefault(key, set()).add(fp)
    want = set()
    for members in holders.values():
        if len(members) <= max_group:
            want |= {(x, y) for x in members for y in members if x < y}
    assert set(zip(a.tolist(), b.tolist())) == want and len(a) == len(want)
    assert skipped == sum(len(m) > max_group for m in holders.values())
    assert groups == sum(2 <= len(m) <= max_group for m in holders.values())


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.integers(-3, 12), st.integers(-2, 6)), max_size=80), max_group=st.integers(2, 6),
       max_pairs=st.integers(-1, 40))
def test_key_groups_on_the_driver_equal_the_reference(rows, max_group, max_pairs):
    """The driver's whole-array search gives key_group_pairs' pairs and counts, the rows of the skipped keys, and
    None exactly when its groups hold more than max_pairs pairs."""
    fps = np.array([r[0] for r in rows], dtype=np.int64)
    keys = np.array([r[1] for r in rows], dtype=np.int64)
    a, b, skipped, groups = key_group_pairs(fps, keys, max_group)
    holders = {}
    for fp, key in set(rows):
        holders.setdefault(key, set()).add(fp)
    in_groups = sum(len(m) * (len(m) - 1) // 2 for m in holders.values() if len(m) <= max_group)
    got = key_groups(fps, keys, max_group, max_pairs)
    if 0 <= max_pairs < in_groups:
        assert got is None
        return
    assert got.a.tolist() == a.tolist() and got.b.tolist() == b.tolist()
    assert (got.counts.keys, got.counts.groups, got.counts.skipped_keys) == (len(holders), groups, skipped)
    assert got.counts.skipped_fingerprints == sum(len(m) for m in holders.values() if len(m) > max_group)


@settings(max_examples=300, deadline=None)
@given(a=st.sets(st.integers(0, 60), max_size=40), b=st.sets(st.integers(0, 60), max_size=40))
def test_containment_estimate_is_exact_from_the_exact_jaccard(a, b):
    union = a | b
    j = len(a & b) / len(union) if union else 1.0
    want = len(a & b) / min(len(a), len(b)) if min(len(a), len(b)) else 1.0
    assert containment_estimate(j, len(a), len(b)) == pytest.approx(want, abs=1e-9)


def _signatures(sets):
    hashes = [np.array(sorted(s), dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15) for s in sets]
    offsets = np.r_[0, np.cumsum([len(h) for h in hashes])]
    return oph_signatures(np.concatenate(hashes), offsets, SignatureSpec())[0]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), small=st.integers(200, 600), share=st.floats(0.5, 1.0),
       extra=st.floats(0.0, 1.0))
def test_containment_from_signatures_is_near_the_exact(seed, small, share, extra):
    rng = np.random.default_rng(seed)
    universe = rng.permutation(10 * small + 10_000)
    a = set(universe[:small].tolist())
    inside = int(share * small)
    b = set(universe[:inside].tolist()) | set(universe[small:small + int(extra * small) + (small - inside)].tolist())
    sigs = _signatures([a, b])
    est = containment_estimate(similarity(sigs[0], sigs[1], 8), len(a), len(b))
    exact = len(a & b) / min(len(a), len(b))
    # the estimate's standard error: 128 bins estimate J with sqrt(J (1 - J) / 128), which the containment
    # estimate multiplies by (s + l) / ((1 + J)^2 s); 0.03-0.07 here, and five of them (a fixed 0.2, four errors
    # of 0.05, failed at a random example with an error of 0.068: 0.21)
    j = len(a & b) / len(a | b)
    error = np.sqrt(j * (1 - j) / 128) * (len(a) + len(b)) / ((1 + j) ** 2 * min(len(a), len(b)))
    assert abs(est - exact) < 5 * error + 0.01


@settings(max_examples=300, deadline=None)
@given(agree=st.integers(0, 128), n_a=st.integers(-1, 300), n_b=st.integers(-1, 300),
       c=st.sampled_from([0.0, 0.8, 0.9, 1.0]), r=st.sampled_from([1.0, 1.5, 2.0]))
def test_contained_is_the_estimate_over_the_threshold_within_the_size_bound(agree, n_a, n_b, c, r):
    spec = VerifySpec(0.8, min_containment=c, max_size_ratio=r)
    got = bool(contained(np.array([agree]), n_a, n_b, spec)[0])
    small, large = min(n_a, n_b), max(n_a, n_b)
    j = max(0.0, (agree / 128 - 2**-8) / (1 - 2**-8))
    if c == 0 or small <= 0 or large > r * small:
        assert not got
        return
    est = containment_estimate(j, n_a, n_b)
    if abs(est - c) > 1e-6:  # away from a tie, the rule is the estimate over the threshold
        assert got == (est >= c)


@settings(max_examples=200, deadline=None)
@given(agree=st.integers(0, 128), n=st.integers(1, 300), size_a=st.integers(-1, 3000), size_b=st.integers(-1, 3000))
def test_the_size_bound_is_on_the_characters_when_given(agree, n, size_a, size_b):
    spec = VerifySpec(0.8, min_containment=0.5, max_size_ratio=1.6)
    got = bool(contained(np.array([agree]), n, n, spec, size_a, size_b)[0])
    within = min(size_a, size_b) > 0 and max(size_a, size_b) <= 1.6 * min(size_a, size_b)
    assert got == (within and bool(contained(np.array([agree]), n, n, spec)[0]))


def test_pairs_verify_is_similarity_or_bounded_containment():
    spec = VerifySpec(0.8, min_containment=0.9, max_size_ratio=1.6)
    base = set(range(1000))
    framed = base | set(range(5000, 5400))  # the page plus a frame of 40% more features
    anthology = base | set(range(5000, 8000))  # the page inside a page four times its size
    unrelated = set(range(9000, 10000))
    sigs = _signatures([base, framed, anthology, unrelated])
    counts = np.array([len(base), len(framed), len(anthology), len(unrelated)])
    ok, by_containment = pairs_verify(sigs[[0, 0, 0]], sigs[[1, 2, 3]], counts[[0, 0, 0]], counts[[1, 2, 3]], spec)
    assert ok.tolist() == [True, False, False] and by_containment.tolist() == [True, False, False]
    off = VerifySpec(0.8, min_containment=0.0)
    assert pairs_verify(sigs[[0]], sigs[[1]], counts[[0]], counts[[1]], off)[0].tolist() == [False]
    assert agreeing_bins(sigs[0], sigs[1]) < spec.need  # the framed pair is not similar: containment found it


def test_feature_counts_are_the_signatures_set_sizes():
    fps, counts, sigs = fingerprint_batch(["one two three two one", "四 五 four four"], FeatureSpec(), SignatureSpec())
    assert counts.tolist() == [3, 2]


CONTAINED = VerifySpec(0.8, min_containment=0.9, max_size_ratio=1.6)


def _block_pages(rng, n: int) -> list[set]:
    """n pages made of 200-feature blocks of one small pool (runs of one page's paragraphs, frames around it),
    so that components hold similar, contained, holding and unrelated pages together."""
    pages = []
    for _ in range(n):
        start, length = int(rng.integers(0, 6)), int(rng.integers(3, 8))
        blocks = set(range(start, start + length)) | ({int(rng.integers(20, 24))} if rng.random() < 0.4 else set())
        pages.append(set().union(*(set(range(200 * b, 200 * b + 200)) for b in blocks)))
    return pages


def brute_contained_centres(sigs, counts, sizes, spec: VerifySpec, prose=None, texts=None, fixed=0) -> list[int]:
    """verified_centres with containment, one pair at a time: a centre takes the open units similar to it, and
    one only contained in it or holding it (the closest to the centre first, then keep order) when it resembles
    (verifies, or an estimated Jaccard of at least RESEMBLE) the centre and every unit taken by containment
    before; with prose, a unit that is the centre in a frame or the centre without its frame (brute_frame) is
    taken without that, and is not one of the units later ones must resemble. Two short units (texts) are
    taken or not by their shingles' Jaccard alone (a short unit the resemble rule let through is one later
    units must resemble, whatever its shingles say). The `fixed` first units take first, in order; then the
    centre is the open unit whose take would take the most of the other open units (the first in keep order
    among equals)."""

    def verify(a, b):
        ok, by = pairs_verify(sigs[[a]], sigs[[b]], counts[[a]], counts[[b]], spec, sizes[[a]], sizes[[b]])
        return bool(ok[0]), bool(by[0])

    def resemble(a, b):
        return verify(a, b)[0] or similarity(sigs[a], sigs[b], spec.signature.bits) >= RESEMBLE

    def take(c, others) -> list[int]:
        taken, by_containment = [], [c]
        for u in sorted(others, key=lambda u: -agreeing_bins(sigs[u], sigs[c]) if verify(u, c)[1] else 0):
            ok, by = verify(u, c)
            framed = by and prose is not None and brute_frame(prose, sizes, u, c)
            joins = ok and (not by or framed or all(resemble(u, m) for m in by_containment))
            if joins and by and not framed:
                by_containment.append(u)
            if texts is not None and texts[u] is not None and texts[c] is not None:
                joins = jaccard(shingle_set(texts[u], spec.short_ngram),
                                shingle_set(texts[c], spec.short_ngram)) >= spec.short_min_jaccard
            if joins:
                taken.append(u)
        return taken

    centre, open_ = list(range(fixed)) + [-1] * (len(sigs) - fixed), list(range(fixed, len(sigs)))
    for c in range(fixed):
        for u in take(c, open_):
            centre[u] = c
        open_ = [u for u in open_ if centre[u] < 0]
    while open_:
        joined = [len(take(a, [b for b in open_ if b != a])) for a in open_]
        c = open_[joined.index(max(joined))]
        centre[c] = c
        for u in take(c, [b for b in open_ if b != c]):
            centre[u] = c
        open_ = [u for u in open_ if centre[u] < 0]
    return centre


def brute_frame(prose, sizes, a: int, b: int) -> bool:
    """adds_frame of one pair: the larger (by characters; a when equal) has the smaller's prose letters or
    at most FRAME_PROSE times them (the smaller having some), and more before its first prose sentence and
    after its last."""
    large, small = (a, b) if sizes[a] >= sizes[b] else (b, a)
    (l_letters, l_lead, l_tail), (s_letters, s_lead, s_tail) = prose[large], prose[small]
    known = min(*prose[large], *prose[small]) >= 0
    return bool(known and 0 < s_letters and l_letters <= FRAME_PROSE * s_letters and l_lead > s_lead
                and l_tail > s_tail)


@settings(max_examples=300, deadline=None)
@given(prose=st.lists(st.tuples(*[st.integers(-1, 4)] * 3), min_size=2, max_size=2),
       sizes=st.lists(st.integers(1, 3), min_size=2, max_size=2))
def test_adds_frame_is_the_definition(prose, sizes):
    prose, sizes = np.array(prose) * np.array([100, 1, 1]), np.array(sizes)
    prose[prose < 0] = -1
    for a, b in ((0, 1), (1, 0)):
        assert adds_frame(prose, sizes, np.array([a]), np.array([b]))[0] == brute_frame(prose, sizes, a, b)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9))
def test_contained_centres_with_prose_equal_the_definition(seed, n):
    """With the units' prose known, verified_centres is the definition (brute_contained_centres with prose) and
    greedy_centres gives each component what verified_centres gives it alone; every removed unit verifies with
    its centre."""
    rng = np.random.default_rng(seed)
    pages, prose = [], []
    for _ in range(n):  # paragraph blocks of one page (100 letters each) and sites' frames (no prose letters)
        start, length = int(rng.integers(0, 3)), int(rng.integers(4, 7))
        page = set(range(200 * start, 200 * (start + length)))
        wraps = int(rng.integers(0, 4)) if rng.random() < 0.6 else 0  # a frame above (1), below (2), both (3)
        if wraps:  # one of four sites' frames, 0.55 of the page: two framed copies of it have a Jaccard of 0.48
            site = int(rng.integers(1, 5))
            page |= set(range(10_000 * site, 10_000 * site + 110 * length))
        pages.append(page)
        prose.append((100 * length, 10 + 50 * (wraps & 1), 10 + 25 * (wraps & 2)))
    prose = np.array(prose)
    sigs = _signatures(pages)
    counts = np.array([len(p) for p in pages])
    sizes = counts * 6
    centre = verified_centres(sigs, None, CONTAINED, counts=counts, sizes=sizes, prose=prose)
    assert centre.tolist() == brute_contained_centres(sigs, counts, sizes, CONTAINED, prose)
    assert greedy_centres(np.r_[sigs, sigs], np.array([0, n, 2 * n]), CONTAINED, np.r_[counts, counts],
                          np.r_[sizes, sizes], np.r_[prose, prose]).tolist() == centre.tolist() + (centre + n).tolist()
    for u, c in enumerate(centre):
        assert centre[c] == c
        if u != c:
            assert pairs_verify(sigs[[u]], sigs[[c]], counts[[u]], counts[[c]], CONTAINED, sizes[[u]], sizes[[c]])[0][0]


@settings(max_examples=80, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9))
def test_contained_centres_equal_the_definition_and_keep_the_promise(seed, n):
    """With containment on, verified_centres is the definition (brute_contained_centres), greedy_centres
    gives each component what verified_centres gives it alone, every removed unit verifies with (is similar
    to, inside or holding within the bound) its centre, and two units joined to one centre by containment
    resemble each other."""
    rng = np.random.default_rng(seed)
    pages = _block_pages(rng, n)
    sigs = _signatures(pages)
    counts = np.array([len(p) for p in pages])
    sizes = counts * rng.integers(5, 7, n)
    centre = verified_centres(sigs, None, CONTAINED, counts=counts, sizes=sizes)
    assert centre.tolist() == brute_contained_centres(sigs, counts, sizes, CONTAINED)
    assert greedy_centres(np.r_[sigs, sigs], np.array([0, n, 2 * n]), CONTAINED, np.r_[counts, counts],
                          np.r_[sizes, sizes]).tolist() == centre.tolist() + (centre + n).tolist()
    for u, c in enumerate(centre):
        assert centre[c] == c
        if u != c:
            assert pairs_verify(sigs[[u]], sigs[[c]], counts[[u]], counts[[c]], CONTAINED, sizes[[u]], sizes[[c]])[0][0]
    joined = [u for u, c in enumerate(centre) if u != c and pairs_verify(
        sigs[[u]], sigs[[c]], counts[[u]], counts[[c]], CONTAINED, sizes[[u]], sizes[[c]])[1][0]]
    for a in joined:
        for b in joined:
            if a < b and centre[a] == centre[b]:
                assert (pairs_verify(sigs[[a]], sigs[[b]], counts[[a]], counts[[b]], CONTAINED, sizes[[a]],
                                     sizes[[b]])[0][0] or similarity(sigs[a], sigs[b], 8) >= RESEMBLE)


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 9), fixed=st.integers(0, 2))
def test_contained_centres_with_short_texts_and_earlier_clusters_equal_the_definition(seed, n, fixed):
    """With short texts (two short units: their shingles decide, whatever their signatures say) and earlier
    clusters' kept pages (the fixed first units), verified_centres is the definition; every removed unit
    verifies with its centre (two short ones: by their shingles)."""
    rng = np.random.default_rng(seed)
    fixed = min(fixed, n)
    pages = _block_pages(rng, n)
    sigs = _signatures(pages)
    counts = np.array([len(p) for p in pages])
    sizes = counts * rng.integers(5, 7, n)
    words = ["alpha beta gamma delta", "alpha beta gamma delta epsilon", "zeta eta theta iota kappa"]
    texts = [words[int(rng.integers(0, 3))] if rng.random() < 0.5 else None for _ in range(n)]
    centre = verified_centres(sigs, texts, CONTAINED, fixed, counts=counts, sizes=sizes)
    assert centre.tolist() == brute_contained_centres(sigs, counts, sizes, CONTAINED, texts=texts, fixed=fixed)
    for u, c in enumerate(centre):
        assert centre[c] == c
        if u != c and texts[u] is not None and texts[c] is not None:
            assert jaccard(shingle_set(texts[u]), shingle_set(texts[c])) >= CONTAINED.short_min_jaccard
        elif u != c:
            assert pairs_verify(sigs[[u]], sigs[[c]], counts[[u]], counts[[c]], CONTAINED, sizes[[u]], sizes[[c]])[0][0]


@pytest.mark.parametrize("order", [(0, 1, 2, 3), (1, 0, 3, 2), (3, 2, 1, 0), (2, 3, 0, 1)])
def test_two_runs_of_one_page_are_not_merged_through_it(order):
    """A page of ten paragraphs, two runs of seven of them (inside the page within the bound, sharing four:
    Jaccard 0.4) and the page in a site's frame: whatever the keep order, the framed copy joins the page
    and the two runs are never in one cluster."""
    block = [set(range(200 * b, 200 * b + 200)) for b in range(14)]
    page, run_a, run_b = set().union(*block[:10]), set().union(*block[:7]), set().union(*block[3:10])
    framed = page | block[11] | block[12] | block[13]
    pages = [[run_a, run_b, page, framed][i] for i in order]
    sigs = _signatures(pages)
    counts = np.array([len(p) for p in pages])
    centre = verified_centres(sigs, None, CONTAINED, counts=counts, sizes=counts * 6)
    at = {name: order.index(i) for i, name in enumerate(("a", "b", "page", "framed"))}
    assert centre[at["a"]] != centre[at["b"]]
    assert centre[at["page"]] == centre[at["framed"]]
    off = verified_centres(sigs, None, VerifySpec(0.8, min_containment=0.0), counts=counts, sizes=counts * 6)
    assert off.tolist() == list(range(4))  # none of them is similar to another: containment found the pairs


@pytest.mark.parametrize("order", list(itertools.permutations(range(5)))[::7])
def test_framed_copies_with_different_frames_join_and_two_runs_do_not(order):
    """A paragraph, two copies of it in two sites' frames, and two runs of paragraphs that hold it (one adds
    prose, one adds a title and short lines above it only): all four inside it within the bound, each two
    sharing only the paragraph (Jaccard 0.47). Whatever the keep order, both framed copies join the paragraph
    (without the units' prose, only one can), and the two runs are never in one cluster."""
    block = [set(range(200 * b, 200 * b + 200)) for b in range(23)]
    page = set().union(*block[:7])
    frame_a, frame_b, run_a, run_b = (page.union(*block[at:at + 4]) for at in (7, 11, 15, 19))
    # (letters, lead, tail): a frame adds short lines above and below, run_a prose, run_b short lines above
    prose = {0: (700, 10, 10), 1: (700, 60, 40), 2: (700, 30, 70), 3: (1100, 10, 10), 4: (700, 300, 10)}
    pages = [[page, frame_a, frame_b, run_a, run_b][i] for i in order]
    sigs = _signatures(pages)
    counts = np.array([len(p) for p in pages])
    units = np.array([prose[i] for i in order])
    at = {name: order.index(i) for i, name in enumerate(("page", "frame_a", "frame_b", "run_a", "run_b"))}
    centre = verified_centres(sigs, None, CONTAINED, counts=counts, sizes=counts * 6, prose=units)
    assert centre[at["frame_a"]] == centre[at["frame_b"]] == centre[at["page"]]
    assert centre[at["run_a"]] != centre[at["run_b"]]
    before = verified_centres(sigs, None, CONTAINED, counts=counts, sizes=counts * 6)
    assert before[at["frame_a"]] != before[at["frame_b"]] and before[at["run_a"]] != before[at["run_b"]]


@pytest.mark.parametrize("order", list(itertools.permutations(range(6)))[::37])
def test_the_centre_is_the_unit_whose_take_joins_the_most(order):
    """A page, three pages holding it (each with another added part: inside none of the others, Jaccard 0.47)
    and two edited copies of the first holder (similar to it and to each other). The page and that holder
    both verify with three units, but the page's take joins one holder only (the holders do not resemble each
    other), the holder's takes the page and both edited copies: whatever the keep order, the holder is the
    centre of all four, and the two other holders stay alone."""
    page = set(range(1000))
    holders = [page | set(range(10_000 * i, 10_000 * i + 550)) for i in (1, 2, 3)]
    edited = [holders[0] | set(range(at, at + 100)) for at in (50_000, 60_000)]
    units = [page, *holders, *edited]
    pages = [units[i] for i in order]
    sigs = _signatures(pages)
    counts = np.array([len(p) for p in pages])
    at = [order.index(i) for i in range(6)]
    centre = verified_centres(sigs, None, CONTAINED, counts=counts, sizes=counts * 6)
    assert [centre[at[i]] for i in (0, 1, 4, 5)] == [at[1]] * 4
    assert centre[at[2]] == at[2] and centre[at[3]] == at[3]


def _article(rng, sentences: int) -> str:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, rng.integers(3, 9))) for _ in range(sentences * 12)]
    out, at = [], 0
    for _ in range(sentences):
        n = int(rng.integers(8, 16))
        out.append(" ".join(words[at:at + n]).capitalize() + ".")
        at += n
    return " ".join(out)


@pytest.mark.spark
def _framed_corpus(tmp_path):
    """The pages of the whole-run tests: 8 originals, 6 of them copied into a site's frame or under comments,
    2 more pages of the site (its footer sentence a hot key at --sentence-max-group 4), an anthology of 3."""
    import pandas as pd

    rng = np.random.default_rng(5)
    originals = [_article(rng, 6) for _ in range(8)]
    footer = "Copyright example site all rights reserved under the terms of its publishing licence forever."
    rows = [(i, t) for i, t in enumerate(originals)]
    for i, t in enumerate(originals[:6]):
        framed = f"Example site\nHome | News | About\n{t}\n{footer}"
        rows.append((100 + i, framed if i % 2 else f"{t}\nComments\nann: {_article(rng, 1)}\nbob: {_article(rng, 1)}"))
    for i in range(6, 8):  # more pages of the site, so its footer key is hot
        rows.append((200 + i, f"Example site\nHome\n{_article(rng, 4)}\n{footer}"))
    rows.append((300, "\n\n".join(originals[5:8]) + "\n\n" + _article(rng, 6)))  # the anthology
    path = tmp_path / "pages.parquet"
    pd.DataFrame(rows, columns=["id", "text"]).to_parquet(path)
    return rows, path


def test_framed_copies_are_found_and_an_anthology_removes_nothing(spark, tmp_path):
    """A whole run: copies inside a site's frame (header, menu, and a footer sentence every page of the site
    shares: a key of more pages than --sentence-max-group, skipped) or with reader comments are duplicates of
    their original; an anthology that holds three originals (each far smaller than it) removes none of them;
    every duplicate is similar or contained within the size bound to its kept page."""
    import pandas as pd
    from reference import agreeing

    from simhash_udf.job.config import load_config
    from simhash_udf.job.pipeline import run

    rows, path = _framed_corpus(tmp_path)
    out = tmp_path / "out"
    run(load_config(["--input", str(path), "--output", str(out), "--sentence-max-group", "4"]), spark)
    clusters = pd.read_parquet(out / "clusters").set_index("id")
    for i in range(6):
        assert clusters.loc[100 + i, "cluster_id"] == clusters.loc[i, "cluster_id"], i
    assert not clusters.loc[[5, 6, 7, 300], "is_duplicate"].any()
    assert len(set(clusters.loc[[5, 6, 7, 300], "cluster_id"])) == 4
    report = json.loads((out / "report.json").read_text())
    keys = report["candidates"]["sentence_keys"]
    assert keys["skipped_keys"] >= 1 and keys["pairs_verified_by_containment"] >= 1
    assert set(keys["examples"]) <= {"similarity", "containment"} and "containment" in keys["examples"]
    assert_pair_search_adds_up(report, (out / "report.html").read_text(encoding="utf-8"))
    texts = dict(rows)
    spec = VerifySpec(0.8, min_containment=0.9)
    by_containment = on_texts = 0
    for i, c in clusters[clusters["is_duplicate"]]["cluster_id"].items():
        (_, n_i), (_, n_c) = (fingerprint_batch([texts[x]], FeatureSpec())[:2] for x in (i, c))
        agree = agreeing(clusters.loc[i, "signature"], clusters.loc[c, "signature"])
        if agree >= spec.need:
            continue
        # joined by containment (estimated, then checked on the texts, which hold), or alone and joined on the
        # texts: either way the texts hold
        assert texts_confirm([texts[i]], [texts[c]], spec)[0], i
        if contained(np.array([agree]), n_i[0], n_c[0], spec, len(texts[i]), len(texts[c]))[0]:
            by_containment += 1
        else:
            on_texts += 1
            assert texts_confirm([texts[i]], [texts[c]], spec, similar_too=False)[0], i
    check = report["clusters"]["containment_check"]
    assert check["left_cluster"] == 0 and check["alone_compared"] >= check["joined_on_texts"] >= on_texts
    # (a page alone that joined on the texts may also be contained by the estimate, with a page it was not near)
    assert check["checked_on_texts"] + check["joined_on_texts"] == by_containment + on_texts
    assert check["checked_on_texts"] >= 1


def assert_pair_search_adds_up(report: dict, page: str) -> None:
    """With sentence keys on, the pair search's fourth source adds up like the others: compared = verified +
    rejected per source and in all, the sums over the four sources, the sentence keys' figures those of their
    own report part, and the log's line and the page's table show the same numbers."""
    from simhash_udf.job.report_schema import PairSearch

    search, keys = report["candidates"]["pair_search"], report["candidates"]["sentence_keys"]
    sources = [search[name] for name in ("simhash_tables", "signature_bands", "short_text", "sentence_keys")
               if search.get(name) is not None]
    assert len(sources) >= 3 and search.get("sentence_keys") is not None
    for s in sources:
        assert s["compared"] == s["verified"] + s["rejected"]
    for total in ("compared", "verified", "rejected"):
        assert search[total] == sum(s[total] for s in sources)
    by_keys = search["sentence_keys"]
    assert by_keys["compared"] == keys["pairs_compared"] > 0
    assert by_keys["verified"] == keys["pairs_verified_by_similarity"] + keys["pairs_verified_by_containment"]
    assert by_keys["rejected"] == keys["pairs_rejected"]
    # each framed or commented copy's pair with its original is found by a sentence key and by another source
    # (those copies within k bits or sharing a band); no pair is counted as found twice more than it was compared
    assert 0 < search["found_by_more_than_one_source"] <= search["compared"] - max(s["compared"] for s in sources)
    line = PairSearch.from_dict(search).summary()
    assert f"sentence keys: {by_keys['compared']:,} compared = {by_keys['verified']:,} verified" in line
    assert f"all sources: {search['compared']:,} compared" in line
    assert ">sentence keys</td>" in page and f"{search['compared']:,}" in page


def test_sentence_keys_and_containment_are_on_by_default(tmp_path):
    """The defaults search the 3 longest sentences' keys and verify by containment at 0.9 within 1.6x;
    `--sentence-keys 0 --min-containment 0` turns both off (no key search, similarity alone, no keys or page
    sizes computed in the fingerprint pass: cfg.sentences None); stored fingerprints have neither."""
    from simhash_udf.job.config import load_config

    (tmp_path / "in.jsonl").write_text('{"id": 1, "text": "a"}\n')
    given = ["--input", str(tmp_path / "in.jsonl"), "--output", str(tmp_path / "out")]
    cfg = load_config(given)
    assert (cfg.sentence_keys, cfg.min_containment, cfg.max_size_ratio) == (3, 0.9, 1.6)
    assert cfg.sentences == SentenceKeySpec(3) and cfg.verify.containment
    off = load_config(given + ["--sentence-keys", "0", "--min-containment", "0"])
    assert off.sentences is None and not off.verify.containment
    stored = load_config(given + ["--input-format", "fingerprints"])
    assert stored.sentences is None and not stored.verify.containment


def test_the_search_on_the_driver_equals_the_search_in_spark(spark, tmp_path, monkeypatch):
    """A run whose keys are grouped on the driver and one whose keys are grouped by Spark's shuffles
    (DRIVER_FINGERPRINTS -1) give the same clusters and the same report of the search (counts and examples)."""
    import pandas as pd

    import simhash_udf.job.stages.sentence_keys as stage
    from simhash_udf.job.config import load_config
    from simhash_udf.job.pipeline import run

    _, path = _framed_corpus(tmp_path)
    got = {}
    for name, bound in (("driver", stage.DRIVER_FINGERPRINTS), ("spark", -1)):
        monkeypatch.setattr(stage, "DRIVER_FINGERPRINTS", bound)
        out = tmp_path / name
        report = run(load_config(["--input", str(path), "--output", str(out), "--sentence-max-group", "4",
                                  "--shuffle-partitions", "3"]), spark)
        got[name] = (pd.read_parquet(out / "clusters").sort_values("id").reset_index(drop=True),
                     report["candidates"]["sentence_keys"], report["candidates"]["pair_search"])
    pd.testing.assert_frame_equal(got["driver"][0], got["spark"][0])
    assert got["driver"][1] == got["spark"][1] and got["driver"][2] == got["spark"][2]
    assert got["driver"][1]["pairs_verified_by_containment"] >= 1 and got["driver"][1]["skipped_keys"] >= 1
