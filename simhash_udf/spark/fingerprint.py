"""Spark stage 2: fingerprints over Arrow batches (mapInArrow: Arrow record batches in and out).

mapInArrow rather than a pandas UDF: the text column goes from Arrow straight to Python strings (no pandas
object Series in between) and the fingerprints go back as one Arrow array per batch. The text column is
dropped in the same pass, so the page text is not sent back to the JVM.

Also the extra pass of weighting "tfidf-corpus" (with_corpus_idf): document frequencies of the features over
the whole input. Each document contributes its distinct features once; features in fewer than two documents
are dropped on the executors and at most MAX_FEATURES of the most frequent come back to the driver (a table
of features, not of documents), to be shipped with the fingerprint UDF inside the FeatureSpec."""
from __future__ import annotations

import dataclasses
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.functions import pandas_udf
from pyspark.sql.types import ArrayType, BinaryType, IntegerType, LongType, StringType, StructField, StructType

from ..core.fingerprint import CorpusIdf, FeatureSpec, distinct_auto_features, features_of, fingerprint_arrow
from ..core.sentence_keys import SentenceKeySpec, sentence_keys_and_prose
from ..core.short_text import ShortTextSpec, short_fingerprints
from ..core.signature import SignatureSpec, to_arrow
from ..core.text_batch import classify, pages_holding_replacement_char

FINGERPRINT_FIELDS = [StructField("fingerprint", LongType(), True), StructField("n_features", IntegerType(), False)]
SIGNATURE_FIELDS = [StructField("signature", BinaryType(), True)]
SHORT_FIELDS = [StructField("short_fingerprint", LongType(), True), StructField("short_text", StringType(), True)]
SENTENCE_FIELDS = [StructField("sentence_keys", ArrayType(LongType(), True), True),
                   StructField("text_chars", IntegerType(), True)]
PROSE_FIELDS = [StructField(c, IntegerType(), True) for c in ("prose_letters", "prose_lead", "prose_tail")]


def fingerprint_record_batches(
    batches: Iterator[pa.RecordBatch], text_col: str, spec: FeatureSpec, short: ShortTextSpec | None = None,
    signature: SignatureSpec | None = None, replacement_flag: str | None = None,
    sentences: SentenceKeySpec | None = None, prose_min: int = 0,
) -> Iterator[pa.RecordBatch]:
    """Each batch without `text_col`, plus `fingerprint` (int64, null when the text has no features) and
    `n_features` (int32; -1 for a null text); with `signature`, `signature` (binary, from the same feature
    hashes, null with the fingerprint); with `short`, also `short_fingerprint` and `short_text` (the
    page's text), both null unless the page is short and has character n-grams; with `sentences`, also
    `sentence_keys` (array of int64: the page's longest-sentence keys, core/sentence_keys.py, read from the same
    text) and `text_chars` (int32: its characters, containment's size bound), and with prose_min > 0 also
    `prose_letters`, `prose_lead` and `prose_tail` (int32: sentence_keys.page_prose, for containment's clusters).
    `replacement_flag`: a boolean column of the batch (no nulls) that is also set where the text holds U+FFFD."""
    for batch in batches:
        texts = batch.column(text_col)
        # the batch's characters classified once, for the features and the sentence keys
        chars = (classify(texts) if sentences is not None and (sentences.enabled or prose_min > 0)
                 and distinct_auto_features(spec) else None)
        fps, counts, *sigs = fingerprint_arrow(texts, spec, signature, chars)
        out = batch.drop_columns([text_col])
        if replacement_flag is not None:
            at = out.schema.get_field_index(replacement_flag)
            flag = np.asarray(out.column(at)) | pages_holding_replacement_char(texts)
            out = out.set_column(at, replacement_flag, pa.array(flag))
        out = out.append_column("fingerprint", pa.array(fps, mask=counts <= 0)).append_column(
            "n_features", pa.array(counts.astype(np.int32, copy=False))
        )
        if signature is not None:
            out = out.append_column("signature", to_arrow(sigs[0], counts > 0))
        if short is not None:
            short_fps, valid = np.zeros(len(texts), dtype=np.int64), np.zeros(len(texts), dtype=bool)
            lengths = pc.fill_null(pc.utf8_length(texts), short.max_chars).to_numpy()
            rows = np.flatnonzero(lengths < short.max_chars)  # only short pages become Python strings
            short_texts = texts.take(pa.array(rows, pa.int64()))
            short_fps[rows], valid[rows] = short_fingerprints(short_texts.to_pylist(), short)
            # short_text taken from the short pages alone: an array made from `texts` (pc.if_else) would keep the
            # whole batch's text buffer, and send every page's text back to the JVM
            position = np.zeros(len(texts), dtype=np.int64)
            position[rows] = np.arange(len(rows))
            out = out.append_column("short_fingerprint", pa.array(short_fps, mask=~valid)).append_column(
                "short_text", short_texts.take(pa.array(position, mask=~valid)).cast(pa.string())
            )
        if sentences is not None:
            keys, offsets, prose = sentence_keys_and_prose(texts, sentences, chars, prose_min)
            out = out.append_column("sentence_keys", pa.ListArray.from_arrays(
                pa.array(offsets.astype(np.int32)), pa.array(keys, pa.int64()))).append_column(
                "text_chars", pc.utf8_length(texts).cast(pa.int32()))
            if prose is not None:
                null = texts.is_null().to_numpy(zero_copy_only=False)
                for i, field in enumerate(PROSE_FIELDS):
                    out = out.append_column(field.name, pa.array(prose[:, i].astype(np.int32), mask=null))
        yield out


def with_fingerprints(docs: DataFrame, text_col: str, spec: FeatureSpec, short: ShortTextSpec | None = None,
                      signature: SignatureSpec | None = None, replacement_flag: str | None = None,
                      sentences: SentenceKeySpec | None = None, prose_min: int = 0) -> DataFrame:
    """docs without `text_col`, plus `fingerprint` (bigint, nullable) and `n_features` (int); with
    `signature`, also `signature` (binary, nullable); with `short`
    (an enabled ShortTextSpec), also `short_fingerprint` (bigint) and `short_text` (string), null for long pages.
    `replacement_flag`: a non-null boolean column of docs, also set in this pass where the text holds U+FFFD;
    with `sentences`, also `sentence_keys` (array<bigint>) and `text_chars` (int), and with prose_min > 0 also
    `prose_letters`, `prose_lead` and `prose_tail` (int)."""
    fields = FINGERPRINT_FIELDS + (SIGNATURE_FIELDS if signature is not None else []) + (
        SHORT_FIELDS if short is not None else []) + (SENTENCE_FIELDS if sentences is not None else []) + (
        PROSE_FIELDS if sentences is not None and prose_min > 0 else [])
    schema = StructType([f for f in docs.schema.fields if f.name != text_col] + fields)
    return docs.mapInArrow(lambda batches: fingerprint_record_batches(batches, text_col, spec, short, signature,
                                                                      replacement_flag, sentences, prose_min), schema)

MAX_FEATURES = 1_000_000


def with_corpus_idf(docs: DataFrame, text_col: str, spec: FeatureSpec) -> FeatureSpec:
    """spec with its idf table computed from docs[text_col] (one pass over the texts)."""
    doc_freq, n_docs = corpus_doc_freq(docs, text_col, spec)
    return dataclasses.replace(spec, idf=CorpusIdf(doc_freq, n_docs))


def corpus_doc_freq(docs: DataFrame, text_col: str, spec: FeatureSpec) -> tuple[dict[str, int], int]:
    """Document frequency of each feature in at least two documents (at most MAX_FEATURES of the most
    frequent), and the number of documents."""

    import pandas as pd  # here, not at the top: every Python worker of the fingerprint stage imports this module,
    # and pandas alone is ~0.2 s of a worker's start (the mapInArrow workers never need it)

    def distinct_features(texts):
        return pd.Series([sorted(set(features_of(t, spec))) if isinstance(t, str) else [] for t in texts])

    distinct_features.__annotations__ = {"texts": pd.Series, "return": pd.Series}  # a Series to Series pandas UDF
    distinct_features = pandas_udf(ArrayType(StringType()))(distinct_features)

    n_docs = docs.count()
    df = (
        docs.select(F.explode(distinct_features(F.col(text_col))).alias("feature"))
        .groupBy("feature")
        .count()
        .where(F.col("count") >= 2)
        .orderBy(F.desc("count"), "feature")
        .limit(MAX_FEATURES)
    )
    return {r["feature"]: int(r["count"]) for r in df.collect()}, n_docs


@dataclasses.dataclass(frozen=True)
class PreparedText:
    """A text column as the fingerprint reads it (prepared_text), with the parts the job counts bad rows by."""

    source: Column  # the text as a string (binary read as UTF-8 bytes, not yet checked)
    is_valid: Column  # whether it is valid UTF-8 (null for a null text)
    valid: Column  # made valid: invalid bytes replaced by U+FFFD
    long: Column  # more than max_chars bytes, so possibly more than max_chars characters
    text: Column  # valid, cut at max_chars characters: what is fingerprinted


def prepared_text(df: DataFrame, text_col: str, max_chars: int) -> PreparedText:
    """The one definition of the text a fingerprint is taken from (the job's fingerprint stage and the
    SimHashFingerprint Transformer): binary read as UTF-8, invalid bytes replaced (U+FFFD), cut at max_chars
    characters. Valid text is scanned once for validity and left as it is; a text of at most max_chars bytes
    has at most as many characters, so only a longer one is counted and cut (each is a scan of the text, and
    most pages are far below the cap)."""
    source = F.col(text_col)
    if dict(df.dtypes)[text_col] == "binary":
        source = source.cast("string")
    is_valid = F.is_valid_utf8(source)
    valid = F.when(is_valid, source).otherwise(F.make_valid_utf8(source))
    long = F.octet_length(valid) > max_chars
    return PreparedText(source, is_valid, valid, long, F.when(long, F.substring(valid, 1, max_chars)).otherwise(valid))
