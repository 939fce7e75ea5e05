"""The fingerprint definition: numpy batch == slow reference, golden values, the worked example."""
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reference import loop_simhash

from simhash_udf.core.fingerprint import (
    FeatureSpec,
    fingerprint_batch,
    fingerprint_text,
    jieba_idf,
    mmh3_64,
    simhash_from_hashes,
    weighted_bit_sums,
)
from simhash_udf.core.text import (
    auto_bag,
    auto_set,
    normalize_chars,
    normalize_text,
    tokenize,
    tokens_auto,
    tokens_char,
    tokens_segmenter,
    tokens_word,
    word_shingles,
)


def reference_features(text, spec):
    """The definition step by step: normalisation, tokens in text order, shingles. Character n-grams read the
    whole normalised text (punctuation folded to ASCII); word features normalise without the fold, which
    would join two words around a full stop for jieba ('hello。hello' must stay two words)."""
    if spec.tokenizer == "char":
        return tokens_char(normalize_text(text), spec.char_ngram)
    normal = normalize_chars(text)
    if spec.tokenizer == "auto":
        tokens = tokens_auto(normal, spec.segmenter, ordered=True)
    elif spec.tokenizer == "jieba":
        tokens = tokens_segmenter(normal, spec.segmenter)
    else:
        tokens = tokens_word(normal)
    return word_shingles(tokens, spec.word_ngram)


def reference_fingerprint(text, spec=None):
    """Obviously correct: a Python loop over every feature and every one of the 64 bits."""
    spec = spec or FeatureSpec()
    feats = reference_features(text, spec)
    if spec.weighting == "binary":
        feats = list(dict.fromkeys(feats))
    if not feats:
        return None
    if spec.weighting == "tfidf":
        table, median = jieba_idf()
        weight = lambda t: table.get(t, median)  # noqa: E731
    else:
        weight = lambda t: 1  # noqa: E731
    return loop_simhash(feats, weight)


# Text that looks like crawled pages: Chinese words, English words, digits, full-width forms,
# punctuation of both kinds, white-space runs (including ideographic space and tabs).
PIECES = ["我们", "北京", "人工智能", "的", "发展", "开会", "今天", "中华人民共和国", "新闻", "报道",
          "Hello", "world", "THE", "data", "Ｓｐａｒｋ", "１２３", "2024", "é", "naïve", "ﬁ",
          "，", "。", "！", ",", ".", " ", "   ", "\t", "\u3000", "\n\n", "-", "_", "【广告】", "《", "》", "“", "”", "、", "—", "·", "（", "）",
          # characters where normalising a piece of a page could differ from normalising the page: compatibility
          # and radical forms of Han characters, final sigma, İ, combining marks, digits of other scripts
          "豈", "\u2f00", "\U0002f800", "㈠", "ΑΣ", "Σ", "İ", "e\u0301", "\u0301", "٣", "Ⅻ", "①", "ｶﾞ", "\u00ad"]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=6)), max_size=40).map("".join)
specs = st.builds(
    FeatureSpec,
    tokenizer=st.sampled_from(["auto", "jieba", "word", "char"]),
    weighting=st.sampled_from(["tf", "tfidf", "binary"]),
    char_ngram=st.integers(2, 6),
    word_ngram=st.integers(1, 3),
    segmenter=st.sampled_from(["jieba", "rjieba"]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(texts, min_size=1, max_size=8), specs)
@example(["Hello。Hello"], FeatureSpec(tokenizer="jieba", segmenter="jieba"))  # a full stop between two words (found by hypothesis)
@example(["Hello。Hello"], FeatureSpec(tokenizer="jieba"))
def test_batch_equals_reference(batch, spec):
    fps, counts = fingerprint_batch(batch, spec)
    for text, fp, n in zip(batch, fps, counts):
        ref = reference_fingerprint(text, spec)
        assert (ref if ref is not None else 0) == int(fp)
        assert (n > 0) == (ref is not None)


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(["jieba", "rjieba"]))
@example("ΑΣ·é", "jieba")  # final sigma looks through the case-ignorable U+00B7: not final here (found by CI)
def test_fast_auto_tokens_equal_definition(text, segment):
    """The hot path (ASCII in one translate, Han runs cut out before normalising) gives the same features as
    normalising the whole page and tokenising it."""
    expected = tokens_auto(normalize_chars(text), segment, ordered=True)
    assert sorted(auto_bag(text, segment)) == sorted(expected)


@settings(max_examples=300, deadline=None)
@given(texts, st.sampled_from(["jieba", "rjieba"]))
def test_fast_distinct_features_equal_definition(text, segment):
    """Binary weighting's hot path gives exactly the distinct features of the definition's tokens."""
    expected = set(tokens_auto(normalize_chars(text), segment, ordered=True))
    got = auto_set(text, segment)
    assert sorted(got) == sorted(expected)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 2**64 - 1), max_size=300), st.integers(1, 64), st.booleans(), st.data())
def test_bit_sums_equal_loop(hashes, f, weighted, data):
    """The vectorised sums (chunked, reduceat over documents) equal a loop, for any split into documents."""
    n = len(hashes)
    cuts = sorted(data.draw(st.lists(st.integers(0, n), max_size=6)))
    offsets = np.array([0, *cuts, n])
    w = np.array(data.draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n)), dtype=np.int64) if weighted else None
    sums = weighted_bit_sums(np.array(hashes, dtype=np.uint64), offsets, w, f)
    for d in range(len(offsets) - 1):
        for i in range(f):
            expect = sum((1 if w is None else int(w[t])) * (1 if (hashes[t] >> i) & 1 else -1)
                         for t in range(offsets[d], offsets[d + 1]))
            assert sums[d, i] == expect


def test_worked_example_with_injected_6bit_hash():
    """The worked example of docs/design.md: the five steps with 6-bit hashes chosen by hand."""
    # 1. normalise, 2. tokenise
    tokens = tokenize(normalize_text("The  CAT,\tthe ＤＯＧ!"), "word")
    assert tokens == ["the", "cat", "the", "dog"]
    # 3. weights: term frequency -> the: 2, cat: 1, dog: 1 (each occurrence adds weight 1)
    # 4. hash: injected 6-bit hashes instead of mmh3
    six_bit = {"the": 0b101100, "cat": 0b011010, "dog": 0b110001}
    hashes = np.array([six_bit[t] for t in tokens], dtype=np.uint64)
    # 5. +w / -w per bit (bit 0 first), then the sign
    sums = weighted_bit_sums(hashes, [0, len(tokens)], None, f=6)
    assert sums.tolist() == [[-2, -2, 0, 2, 0, 2]]
    assert simhash_from_hashes(hashes, [0, len(tokens)], None, f=6).tolist() == [0b101000]
    # the same with explicit tf weights on unique tokens
    uniq = np.array([six_bit["the"], six_bit["cat"], six_bit["dog"]], dtype=np.uint64)
    assert simhash_from_hashes(uniq, [0, 3], np.array([2, 1, 1]), f=6).tolist() == [0b101000]


CHAR_PUNCT = 6204036292826148248  # both texts of the pair below
GOLDEN = [
    # (text, FeatureSpec, int64 fingerprint). Changing any of these changes what every stored fingerprint
    # means: bump DEFINITION_VERSION in fingerprint.py and say so in the release notes.
    # The job's default until the quality study (weighting tf), now an explicit option:
    ("我们今天在北京开会，讨论了人工智能的发展。", FeatureSpec(weighting="tf"), 3251608506960978450),
    ("Hello World, this is a crawled page about Spark.", FeatureSpec(weighting="tf"), -2212007215175618606),
    ("Ｈｅｌｌｏ　ＷＯＲＬＤ，ｔｈｉｓ ｉｓ ａ ｃｒａｗｌｅｄ ｐａｇｅ ａｂｏｕｔ Ｓｐａｒｋ．", FeatureSpec(weighting="tf"), -2212007215175618606),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(weighting="tf"), -8511312194183104872),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(weighting="tfidf"), 856137683322533768),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(weighting="binary"), -9087775145514117480),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(tokenizer="jieba", weighting="tf"), -8511312194183104872),
    # the reference segmenter pins the same values as the default (rjieba)
    ("我们今天在北京开会，讨论了人工智能的发展。", FeatureSpec(segmenter="jieba", weighting="tf"), 3251608506960978450),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(segmenter="jieba", weighting="tf"), -8511312194183104872),
    ("他来到了网易杭研大厦", FeatureSpec(segmenter="jieba", weighting="tf"), -4014675026445708781),
    ("他来到了网易杭研大厦", FeatureSpec(segmenter="rjieba", weighting="tf"), -4014675026445708781),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(tokenizer="word", weighting="tf"), 2360343305717413768),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(tokenizer="char", weighting="tf"), 8164501166945490561),
    # char n-grams fold Chinese punctuation to ASCII (the "-punct" of the version): one fingerprint for both
    ("我们今天在北京开会，讨论了人工智能的发展。", FeatureSpec(tokenizer="char", weighting="tf"), CHAR_PUNCT),
    ("我们今天在北京开会, 讨论了人工智能的发展.", FeatureSpec(tokenizer="char", weighting="tf"), CHAR_PUNCT),
    # The job's default since the quality study: binary weights (each distinct token once). Texts without
    # repeated tokens keep their tf fingerprints; repeated tokens ("0" from folded digits, "the") count once.
    ("我们今天在北京开会，讨论了人工智能的发展。", FeatureSpec(), 3251608506960978450),
    ("Hello World, this is a crawled page about Spark.", FeatureSpec(), -2212007215175618606),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(), -9087775145514117480),
    ("the the the cat sat on the mat the end", FeatureSpec(), 7623204451377676332),
    ("the the the cat sat on the mat the end", FeatureSpec(weighting="tf"), 7678624741922115100),
    # the default's fast path (distinct tokens straight from the segmenter) with the reference segmenter
    ("我们今天在北京开会，讨论了人工智能的发展。", FeatureSpec(segmenter="jieba"), 3251608506960978450),
    ("中文 mixed with English 和数字 2024年5月3日 ￥199", FeatureSpec(segmenter="jieba"), -9087775145514117480),
]


@pytest.mark.parametrize("text,spec,expected", GOLDEN)
def test_golden_fingerprints(text, spec, expected):
    assert fingerprint_text(text, spec) == expected


def test_job_default_is_the_feature_spec_default():
    from simhash_udf.job.config import DedupConfig

    assert DedupConfig().features == FeatureSpec() and FeatureSpec().weighting == "binary"


def test_feature_hash_is_pinned():
    assert mmh3_64("abc") == 13012657714217449575
    assert mmh3_64("北京") == mmh3_64("北京".encode("utf-8"))


def test_normalisation_folds_width_case_and_space():
    assert normalize_text("  Ｈｅｌｌｏ\u3000ＷＯＲＬＤ\n\n\t１２３ ") == "hello world 000"
    assert normalize_text("阅读 1234 次, 2024年5月3日") == "阅读 0000 次, 0000年0月0日"


def test_tokens_skip_punctuation_and_space():
    assert tokenize(normalize_text("  ，。！ ... \t\n")) == []
    assert tokenize(normalize_text("我们在北京。Hello, world_2!")) == ["我们", "在", "北京", "hello", "world", "0"]


def test_no_feature_texts_have_no_fingerprint():
    fps, counts = fingerprint_batch([None, "", "   ", "，。！", "ok"])
    assert counts.tolist()[:4] == [-1, 0, 0, 0] and counts[4] == 1
    assert fingerprint_text("，。") is None


def test_version_names_the_definition():
    assert FeatureSpec().version().startswith("sh64-2/nfkc-lower-digit0-hanjoin-ws/")
    # Folding Chinese punctuation changed char n-grams only: a history of word fingerprints (the default) is
    # read as before (same version, same fingerprints: GOLDEN), one of char fingerprints made before the
    # fold is refused (its version, as written then, differs).
    assert FeatureSpec(tokenizer="char").version() != "sh64-2/nfkc-lower-digit0-hanjoin-ws/char5/binary/mmh3x64"
    assert FeatureSpec(tokenizer="word").version() == "sh64-2/nfkc-lower-digit0-hanjoin-ws/word/binary/mmh3x64"
    assert "(rjieba-" in FeatureSpec().version() and "(jieba-" in FeatureSpec(segmenter="jieba").version()
    assert FeatureSpec().version() != FeatureSpec(weighting="tfidf").version()
    assert FeatureSpec(tokenizer="char", char_ngram=4).version() != FeatureSpec(tokenizer="char").version()


def test_large_document_spans_chunks():
    """A page with more features than one chunk of the bit matrix is summed across chunks."""
    text = " ".join(f"w{i % 5000}" for i in range(150_000))
    assert fingerprint_text(text) == reference_fingerprint(text)


def test_lone_surrogates_are_replaced_not_a_crash():
    """Old code: mmh3 crashed the interpreter (SIGSEGV) hashing a character n-gram or shingle that held a lone
    surrogate (a str made with errors="surrogateescape", which a caller of the library can pass; Spark and
    Arrow strings cannot hold one). Now the surrogate is U+FFFD, as invalid UTF-8 in the job's input is.
    Run in a child process: a crash there is a failure here, not the end of the test run."""
    import os
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_batch
        from simhash_udf.core.shingles import shingle_set
        from simhash_udf.core.short_text import ShortTextSpec, short_fingerprints
        spec = FeatureSpec(tokenizer="char")
        assert fingerprint_batch(["ab\\ud800cd efgh"], spec)[0][0] == fingerprint_batch(["ab\\ufffdcd efgh"], spec)[0][0]
        assert (shingle_set("ab\\udc80cdef") == shingle_set("ab\\ufffdcdef")).all()
        assert (short_fingerprints(["ab\\ud800cd"], ShortTextSpec())[0] == short_fingerprints(["ab\\ufffdcd"], ShortTextSpec())[0]).all()
        print("ok")
    """)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.returncode, proc.stderr[-2000:])
