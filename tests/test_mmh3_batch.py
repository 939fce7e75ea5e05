"""The numpy paths of the features' hashes give exactly the per-feature (reference) values: the hash of each
byte string, the default fingerprints from joined feature sets, and the character n-gram fingerprints."""
import mmh3
import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_text_batch import CHARS

from simhash_udf.core.fingerprint import (
    FeatureSpec,
    _fingerprints,
    char_ngram_fingerprints,
    distinct_pieces,
    distinct_words,
    fingerprints_of_joined,
    repeats_in_page,
    weighted_features,
)
from simhash_udf.core.mmh3_batch import MAX_BLOCKS, hash_joined, mmh3_64_batch, padded_buffer
from simhash_udf.core.signature import SignatureSpec
from simhash_udf.core.text import normalize_text, normalize_texts, normalized_codes

# lengths around every block and tail boundary, and past MAX_BLOCKS (the per-feature fallback)
LENGTHS = st.one_of(st.integers(0, 40), st.sampled_from([63, 64, 65, 16 * MAX_BLOCKS - 1, 16 * MAX_BLOCKS,
                                                           16 * MAX_BLOCKS + 1, 16 * MAX_BLOCKS + 17, 1000]))


def reference(data: bytes, seed: int = 0) -> int:
    return mmh3.hash64(data, seed=seed, x64arch=True, signed=False)[0]


@settings(max_examples=300, deadline=None)
@given(st.lists(LENGTHS.flatmap(lambda n: st.binary(min_size=n, max_size=n)), max_size=20), st.integers(0, 3),
       st.one_of(st.just(0), st.integers(0, 2**32 - 1)), st.sampled_from([MAX_BLOCKS, 1, 40]))
def test_mmh3_64_batch_is_mmh3(pieces, gap, seed, max_blocks):
    """Any bytes, anywhere in a buffer (pieces `gap` bytes apart, so reads are unaligned), any seed, with the
    pieces past max_blocks hashed one by one."""
    data, starts, ends = b"", [], []
    for p in pieces:
        data += b"\xff" * gap
        starts.append(len(data))
        data += p
        ends.append(len(data))
    got = mmh3_64_batch(padded_buffer(data), np.array(starts, np.int64), np.array(ends, np.int64), seed, max_blocks)
    assert got.tolist() == [reference(p, seed) for p in pieces]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(CHARS, max_size=30).map("".join).filter(lambda t: "\n" not in t), min_size=1, max_size=20))
def test_hash_joined_hashes_each_piece(pieces):
    assert hash_joined("\n".join(pieces)).tolist() == [reference(p.encode("utf-8")) for p in pieces]


texts = st.lists(st.one_of(st.none(), st.lists(CHARS, max_size=60).map("".join)), max_size=12)


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from([1, 2, 3, 5, 7]), st.booleans())
def test_char_ngram_fingerprints_equal_the_per_text_path(batch, n, signed):
    """Fingerprints, feature counts and signatures of the short-text features, against the path that makes
    each text's distinct n-grams as Python strings and hashes them one by one."""
    spec = FeatureSpec(tokenizer="char", weighting="binary", char_ngram=n)
    signature = SignatureSpec() if signed else None
    want = _fingerprints((None if t is None else weighted_features(t, spec) for t in batch), spec, signature)
    got = char_ngram_fingerprints(batch, n, signature)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sets(st.lists(CHARS, max_size=12).map("".join), max_size=15)), max_size=10))
@example([{""}, {"\n"}])  # a text of one empty feature and one holding the separator: their pieces sum right
def test_fingerprints_of_joined_equal_the_per_feature_path(sets):
    """Any distinct features, each text's joined by the separator; a batch with a feature holding the separator
    (or an empty feature of its own) has no result, and the caller takes the per-page path."""
    spec = FeatureSpec(weighting="binary")
    want = _fingerprints((None if s is None else (list(s), None) for s in sets), spec, SignatureSpec())
    joined = ["" if s is None else "\n".join(s) for s in sets]
    counts = np.array([-1 if s is None else len(s) for s in sets], dtype=np.int32)
    got = fingerprints_of_joined(joined, counts, SignatureSpec())
    features = [f for s in sets if s is not None for f in s]
    if got is None:
        assert any("\n" in f for f in features) or "" in features
        return
    assert not any("\n" in f for f in features)
    for a, b in zip(got, want):
        assert np.array_equal(a, b)


# White space of every kind (ASCII, the separators \x1c-\x1f, U+0085, no-break, ideographic, line and paragraph
# separators, the ones NFKC maps to a space), the marks of the Han-mark gap and the Chinese ones folded into them,
# Han (unified, extension B, a compatibility ideograph), digits of other scripts.
NORMAL_PIECES = st.sampled_from(["\x00", "\ud800", " ", "  ", "\n", "\t\r", "\x1c", "\x1f", "\x85", "\xa0", "\u2007",
                                 "\u2028", "\u3000", "\u200b", "Σ", "ΑΣ", "中 文", "中 ,", ", 中", "中\n\n文", "。 文",
                                 "“中” 文", "中 (", ") 中", "中 -", "\U00020000 中", "\uf900 ", "\u0301", "\u1100",
                                 "\u1161", "\u11a8", "٣", "２", "a", "B"])


@settings(max_examples=500, deadline=None)
@given(st.lists(st.lists(st.one_of(CHARS, NORMAL_PIECES), max_size=20).map("".join), max_size=10))
def test_normalize_texts_normalise_each_text_as_alone(batch):
    """Greek final sigma, Hangul jamo, combining marks, white space of every kind between Han, marks and the
    separator, and texts holding the separator itself; normalized_codes gives the same texts as code points."""
    want = [normalize_text(t) for t in batch]
    assert normalize_texts(batch) == want
    codes, lengths = normalized_codes(batch)
    assert lengths.tolist() == [len(t) for t in want]
    assert codes.tobytes().decode("utf-32-le") == "".join(want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=2, max_size=6))
def test_normalize_texts_of_any_unicode_text(batch):
    assert normalize_texts(batch) == [normalize_text(t) for t in batch]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "0", " ", "ab", "the", "seven77", "eight888", "x" * 17, "y" * 16,
                                           "z" * 40]), max_size=20).map("".join), min_size=1, max_size=8), st.data())
def test_distinct_words_are_each_pages_split_words(rests, data):
    """The words of split_pages_bytes' ASCII rest (between spaces; a page's first word never joined to the last
    one of the page before, empty pages between them too), made distinct per page in numpy, for the pages asked
    for: each page's set of str.split() words, hashed, page by page."""
    use = np.array(data.draw(st.lists(st.booleans(), min_size=len(rests), max_size=len(rests))))
    offsets = np.r_[0, np.cumsum([len(r) for r in rests])].astype(np.int64)
    hashes, page = distinct_words("".join(rests).encode("ascii"), offsets, use)
    assert page.tolist() == sorted(page.tolist())
    for i, rest in enumerate(rests):
        want = sorted(reference(w.encode("ascii")) for w in set(rest.split())) if use[i] else []
        assert sorted(hashes[page == i].tolist()) == want


# pieces around the short keys' limit (SHORT_PIECE bytes) and the two words the long ones are compared by
PIECES = st.one_of(st.binary(min_size=0, max_size=18), st.sampled_from([b"ab", b"abc\x00", b"abc", b"\x00abc"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(PIECES, max_size=12), min_size=1, max_size=6))
def test_distinct_pieces_are_each_pages_distinct_byte_strings(pages):
    """Any byte strings (zero bytes, lengths either side of SHORT_PIECE and of 8 and 16), repeated in a page and
    across pages: each page's distinct ones, hashed, page by page."""
    data, starts, ends, page = b"", [], [], []
    for p, pieces in enumerate(pages):
        for piece in pieces + pieces[:2]:  # some repeated
            starts.append(len(data))
            data += piece
            ends.append(len(data))
            page.append(p)
    got = distinct_pieces(padded_buffer(data), np.array(starts, np.int64), np.array(ends, np.int64),
                          np.array(page, np.int64))
    assert got is not None
    hashes, got_page = got
    assert got_page.tolist() == sorted(got_page.tolist())
    for p, pieces in enumerate(pages):
        assert sorted(hashes[got_page == p].tolist()) == sorted(reference(x) for x in set(pieces))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 7), st.integers(0, 3)), max_size=60),
       st.booleans())
def test_repeats_in_page_finds_each_repeated_feature_of_a_page(features, low_differs):
    """The features of each page with one of every repeated (page, hash) dropped, also when hashes differ only in
    the low bits the one-key sort leaves out (its way out to the two-key sort): the distinct (page, hash) pairs."""
    features.sort(key=lambda f: f[0])  # the callers' features come page by page
    page = np.array([p for p, _, _ in features], dtype=np.int64)
    hashes = np.array([(h << 61) | low if low_differs else (low << 59) | h for _, h, low in features],
                      dtype=np.uint64).reshape(len(features))
    order, again = repeats_in_page(hashes, page)
    assert sorted(order.tolist()) == list(range(len(features)))
    assert (hashes[order[again]] == hashes[order[again - 1]]).all() and (page[order[again]] == page[order[again - 1]]).all()
    kept = np.delete(order, again)
    pairs = list(zip(page[kept].tolist(), hashes[kept].tolist()))
    assert sorted(pairs) == sorted(set(zip(page.tolist(), hashes.tolist())))
    assert page[kept].tolist() == sorted(page[kept].tolist())  # still page by page
