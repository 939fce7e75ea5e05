"""The two feature options added for the quality study: --stop-words and --weighting tfidf-corpus."""
import math

import pytest
from reference import loop_simhash

from simhash_udf.core.fingerprint import IDF_SCALE, CorpusIdf, FeatureSpec, features_of, fingerprint_batch
from simhash_udf.core.text import normalize_text, stop_words, tokens_auto, word_shingles
from simhash_udf.errors import DedupError
from simhash_udf.job.config import load_config


def test_stop_words_are_dropped_before_shingles():
    stop = stop_words()
    assert {"的", "了", "和", "the", "of"} <= stop and "北京" not in stop and "data" not in stop
    text = "我们的数据 of the DATA，在北京和上海"
    tokens = [t for t in tokens_auto(normalize_text(text), "rjieba") if t not in stop]
    for n in (1, 2):
        spec = FeatureSpec(stop_words=True, word_ngram=n)
        got, expected = features_of(text, spec), word_shingles(tokens, n)
        assert (got if n > 1 else sorted(got)) == (expected if n > 1 else sorted(expected))  # 1-grams: a multiset
        assert not stop & set(features_of(text, spec))
    assert FeatureSpec(stop_words=True).version() != FeatureSpec().version()


def test_corpus_idf_weights_and_fingerprints_equal_a_loop():
    idf = CorpusIdf({"a": 3, "b": 1, "c": 10}, n_docs=10)
    assert idf.table == {"a": round((math.log(11 / 4) + 1) * IDF_SCALE), "c": round((math.log(11 / 11) + 1) * IDF_SCALE)}
    assert idf.unknown == round((math.log(11 / 2) + 1) * IDF_SCALE)
    spec = FeatureSpec(tokenizer="word", weighting="tfidf-corpus", idf=idf)
    texts = ["a a b c", "c c c d", "b"]
    fps, _ = fingerprint_batch(texts, spec)
    for text, fp in zip(texts, fps):
        assert int(fp) == loop_simhash(text.split(), lambda t: idf.table.get(t, idf.unknown))
    assert idf.digest in spec.version() and CorpusIdf({"a": 3}, 10).digest != idf.digest
    with pytest.raises(ValueError, match="idf table"):
        fingerprint_batch(["a"], FeatureSpec(weighting="tfidf-corpus"))


def test_job_computes_the_corpus_idf_in_one_pass(spark, tmp_path):
    from simhash_udf.spark.fingerprint import with_corpus_idf

    texts = ["北京 天气 很好", "北京 天气 不好 不好", "上海 天气", None, "上海"]
    docs = spark.createDataFrame([(i, t) for i, t in enumerate(texts)], "id int, text string")
    spec = with_corpus_idf(docs, "text", FeatureSpec(tokenizer="word", weighting="tfidf-corpus"))
    df = {}
    for t in texts:
        for f in set(features_of(t or "", spec)):
            df[f] = df.get(f, 0) + 1
    assert spec.idf == CorpusIdf(df, len(texts))
    assert set(spec.idf.table) == {f for f, n in df.items() if n >= 2}


def test_options_are_checked(tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": 1, "text": "x"}\n')
    base = ["--input", str(src), "--output", str(tmp_path / "out")]
    assert load_config(base + ["--stop-words"]).features.stop_words
    assert not load_config(base + ["--no-stop-words"]).features.stop_words
    assert load_config(base + ["--weighting", "tfidf-corpus"]).weighting == "tfidf-corpus"
    with pytest.raises(DedupError, match="stop-words"):
        load_config(base + ["--stop-words", "--tokenizer", "char"])
    with pytest.raises(DedupError, match="tfidf-corpus"):
        load_config(base + ["--weighting", "tfidf-corpus", "--input-format", "fingerprints"])
