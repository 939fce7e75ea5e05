"""The fingerprint as a pyspark.ml stage: `SimHashFingerprint` (a Transformer) and, for weighting
"tfidf-corpus", `SimHashFingerprintEstimator` whose fit is the pass over the corpus that counts document
frequencies. They compose in a `pyspark.ml.Pipeline`, save and load like Spark's own stages, keep every
column of the input, and read string or binary (UTF-8) text (WET files give binary).

The values are the job's: the same features, weights and 64-bit SimHash (`core/fingerprint.py`), text made
valid UTF-8 and cut at maxTextChars first; a text without features (or null) gets a null fingerprint."""
from __future__ import annotations

import dataclasses
import re

from pyspark.ml import Estimator, Model, Transformer
from pyspark.ml.param import Param, Params, TypeConverters
from pyspark.ml.param.shared import HasInputCol, HasOutputCol
from pyspark.ml.util import (
    DefaultParamsReadable,
    DefaultParamsReader,
    DefaultParamsWritable,
    DefaultParamsWriter,
    MLReadable,
    MLReader,
    MLWritable,
    MLWriter,
)
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from ..core.fingerprint import CorpusIdf, FeatureSpec
from ..core.signature import SignatureSpec
from ..core.text import SEGMENTERS, TOKENIZERS
from ..errors import DedupError
from ..job.api import near_duplicates
from ..job.config import DedupConfig, check_fingerprint_options
from .fingerprint import (
    FINGERPRINT_FIELDS,
    SIGNATURE_FIELDS,
    corpus_doc_freq,
    fingerprint_record_batches,
    prepared_text,
)
from .workers import check_worker_python

_TEXT = "__simhash_text"  # the prepared text while the stage runs (dropped by the Arrow pass)
_JOB = DedupConfig()  # the defaults of the Params are the job's
# The Param of each of the job's fingerprint options (config.FINGERPRINT_OPTIONS), checked by the job's code
_PARAM_OF = {"tokenizer": "tokenizer", "segmenter": "segmenter", "weighting": "weighting", "char_ngram": "charNgram",
             "word_ngram": "wordNgram", "stop_words": "stopWords", "max_text_chars": "maxTextChars"}


class _FingerprintParams(HasInputCol, HasOutputCol):
    signatureCol = Param(Params._dummy(), "signatureCol", "column for the 128-bin verification signature (binary); "
                         "empty = none", typeConverter=TypeConverters.toString)
    tokenizer = Param(Params._dummy(), "tokenizer", f"features: one of {', '.join(TOKENIZERS)}",
                      typeConverter=TypeConverters.toString)
    segmenter = Param(Params._dummy(), "segmenter", f"Chinese word segmenter: one of {', '.join(SEGMENTERS)}",
                      typeConverter=TypeConverters.toString)
    weighting = Param(Params._dummy(), "weighting", "feature weights: binary, tf or tfidf (tfidf-corpus: use "
                      "SimHashFingerprintEstimator)", typeConverter=TypeConverters.toString)
    charNgram = Param(Params._dummy(), "charNgram", "n of tokenizer 'char'", typeConverter=TypeConverters.toInt)
    wordNgram = Param(Params._dummy(), "wordNgram", "token n-gram shingles (1 = single tokens)",
                      typeConverter=TypeConverters.toInt)
    stopWords = Param(Params._dummy(), "stopWords", "drop stop words before shingling",
                      typeConverter=TypeConverters.toBoolean)
    maxTextChars = Param(Params._dummy(), "maxTextChars", "fingerprint at most this many characters of a text",
                         typeConverter=TypeConverters.toInt)

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(inputCol="text", outputCol="fingerprint", signatureCol="",
                         **{param: getattr(_JOB, name) for name, param in _PARAM_OF.items()})

    def feature_spec(self, idf: CorpusIdf | None = None) -> FeatureSpec:
        """The FeatureSpec these Params stand for, checked as the job's options are (config.
        check_fingerprint_options): a bad value fails here, naming the Param."""
        g = self.getOrDefault
        try:
            check_fingerprint_options({name: g(param) for name, param in _PARAM_OF.items()}, _PARAM_OF.get)
        except DedupError as exc:
            raise ValueError(f"{type(self).__name__}: {exc}") from None
        if g("weighting") == "tfidf-corpus" and idf is None:
            raise ValueError("weighting 'tfidf-corpus' needs the corpus pass: use SimHashFingerprintEstimator and "
                             "its fitted model")
        if g("weighting") != "tfidf-corpus" and idf is not None:
            raise ValueError(f"SimHashFingerprintEstimator fits the idf of weighting 'tfidf-corpus'; weighting "
                             f"{g('weighting')!r} needs no fit: use SimHashFingerprint")
        return FeatureSpec(g("tokenizer"), g("weighting"), g("charNgram"), g("wordNgram"), g("segmenter"),
                           g("stopWords"), idf)

    def _fingerprint(self, df: DataFrame, idf: CorpusIdf | None) -> DataFrame:
        spec = self.feature_spec(idf)
        check_worker_python(df.sparkSession.sparkContext, type(self).__name__)
        text_col, out_col, sig_col = (self.getOrDefault(p) for p in ("inputCol", "outputCol", "signatureCol"))
        if text_col not in df.columns:
            raise ValueError(f"{type(self).__name__}: inputCol {text_col!r} is not a column of {df.columns}")
        signature = SignatureSpec() if sig_col else None
        taken = [c for c in (out_col, sig_col) if c and c in df.columns]
        if taken:
            raise ValueError(f"{type(self).__name__}: output column(s) {taken} already exist: choose other names")
        if out_col == sig_col:
            raise ValueError(f"{type(self).__name__}: outputCol and signatureCol are both {out_col!r}: choose two names")
        # the input's columns under names of their own while the Arrow pass adds `fingerprint`, `n_features` and
        # `signature` (an input with such columns, e.g. clusters/, would be ambiguous), their own names put back after
        inner = [f"__simhash_in{i}" for i in range(len(df.columns))]
        prepared = df.select(*[F.col("`" + c.replace("`", "``") + "`").alias(n) for c, n in zip(df.columns, inner)],
                             prepared_text(df, text_col, self.getOrDefault("maxTextChars")).text.alias(_TEXT))
        fields = [f for f in prepared.schema.fields if f.name != _TEXT]
        schema = StructType(fields + FINGERPRINT_FIELDS + (SIGNATURE_FIELDS if signature else []))
        out = prepared.mapInArrow(lambda b: fingerprint_record_batches(b, _TEXT, spec, None, signature), schema)
        renamed = [F.col(n).alias(c) for c, n in zip(df.columns, inner)] + [F.col("fingerprint").alias(out_col)]
        if signature:
            renamed.append(F.col("signature").alias(sig_col))
        return out.select(*renamed)


class SimHashFingerprint(Transformer, _FingerprintParams, DefaultParamsReadable, DefaultParamsWritable):
    """df + outputCol (bigint: the 64-bit SimHash of inputCol, null without features) [+ signatureCol].

        SimHashFingerprint(inputCol="text", outputCol="fingerprint", signatureCol="signature").transform(df)
    """

    def __init__(self, *, inputCol: str = "text", outputCol: str = "fingerprint", signatureCol: str = "", **params):
        super().__init__()
        self._set(inputCol=inputCol, outputCol=outputCol, signatureCol=signatureCol, **params)

    def _transform(self, df: DataFrame) -> DataFrame:
        return self._fingerprint(df, None)


class SimHashFingerprintEstimator(Estimator, _FingerprintParams, DefaultParamsReadable, DefaultParamsWritable):
    """weighting "tfidf-corpus": fit counts each feature's document frequency over the corpus (features in at
    least two documents, at most 1,000,000 of them), and the model fingerprints with those idf weights."""

    def __init__(self, *, inputCol: str = "text", outputCol: str = "fingerprint", signatureCol: str = "", **params):
        super().__init__()
        self._setDefault(weighting="tfidf-corpus")
        self._set(inputCol=inputCol, outputCol=outputCol, signatureCol=signatureCol, **params)

    def _fit(self, df: DataFrame) -> "SimHashFingerprintModel":
        check_worker_python(df.sparkSession.sparkContext, type(self).__name__)
        prepared = df.select(prepared_text(df, self.getInputCol(), self.getOrDefault("maxTextChars")).text.alias(_TEXT))
        base = self.feature_spec(CorpusIdf({}, 0))
        doc_freq, n_docs = corpus_doc_freq(prepared, _TEXT, base)
        model = SimHashFingerprintModel(doc_freq, n_docs)
        return self._copyValues(model)


class SimHashFingerprintModel(Model, _FingerprintParams, MLReadable, MLWritable):
    """The fitted SimHashFingerprintEstimator: the document frequencies travel with the model (saved as
    Parquet next to the Params' metadata)."""

    def __init__(self, doc_freq: dict[str, int] | None = None, n_docs: int = 0):
        super().__init__()
        self._setDefault(weighting="tfidf-corpus")
        self.doc_freq, self.n_docs = dict(doc_freq or {}), n_docs
        self.idf = CorpusIdf(self.doc_freq, n_docs)

    def _transform(self, df: DataFrame) -> DataFrame:
        return self._fingerprint(df, self.idf)

    def write(self) -> MLWriter:
        return _ModelWriter(self)

    @classmethod
    def read(cls) -> MLReader:
        return _ModelReader(cls)


class _ModelWriter(MLWriter):
    def __init__(self, instance: SimHashFingerprintModel):
        super().__init__()
        self.instance = instance

    def saveImpl(self, path: str) -> None:
        DefaultParamsWriter.saveMetadata(self.instance, path, self.sparkSession,
                                         extraMetadata={"n_docs": self.instance.n_docs})
        rows = sorted(self.instance.doc_freq.items())
        schema = "feature string, doc_freq long"
        self.sparkSession.createDataFrame(rows, schema).coalesce(1).write.parquet(f"{path}/doc_freq")


class _ModelReader(MLReader):
    def __init__(self, cls):
        super().__init__()
        self.cls = cls

    def load(self, path: str) -> SimHashFingerprintModel:
        meta = DefaultParamsReader.loadMetadata(path, self.sparkSession)
        rows = self.sparkSession.read.parquet(f"{path}/doc_freq").collect()
        model = self.cls({r["feature"]: int(r["doc_freq"]) for r in rows}, int(meta["n_docs"]))
        model._resetUid(meta["uid"])
        DefaultParamsReader.getAndSetParams(model, meta)
        return model


# The near-duplicate options of SimHashDedup: DedupConfig field -> Param (their defaults are the job's, their
# values checked by the job's code, DedupConfig.check_options). The short-text mode needs the text, which a
# stage after SimHashFingerprint does not read: it is off here, as for the job's stored fingerprints.
_DEDUP_PARAM_OF = {"k": "k", "blocks": "blocks", "min_similarity": "minSimilarity",
                   "signature_bands": "signatureBands", "band_bins": "bandBins", "cluster_mode": "clusterMode",
                   "keep": "keep", "max_component_rounds": "maxComponentRounds",
                   "shuffle_partitions": "shufflePartitions"}
_CONVERTER = {int: TypeConverters.toInt, float: TypeConverters.toFloat, str: TypeConverters.toString}
_FIELD_HELP = {**{f.name: f.metadata["help"] for f in dataclasses.fields(DedupConfig)},
               "shuffle_partitions": "spark.sql.shuffle.partitions of the step; 0 = sized from the input's rows"}
_OUTPUT_COLUMNS = ("cluster_id", "is_duplicate")


class _DedupParams(Params):
    idCol = Param(Params._dummy(), "idCol", "column with the row's id (unique, not null)",
                  typeConverter=TypeConverters.toString)
    fingerprintCol = Param(Params._dummy(), "fingerprintCol", "column with the 64-bit SimHash (bigint), e.g. "
                           "SimHashFingerprint's outputCol", typeConverter=TypeConverters.toString)
    signatureCol = Param(Params._dummy(), "signatureCol", "column with the verification signature (binary), e.g. "
                         "SimHashFingerprint's signatureCol; not needed with minSimilarity=0",
                         typeConverter=TypeConverters.toString)
    # one Param a _DEDUP_PARAM_OF option, made from its DedupConfig field (help text, type)
    locals().update({param: Param(Params._dummy(), param, _FIELD_HELP[name],
                                  typeConverter=_CONVERTER[type(getattr(_JOB, name))])
                     for name, param in _DEDUP_PARAM_OF.items()})

    def __init__(self, *args):
        super().__init__(*args)
        self._setDefault(idCol=_JOB.id_col, fingerprintCol="fingerprint", signatureCol="signature",
                         **{param: getattr(_JOB, name) for name, param in _DEDUP_PARAM_OF.items()})


class SimHashDedup(Transformer, _DedupParams, DefaultParamsReadable, DefaultParamsWritable):
    """The near-duplicate step as a pyspark.ml stage, after SimHashFingerprint in a Pipeline: df with two
    columns added, `cluster_id` (the id of the row kept for its cluster; its own id for a kept row) and
    `is_duplicate` (false exactly for kept rows), the values of near_duplicates(df, fingerprint_col=...) with the
    same options. Every column and row of df stays, so a next stage can filter (`WHERE NOT is_duplicate`) or
    group by cluster.

        Pipeline(stages=[SimHashFingerprint(signatureCol="signature"), SimHashDedup(k=3, minSimilarity=0.8)])
    """

    def __init__(self, *, idCol: str = "id", fingerprintCol: str = "fingerprint", signatureCol: str = "signature",
                 **params):
        super().__init__()
        self._set(idCol=idCol, fingerprintCol=fingerprintCol, signatureCol=signatureCol, **params)

    def options(self) -> dict:
        """The Params as near_duplicates' options (DedupConfig fields)."""
        return {name: self.getOrDefault(param) for name, param in _DEDUP_PARAM_OF.items()}

    def _transform(self, df: DataFrame) -> DataFrame:
        id_col, fp_col, sig_col = (self.getOrDefault(p) for p in ("idCol", "fingerprintCol", "signatureCol"))
        taken = [c for c in _OUTPUT_COLUMNS if c in df.columns]
        if taken:
            raise ValueError(f"SimHashDedup: the input already has column(s) {taken}, which this stage adds: "
                             "drop or rename them first")
        inner = df
        if sig_col != "signature":  # near_duplicates reads the signatures as `signature`, and no other column
            inner = df.drop("signature")
            if sig_col in df.columns:
                inner = inner.withColumnRenamed(sig_col, "signature")
        try:
            found = near_duplicates(inner, id_col=id_col, fingerprint_col=fp_col, **self.options())
        except DedupError as exc:
            raise DedupError(f"SimHashDedup: {_with_param_names(str(exc))}") from None
        # only (id, cluster_id, is_duplicate) stay: checkpointed in the executors (freed with the returned
        # DataFrame), the rest of the step's caches freed now
        clusters = found.clusters.select(F.col("id").alias("__simhash_id"), *_OUTPUT_COLUMNS).localCheckpoint(eager=True)
        found.unpersist()
        joined = df.join(clusters, df[id_col] == clusters["__simhash_id"], "inner")
        return joined.select(*[df[c] for c in df.columns], *[clusters[c] for c in _OUTPUT_COLUMNS])


def _with_param_names(message: str) -> str:
    """A message of the job's checks (naming --min-similarity, or `min_similarity` from near_duplicates) with
    this stage's Param names (minSimilarity)."""
    for name, param in _DEDUP_PARAM_OF.items():
        message = re.sub(rf"(?<![\w-])(--{name.replace('_', '-')}|{name})(?![\w-])", param, message)
    return message
