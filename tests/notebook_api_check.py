"""Run by tests/test_api.py in a Python of its own: the public API used the way a notebook uses it, on a
session this script creates itself. Prints CHECKS OK at the end; any failed check raises."""
import os
import sys
import tempfile

import pandas as pd
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import SQLTransformer
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from simhash_udf import SimHashFingerprint, SimHashFingerprintEstimator, SimHashFingerprintModel, near_duplicates
from simhash_udf.evaluation.sample_corpus import make_sample_corpus

work = tempfile.mkdtemp(prefix="notebook-")
spark = (SparkSession.builder.master("local[2]").appName("notebook")
         .config("spark.sql.shuffle.partitions", "3").config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setCheckpointDir(os.path.join(work, "my-checkpoints"))
CONF = ("spark.sql.shuffle.partitions", "spark.sql.execution.arrow.maxRecordsPerBatch",
        "spark.sql.execution.arrow.maxBytesPerBatch")


def settings():
    jsc = spark.sparkContext._jsc.sc()
    return {k: spark.conf.get(k, None) for k in CONF}, jsc.getCheckpointDir().get()


before = settings()
pages = pd.DataFrame(make_sample_corpus(160, seed=5))
df = spark.createDataFrame(pages).withColumn("source", F.lit("crawl-1"))

# 1. a Pipeline: another Transformer, then the fingerprint; saved, loaded, the same rows
pipeline = Pipeline(stages=[
    SQLTransformer(statement="SELECT *, length(text) AS chars FROM __THIS__"),
    SimHashFingerprint(inputCol="text", outputCol="fp", signatureCol="signature"),
])
model = pipeline.fit(df)
model.write().overwrite().save(os.path.join(work, "pipeline"))
loaded = PipelineModel.load(os.path.join(work, "pipeline"))
a = model.transform(df).toPandas().sort_values("id").reset_index(drop=True)
b = loaded.transform(df).toPandas().sort_values("id").reset_index(drop=True)
assert list(a.columns) == list(pages.columns) + ["source", "chars", "fp", "signature"], list(a.columns)
assert a["fp"].equals(b["fp"]) and a["signature"].equals(b["signature"])
assert a["fp"].notna().sum() > 150

# 2. the near-duplicate step on the fingerprints, and on the text: the same clusters
fps = loaded.transform(df)
by_fp = near_duplicates(fps, fingerprint_col="fp")
by_text = near_duplicates(df)
c1 = by_fp.clusters.toPandas().sort_values("id").reset_index(drop=True)
c2 = by_text.clusters.toPandas().sort_values("id").reset_index(drop=True)
assert c1[["id", "cluster_id", "is_duplicate"]].equals(c2[["id", "cluster_id", "is_duplicate"]]), "fp vs text"
dups = int(c2["is_duplicate"].sum())
assert dups > 20 and by_text.report["duplicates"] == dups, (dups, by_text.report["duplicates"])
assert by_text.kept.count() == len(pages) - dups and set(by_text.kept.columns) == set(df.columns)

# 3. the job on the same rows gives the same clusters (and does not stop this session)
from simhash_udf.job.cli import main  # noqa: E402

pages.to_parquet(os.path.join(work, "pages.parquet"))
assert main(["--input", os.path.join(work, "pages.parquet"), "--output", os.path.join(work, "out")]) == 0
job = pd.read_parquet(os.path.join(work, "out", "clusters")).sort_values("id").reset_index(drop=True)
assert job[["id", "cluster_id", "is_duplicate"]].equals(c2[["id", "cluster_id", "is_duplicate"]]), "api vs job"

# 4. the Estimator (weighting tfidf-corpus): fit, save, load, the same fingerprints
est = SimHashFingerprintEstimator(inputCol="text", outputCol="fp")
fitted = est.fit(df)
fitted.write().overwrite().save(os.path.join(work, "idf-model"))
again = SimHashFingerprintModel.load(os.path.join(work, "idf-model"))
f1 = fitted.transform(df).select("id", "fp").toPandas().sort_values("id").reset_index(drop=True)
f2 = again.transform(df).select("id", "fp").toPandas().sort_values("id").reset_index(drop=True)
assert f1.equals(f2) and again.idf.digest == fitted.idf.digest and len(fitted.doc_freq) > 100
assert not f1["fp"].equals(a["fp"]), "tfidf-corpus fingerprints should differ from binary ones"

# 5. the caller's session: still running, settings and checkpoint directory as they were
by_fp.unpersist()
by_text.unpersist()
assert spark.range(5).count() == 5
assert settings() == before, (settings(), before)
spark.stop()
print("CHECKS OK", dups, file=sys.stdout)
