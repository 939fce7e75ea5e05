"""simhash-dedup: near-duplicate detection for web crawls with 64-bit SimHash on Spark.

The public API (pyspark is imported on first use only, so `simhash_udf.core` runs without it):

    from simhash_udf import SimHashFingerprint, near_duplicates
    fp = SimHashFingerprint(inputCol="text", outputCol="fingerprint", signatureCol="signature")
    result = near_duplicates(fp.transform(df), fingerprint_col="fingerprint")   # or near_duplicates(df)
    result.clusters, result.kept, result.report

- SimHashFingerprint, SimHashFingerprintEstimator, SimHashFingerprintModel, SimHashDedup: pyspark.ml stages
  (spark/ml.py)
- near_duplicates, NearDuplicates: the job's near-duplicate stages on a DataFrame (job/api.py)
- related_pages: the same plus each kept row's n nearest kept rows within a looser distance (result.related)
- DedupConfig: every option and its default (job/config.py); DedupError: a problem the user can fix
- get_spark: the active session, or a local one on every core whose Python workers run this interpreter
- run: the whole job (files in, output directory out) on a session (job/pipeline.py)
"""

__version__ = "0.1.0"

_EXPORTS = {
    "SimHashFingerprint": "simhash_udf.spark.ml",
    "SimHashFingerprintEstimator": "simhash_udf.spark.ml",
    "SimHashFingerprintModel": "simhash_udf.spark.ml",
    "SimHashDedup": "simhash_udf.spark.ml",
    "near_duplicates": "simhash_udf.job.api",
    "NearDuplicates": "simhash_udf.job.api",
    "related_pages": "simhash_udf.job.api",
    "DedupConfig": "simhash_udf.job.config",
    "DedupError": "simhash_udf.errors",
    "run": "simhash_udf.job.pipeline",
    "get_spark": "simhash_udf.spark.session",
}
__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'simhash_udf' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__
