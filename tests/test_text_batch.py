"""The batch split (numpy over an Arrow batch's UTF-8 bytes) gives exactly the definition's features."""
import sys
import unicodedata

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fingerprint import PIECES, specs

from simhash_udf.core import fingerprint
from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_arrow, fingerprint_batch
from simhash_udf.core.signature import SignatureSpec
from simhash_udf.core.text import INERT_HAN, is_han_gap, normalize_chars, segmenter, tokens_auto
from simhash_udf.core.text_batch import (
    FOLD_RANGES,
    TABLE_SIZE,
    all_chars,
    fold_table,
    pages_holding_replacement_char,
    split_pages,
    white_table,
)

TABLE = [chr(cp) for cp in np.flatnonzero(fold_table() >= 0) if cp >= 128]
# Characters of every class split_pages tells apart: ASCII, Han in three and four bytes (inert and not),
# table characters (full-width forms, CJK punctuation, emoji, variation selectors), and characters that make
# a page slow (non-ASCII letters, combining marks, compatibility ideographs, characters beyond the table).
CHARS = st.one_of(
    st.characters(max_codepoint=127, codec="utf-8"),
    st.sampled_from(TABLE),
    st.sampled_from("我们的北京发展中华人民共和国今天新闻㐀䶵龥\U00020000\U0002a6d6\U0002f800\U00031340豈"),
    st.sampled_from("éßΣİ\u0301\u3099ｶﾞ\u00ad٣Ⅻ①㈠\u2f00\ufe0f\u200d😀👍🏻❤\U000e0001\U0010fffd"),
    st.characters(codec="utf-8"),
)
# Characters drawn one by one: st.text(CHARS) merges the alphabet into one set of code point ranges, and drew
# none of the Han characters above and 8 of the slow ones in 2,545 characters (300 examples).
page = st.one_of(st.sampled_from(PIECES), st.lists(CHARS, max_size=8).map("".join))  # no surrogates: UTF-8
pages = st.lists(st.one_of(st.none(), st.lists(page, max_size=12).map("".join)), min_size=1, max_size=10)


def definition(text: str, segment: str) -> set[str]:
    return set(tokens_auto(normalize_chars(text), segment, ordered=True))


def as_array(texts, large: bool, skip: int) -> pa.Array:
    """texts as a (large_)string array whose data starts inside a bigger buffer (offset != 0)."""
    padded = ["前缀 prefix"] * skip + texts
    return pa.array(padded, pa.large_string() if large else pa.string()).slice(skip)


@settings(max_examples=300, deadline=None)
@given(pages, st.sampled_from(["jieba", "rjieba"]), st.booleans(), st.integers(0, 2))
def test_split_pages_give_the_definitions_features(texts, segment, large, skip):
    array = as_array(texts, large, skip)
    han, rest, slow = split_pages(array)
    assert len(han) == len(rest) == len(slow) == len(texts)

    cut = segmenter(segment)
    for text, h, r, s in zip(texts, han, rest, slow):
        if text is None or s:
            continue
        assert r.isascii()
        got = {t for t in cut(h) if t != "\n"} | set(r.split())
        assert got == definition(text, segment), (text, h, r)


@settings(max_examples=150, deadline=None)
@given(pages, specs, st.booleans(), st.integers(0, 2))
def test_fingerprint_arrow_equals_fingerprint_batch(texts, spec, large, skip):
    fps, counts = fingerprint_arrow(as_array(texts, large, skip), spec)
    ref_fps, ref_counts = fingerprint_batch(texts, spec)
    assert fps.tolist() == ref_fps.tolist()
    assert counts.tolist() == ref_counts.tolist()


@settings(max_examples=60, deadline=None)
@given(pages)
def test_fingerprint_arrow_without_the_numpy_words_equals_fingerprint_batch(texts):
    """The way out of a hash collision between two words of a page (distinct_words gives None, never seen on real
    text): the batch takes the per-page path, the same values."""
    spec = FeatureSpec(segmenter="rjieba")
    words, fingerprint.distinct_words = fingerprint.distinct_words, lambda *args: None
    try:
        fps, counts, sigs = fingerprint_arrow(as_array(texts, False, 0), spec, SignatureSpec())
    finally:
        fingerprint.distinct_words = words
    ref_fps, ref_counts, ref_sigs = fingerprint_batch(texts, spec, SignatureSpec())
    assert fps.tolist() == ref_fps.tolist() and counts.tolist() == ref_counts.tolist()
    assert sigs.tolist() == ref_sigs.tolist()


@pytest.mark.parametrize("segment", ["jieba", "rjieba"])
def test_split_pages_cases(segment):
    texts = [
        "今天北京", "Hello，ＷＯＲＬＤ！今天是2024年。", "。开头与结尾的标点。", "汉字\n\n汉字 text 汉字",
        "", None, "naïve 咖啡", "\U00020000\U00020001 吉 😀 👍🏻 ok", "数字①②③ and Ⅻ", "a" * 5000 + "。" + "中" * 100,
    ]
    han, rest, slow = split_pages(pa.array(texts))
    assert han[0] == "今天北京" and rest[0].split() == []
    assert han[1] == "今天是\n年\n" and rest[1].split() == ["hello", "world", "0000"]
    assert han[2] == "开头与结尾的标点\n"
    assert han[3] == "汉字汉字\n汉字"  # white space between Han characters is not a boundary
    assert (han[4], rest[4]) == ("", "")
    assert slow.tolist() == [False, False, False, False, False, False, True, False, True, False]
    assert han[7] == "\U00020000\U00020001吉\n" and rest[7].split() == ["ok"]
    fps, counts = fingerprint_arrow(pa.array(texts), FeatureSpec(segmenter=segment))
    for text, n in zip(texts, counts.tolist()):
        assert n == (-1 if text is None else len(definition(text, segment)))
    assert fps.tolist() == fingerprint_batch(texts, FeatureSpec(segmenter=segment))[0].tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.lists(st.one_of(CHARS, st.sampled_from("\ufffd\uffef\uff0c\uffbd")),
                                              max_size=6).map("".join)), max_size=8), st.booleans(), st.integers(0, 2))
def test_pages_holding_replacement_char(texts, large, skip):
    """The numpy search for U+FFFD against `in`, next to characters that share its first bytes (EF BF, EF BC),
    in sliced and large string arrays, empty and null pages. (Characters drawn one by one: st.text merges an
    alphabet of character strategies into one range, where these four are rarely drawn.)"""
    assert pages_holding_replacement_char(as_array(texts, large, skip)).tolist() == [
        t is not None and "\ufffd" in t for t in texts]


def test_split_pages_edge_arrays():
    han, rest, slow = split_pages(pa.array([], pa.string()))
    assert (han, rest, len(slow)) == ([], [], 0)
    han, rest, slow = split_pages(pa.array([None, None], pa.string()))
    assert (han, rest, slow.tolist()) == (["", ""], ["", ""], [False, False])
    han, rest, slow = split_pages(pa.chunked_array([["ab 中文"], ["Ｃ"]]))
    assert (han, [r.split() for r in rest]) == (["中文", ""], [["ab"], ["c"]])
    with pytest.raises(TypeError, match="string array"):
        split_pages(pa.array([1, 2]))


def test_fold_table_is_the_definition_per_character():
    """Every table entry is what normalising that character alone gives: one ASCII letter or digit, or a
    space for a character without any word character; everything else in the ranges is left out."""
    table = fold_table()
    for lo, hi in FOLD_RANGES:
        for cp in range(lo, hi):
            char = chr(cp)
            if table[cp] < 0:
                continue
            words = tokens_auto(normalize_chars(char), "jieba")
            assert words == ([] if table[cp] == 0x20 else [chr(table[cp])]), hex(cp)
    assert table[ord("Ａ")] == ord("a") and table[ord("９")] == ord("0") and table[ord("。")] == 0x20
    assert table[ord("é")] < 0 and table[0x301] < 0 and table[ord("Ⅻ")] < 0


def test_white_table_is_the_definition_per_code_point():
    """white_table (made from all_chars in C loops) is is_han_gap of each character alone, a character a code point
    (a surrogate: never white space), for every code point below TABLE_SIZE."""
    table = white_table()
    assert table.shape == (TABLE_SIZE,)
    for cp in range(TABLE_SIZE):
        assert table[cp] == (not 0xD800 <= cp < 0xE000 and is_han_gap(chr(cp))), hex(cp)
    assert table[ord("\u3000")] and table[ord("\xa0")] and table[ord(" ")] and not table[ord("a")]
    for n in (0, 1, 0xD801, 0xE001):
        chars = all_chars(n)
        assert len(chars) == n and all(chars[c] == (" " if 0xD800 <= c < 0xE000 else chr(c)) for c in range(n))


def test_table_characters_never_compose_with_neighbours():
    """Why the table may be applied one character at a time: NFKC of a page is the concatenation of the
    characters' own NFKC unless a combining mark reorders or two starters compose. Every table character
    decomposes to starters only, and none of them is either side of a canonical composition of two starters
    (the pairs are found by decomposing every code point)."""
    composing = set()
    for cp in range(sys.maxunicode + 1):
        decomposed = unicodedata.normalize("NFD", chr(cp))
        if len(decomposed) == 2 and not any(unicodedata.combining(c) for c in decomposed):
            composing.update(decomposed)
    assert "\u1161" in composing and "\u0b3e" in composing  # Hangul jamo and an Oriya vowel sign, to be sure
    for char in TABLE + [chr(c) for c in range(128)]:
        parts = unicodedata.normalize("NFKD", char)
        assert not any(unicodedata.combining(c) for c in parts), hex(ord(char))
        assert not (set(parts) | {char}) & composing, hex(ord(char))


def test_han_ranges_match_inert_han():
    from simhash_udf.core.text_batch import HAN_RANGES

    spec = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in HAN_RANGES)
    assert spec == INERT_HAN


_HAN_TEXT = "今天北京的天气很好我们一起去公园散步看到很多人在锻炼身体新闻报道说价格上涨了百分之五"
_BREAKS = ["\n", " ", "\r\n", "\u3000", "\t", "\n\n  ", "\u00a0"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, len(_HAN_TEXT) - 1), st.sampled_from(_BREAKS)), max_size=8),
       st.sampled_from(["，", "。", " ok ", "", "2024年"]))
def test_rewrapped_chinese_has_the_same_features(breaks, tail):
    """White space between two Han characters is not a word boundary: a page re-wrapped with hard line
    breaks (or spaces, ideographic spaces) inside its Chinese sentences gives the same fingerprint and
    signature on every path: the batch fast path, the per-page path, char n-grams and the short-text shingles."""
    from simhash_udf.core.shingles import shingle_set
    from simhash_udf.core.signature import SignatureSpec

    text = _HAN_TEXT + tail + _HAN_TEXT[:10]
    wrapped = text
    for pos, br in sorted(set(breaks), reverse=True):
        wrapped = wrapped[:pos] + br + wrapped[pos:]
    pages = [text, wrapped]
    for spec in (FeatureSpec(), FeatureSpec(segmenter="jieba"), FeatureSpec(tokenizer="char")):
        fast = fingerprint_arrow(pa.array(pages), spec, SignatureSpec())
        slow = fingerprint_batch(pages, spec, SignatureSpec())
        assert fast[0].tolist() == slow[0].tolist()
        assert fast[0][0] == fast[0][1] and (fast[2][0] == fast[2][1]).all(), (spec, wrapped)
    assert set(shingle_set(text, 5).tolist()) == set(shingle_set(wrapped, 5).tolist())
    han, _, slow_pages = split_pages(pa.array(pages))
    assert not slow_pages.any() and han[0] == han[1]


_GAP_ALPHABET = ["天", "气", "很", "好", "我们", "。", "，", "ok", "A", "\n", " ", "\u3000", "\u00a0", "\u2028", "\x1c",
                 "\t", " " * 20, "\u3000" * 7, "\u2003", "\u3002", "é"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_GAP_ALPHABET), max_size=30).map("".join), min_size=1, max_size=6))
def test_white_gaps_between_han_agree_with_the_definition(pages):
    """The batch path's joined Han runs (any white space, long runs, non-ASCII spaces) give the definition's
    features: tokens of normalize_chars, whose white space between Han characters is removed."""
    from simhash_udf.core.text import auto_set, distinct_tokens

    han, rest, slow = split_pages(pa.array(pages))
    for i, page in enumerate(pages):
        expect = set(tokens_auto(normalize_chars(page), "rjieba", ordered=False)) - {"\n"}
        assert auto_set(page, "rjieba") == expect, page
        if not slow[i]:
            assert distinct_tokens(han[i], rest[i].split(), "rjieba") == expect, page
