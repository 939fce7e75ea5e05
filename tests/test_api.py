"""The public API: the fingerprint as a pyspark.ml Transformer, the near-duplicate step on a DataFrame, and
a notebook's session left as it was."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from pyspark.ml import Pipeline, PipelineModel
from pyspark.ml.feature import SQLTransformer
from pyspark.sql import functions as F
from reference import brute_force_related, planted_fingerprints

import simhash_udf
from simhash_udf import (
    DedupError,
    SimHashFingerprint,
    SimHashFingerprintEstimator,
    SimHashFingerprintModel,
    near_duplicates,
    related_pages,
)
from simhash_udf.core.fingerprint import FeatureSpec, fingerprint_batch
from simhash_udf.core.signature import SignatureSpec
from simhash_udf.evaluation.sample_corpus import make_sample_corpus
from simhash_udf.job.cli import main
from simhash_udf.job.config import DedupConfig
from simhash_udf.job.report_schema import check
from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS, _set_checkpoint_dir, checkpoint_dir

# the session settings the job and the API set while they run, and must put back
SESSION_SETTINGS = ("spark.sql.shuffle.partitions", "spark.sql.execution.arrow.maxRecordsPerBatch",
                    "spark.sql.execution.arrow.maxBytesPerBatch", "spark.sql.maxPlanStringLength")
TEXTS = ["今天北京的天气很好，我们去公园散步。", "The quick brown fox jumps over the lazy dog again.", "",
         None, "Ｈｅｌｌｏ　ＷＯＲＬＤ，full-width text", "bad utf-8 \udcff?"]


def test_transformer_keeps_columns_and_reads_binary_text(spark):
    rows = [(i, t, f"u{i}") for i, t in enumerate(TEXTS) if t is None or "\udcff" not in t]
    df = spark.createDataFrame(rows, "id int, text string, url string")
    out = SimHashFingerprint(outputCol="fp", signatureCol="sig").transform(df)
    assert out.columns == ["id", "text", "url", "fp", "sig"]
    got = {r.id: (r.fp, r.sig) for r in out.collect()}
    texts = [t for _, t, _ in rows]
    fps, counts, sigs = fingerprint_batch(texts, FeatureSpec(), SignatureSpec())
    for (i, _, _), fp, n, sig in zip(rows, fps, counts, sigs):
        assert got[i][0] == (int(fp) if n > 0 else None), i  # the core's value; null without features
        assert (got[i][1] is None) == (n <= 0) and (n <= 0 or bytes(got[i][1]) == sig.tobytes()), i
    binary = df.withColumn("text", F.encode("text", "UTF-8"))
    same = {r.id: r.fp for r in SimHashFingerprint(outputCol="fp").transform(binary).collect()}
    assert same == {i: v[0] for i, v in got.items()}


def test_transformer_errors_name_the_param(spark):
    df = spark.createDataFrame([(1, "a b c")], "id int, text string")
    with pytest.raises(ValueError, match="tokenizer"):
        SimHashFingerprint(tokenizer="nope").transform(df)
    with pytest.raises(ValueError, match="inputCol 'body'"):
        SimHashFingerprint(inputCol="body").transform(df)
    with pytest.raises(ValueError, match="already exist"):
        SimHashFingerprint(outputCol="text").transform(df)
    with pytest.raises(DedupError, match="signature"):
        near_duplicates(df.withColumn("fingerprint", F.lit(1).cast("long")), fingerprint_col="fingerprint")
    with pytest.raises(DedupError, match="unknown setting 'no_such_option'"):
        near_duplicates(df, no_such_option=1)
    # values the job refuses (they gave one fingerprint for every page, or null ones, or a silent mix)
    for params, name in [({"tokenizer": "char", "charNgram": 0}, "charNgram"), ({"wordNgram": -1}, "wordNgram"),
                         ({"maxTextChars": 0}, "maxTextChars"), ({"tokenizer": "char", "stopWords": True}, "stopWords")]:
        with pytest.raises(ValueError, match=name):
            SimHashFingerprint(**params).transform(df)
    with pytest.raises(ValueError, match="both 'fp'"):
        SimHashFingerprint(outputCol="fp", signatureCol="fp").transform(df)
    with pytest.raises(ValueError, match="needs no fit: use SimHashFingerprint"):
        SimHashFingerprintEstimator(weighting="binary").fit(df)


@pytest.mark.parametrize("options, message", [
    ({"k": "3"}, "k must be int"), ({"k": 3.0}, "k must be int"), ({"k": True}, "k must be int"),
    ({"min_similarity": "0.8"}, "min_similarity must be float"),
    ({"keep": "earliest:nope"}, "column 'nope' is not in the input"),
])
def test_near_duplicates_checks_options_and_columns_as_the_job_does(spark, options, message):
    """Wrong types ended in a TypeError (or k=True ran as k=1), a missing keep column in an AnalysisException."""
    df = spark.createDataFrame([(1, "a b c")], "id int, text string")
    with pytest.raises(DedupError, match=message):
        near_duplicates(df, **options)


def test_near_duplicates_takes_columns_from_its_config_and_ignores_other_fingerprint_columns(spark):
    """config=DedupConfig(id_col=..., text_col=...) was overridden by the keyword defaults ("id", "text"): with
    an `id` column beside `doc_id` the wrong ids were used. An input that has `fingerprint`, `n_features` and
    `signature` columns (clusters/ of a run, a page table) was ambiguous for the Transformer and for
    fingerprint_col; an int text column was fingerprinted as text."""
    from simhash_udf.job.config import DedupConfig

    text = "一段足够长的中文文本，用来测试近似重复的检测是否正确。" * 3
    df = spark.createDataFrame([(10, 1, text), (20, 2, text + "!"), (30, 3, "something else entirely, in English")],
                               "doc_id long, id long, body string")
    result = near_duplicates(df, config=DedupConfig(id_col="doc_id", text_col="body"), shuffle_partitions=2)
    assert {r.id: r.cluster_id for r in result.clusters.collect()} == {10: 10, 20: 10, 30: 30}
    result.unpersist()
    with pytest.raises(DedupError, match="column 'text' has type int, not string or binary"):
        near_duplicates(spark.createDataFrame([(1, 5)], "id int, text int"))
    clashing = df.select("doc_id", "body", F.lit(7).cast("long").alias("fingerprint"), F.lit(0).alias("n_features"),
                         F.lit(b"x").alias("signature"))
    out = SimHashFingerprint(inputCol="body", outputCol="fp_new", signatureCol="sig_new").transform(clashing)
    assert out.columns == ["doc_id", "body", "fingerprint", "n_features", "signature", "fp_new", "sig_new"]
    rows = out.orderBy("doc_id").collect()
    assert [r.fingerprint for r in rows] == [7, 7, 7] and rows[0].fp_new == rows[1].fp_new != rows[2].fp_new
    found = near_duplicates(out, id_col="doc_id", fingerprint_col="fp_new", min_similarity=0)
    assert {r.id: r.cluster_id for r in found.clusters.collect()} == {10: 10, 20: 10, 30: 30}
    found.unpersist()


@pytest.mark.parametrize("driver_component_edges", [0, DedupConfig().driver_component_edges])
def test_near_duplicates_leaves_the_session_as_it_was(spark, driver_component_edges):
    """The same clusters with the components found in Spark rounds (0) or on the driver (the default), and the
    session as it was afterwards: the rounds' local checkpoints are freed with the rest."""
    before = {k: spark.conf.get(k, None) for k in SESSION_SETTINGS}
    text = "一段足够长的中文文本，用来测试近似重复的检测是否正确。" * 3
    df = spark.createDataFrame([(1, text), (2, text + "!"), (3, "something else entirely, in English")],
                               "id long, text string")
    cached_rdds = set(spark.sparkContext._jsc.getPersistentRDDs().keySet())
    result = near_duplicates(df, shuffle_partitions=2, arrow_batch_size=7,
                             driver_component_edges=driver_component_edges)
    rows = {r.id: (r.cluster_id, r.is_duplicate) for r in result.clusters.collect()}
    assert rows == {1: (1, False), 2: (1, True), 3: (3, False)}
    assert sorted(r.id for r in result.kept.collect()) == [1, 3]
    assert result.report["duplicates"] == 1 and result.report["input_rows"] == 3
    # the job's report, less its job-only fields
    assert check(result.report, api=True) == [] and list(result.report)[-2:] == ["seconds", "shuffle_partitions"]
    assert bool(result.checkpoints) == (driver_component_edges == 0)  # the rounds' local checkpoints (persisted) ...
    result.unpersist()
    assert set(spark.sparkContext._jsc.getPersistentRDDs().keySet()) <= cached_rdds  # ... are freed with the rest
    assert {k: spark.conf.get(k, None) for k in SESSION_SETTINGS} == before


def test_core_does_not_pull_pyspark_through_the_package():
    assert "SimHashFingerprint" in dir(simhash_udf)
    with pytest.raises(AttributeError):
        simhash_udf.no_such_thing  # noqa: B018


def test_notebook_use_leaves_the_session_as_it_was(spark, tmp_path):
    """The public API used the way a notebook uses it, on the caller's session (the suite's): a Pipeline with
    another Transformer, saved and loaded; the near-duplicate step on fingerprints and on text; the CLI on the
    same session; the tfidf-corpus Estimator saved and loaded; the session still usable, with its settings and
    checkpoint directory unchanged."""
    work = str(tmp_path)
    old_dir = checkpoint_dir(spark)
    spark.sparkContext.setCheckpointDir(os.path.join(work, "my-checkpoints"))

    def settings():
        return {k: spark.conf.get(k, None) for k in SESSION_SETTINGS}, checkpoint_dir(spark)

    try:
        _notebook_steps(spark, work, settings)
    finally:
        _set_checkpoint_dir(spark, old_dir)


def _notebook_steps(spark, work, settings):
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


SMALL_RUN_PROBE = """
import json, sys
from simhash_udf.spark.session import small_run_conf
print(json.dumps([small_run_conf(path) for path in sys.argv[1:]]))
"""


def small_and_large_inputs(tmp_path):
    """A local input of one small file and one just over SMALL_RUN_BYTES (sparse: the size without the disk)."""
    from simhash_udf.spark.session import SMALL_RUN_BYTES

    small, large = tmp_path / "small.jsonl", tmp_path / "large.jsonl"
    small.write_text('{"id": 1, "text": "a page"}\n')
    with open(large, "wb") as fh:
        fh.truncate(SMALL_RUN_BYTES + 1)
    return small, large


def test_a_small_local_input_gets_the_short_run_jvm_options(tmp_path):
    """A local run that starts its own JVM (python -m simhash_udf.job.cli) gives it the short-run options when
    the input is local and at most SMALL_RUN_BYTES; not for a larger or non-local input, not under
    spark-submit (the JVM runs already), not for another master, and never over the caller's own choice
    (SIMHASH_DEDUP_JAVA_OPTIONS, even empty, or a spark-defaults.conf that names the driver's options).
    Asked in a Python without Spark, as the CLI asks before it starts the JVM."""
    small, large = small_and_large_inputs(tmp_path)
    paths = [str(small), str(large), f"file://{small}", "hdfs://nn/crawl/2026-11-21"]
    base = {k: v for k, v in os.environ.items() if k not in (
        "SIMHASH_DEDUP_JAVA_OPTIONS", "SIMHASH_DEDUP_MASTER", "PYSPARK_GATEWAY_PORT", "SPARK_CONF_DIR")}
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.executor.memory 2g\nspark.driver.extraJavaOptions  -Xss4m\n")

    def decide(**env):
        proc = subprocess.run([sys.executable, "-c", SMALL_RUN_PROBE, *paths], env={**base, **env},
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return json.loads(proc.stdout)

    short = {"spark.driver.extraJavaOptions": SHORT_RUN_JAVA_OPTIONS}
    assert decide() == [short, {}, short, {}]
    assert decide(SIMHASH_DEDUP_MASTER="local[2]") == [short, {}, short, {}]
    none = [{}] * len(paths)
    assert decide(SIMHASH_DEDUP_JAVA_OPTIONS="") == none
    assert decide(SIMHASH_DEDUP_MASTER="spark://127.0.0.1:7077") == none
    assert decide(PYSPARK_GATEWAY_PORT="1") == none  # spark-submit's Python
    assert decide(SPARK_CONF_DIR=str(conf_dir)) == none
    (conf_dir / "spark-defaults.conf").write_text("spark.executor.memory 2g\n")
    assert decide(SPARK_CONF_DIR=str(conf_dir)) == [short, {}, short, {}]


def test_sessions_the_job_starts_have_dataframe_debugging_off_unless_the_user_sets_it(monkeypatch, spark, tmp_path):
    """get_spark starts a session with JOB_SESSION_SETTINGS (the suite's own session shows that they reach it),
    except a key the caller's conf names, or the user sets: in a spark-defaults.conf for a JVM that pyspark
    starts; under spark-submit in its JVM's configuration (--conf arrives there as a system property, set here
    on the suite's JVM)."""
    from simhash_udf.spark.session import JOB_SESSION_SETTINGS, job_session_conf

    key = "spark.python.sql.dataFrameDebugging.enabled"
    assert JOB_SESSION_SETTINGS == {key: "false"}
    assert spark.conf.get(key) == "false"
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert job_session_conf(None) == {key: "false"}
    assert job_session_conf({"a": "b", key: "true"}) == {"a": "b", key: "true"}
    (tmp_path / "spark-defaults.conf").write_text(f"spark.executor.memory 2g\n{key} true\n")
    assert job_session_conf({"a": "b"}) == {"a": "b"}

    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")  # spark-submit's Python: its JVM's configuration decides
    system = spark.sparkContext._jvm.java.lang.System
    suites = system.getProperty(key)  # get_spark started the suite's JVM with the setting
    try:
        system.clearProperty(key)
        assert job_session_conf({"a": "b"}) == {"a": "b", key: "false"}
        system.setProperty(key, "true")
        assert job_session_conf({"a": "b"}) == {"a": "b"}
    finally:
        system.clearProperty(key) if suites is None else system.setProperty(key, suites)


def test_a_small_local_run_does_not_compress_its_shuffles(monkeypatch, tmp_path):
    """small_local_run_settings: spark.shuffle.compress off for a local master (spark-submit's, or SIMHASH_DEDUP_MASTER's
    for a JVM the job starts) and a local input of at most SMALL_RUN_BYTES; nothing for a larger or non-local input or
    for another master; and job_session_conf leaves the key to a user who sets it in spark-submit's configuration."""
    from pyspark import SparkConf

    from simhash_udf.spark import session

    small, large = small_and_large_inputs(tmp_path)
    off = {"spark.shuffle.compress": "false"}
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("SIMHASH_DEDUP_MASTER", raising=False)
    decide = session.small_local_run_settings
    assert decide(str(small)) == off and decide(f"file://{small}") == off
    assert decide(str(large)) == {} and decide("hdfs://nn/crawl/2026-11-21") == {}
    monkeypatch.setenv("SIMHASH_DEDUP_MASTER", "spark://127.0.0.1:7077")
    assert decide(str(small)) == {}

    def submitted(**conf):  # spark-submit's Python: its JVM's configuration decides
        monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
        monkeypatch.setattr(session, "spark_submit_conf", lambda: SparkConf(loadDefaults=False).setAll(list(conf.items())))

    submitted(**{"spark.master": "local[2]"})
    assert decide(str(small)) == off and decide(str(large)) == {}
    submitted(**{"spark.master": "yarn"})
    assert decide(str(small)) == {}
    submitted(**{"spark.master": "local[2]", "spark.shuffle.compress": "true"})
    assert session.job_session_conf(None, decide(str(small))) == {}


def test_spark_submits_jvm_keeps_the_users_settings_and_gets_the_short_run_compiler(tmp_path):
    """Under a real spark-submit (local[1]) on a small input, the job's session start leaves the user's --conf of a
    JOB_SESSION_SETTINGS key as given (job_session_conf adds nothing for it; old code: it added the job's value,
    since SparkConf() read an empty configuration before the gateway was up) and adds
    SHORT_RUN_COMPILER_DIRECTIVES to the running JVM (prepare_job_jvm, start_job_session's first half)."""
    small, _ = small_and_large_inputs(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("SIMHASH_DEDUP_JAVA_OPTIONS", "PYSPARK_SUBMIT_ARGS")}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "spark-submit"), "--master", "local[1]",
         "--conf", "spark.python.sql.dataFrameDebugging.enabled=true", "--conf", "spark.ui.enabled=false",
         os.path.join(os.path.dirname(__file__), "submit_session_check.py"), str(small)],
        env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr  # spark-submit merges its Python's stderr into its stdout
    assert proc.returncode == 0, output[-3000:]
    answer = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"session_settings_added"')]
    assert answer == [{"session_settings_added": {}, "small_run_settings_added": {"spark.shuffle.compress": "false"},
                       "c2_excluded_everywhere": 1,
                       "c2_kept_for": ["org/apache/spark/unsafe/types/UTF8String.*"]}], output[-3000:]
    assert "compiles with the client compiler alone from now on" in output


def test_a_large_local_input_relaunches_spark_submit_with_the_large_run_driver(monkeypatch, tmp_path):
    """The decision (session.relaunch_wanted) from the JVM's configuration and the input: only under spark-submit,
    once (not when relaunched already), in local mode, for a local input of more than SMALL_RUN_BYTES, never over the
    user's own driver memory or JVM options (in the configuration or the launcher's environment, even empty) or a
    session that runs already; and the command (relaunch_command) keeps the user's settings and the application's
    arguments."""
    from pyspark import SparkConf

    from simhash_udf.spark import session
    from simhash_udf.spark.session import LARGE_RUN_JAVA_OPTIONS, RELAUNCHED_ENV, relaunch_command, relaunch_wanted

    small, large = small_and_large_inputs(tmp_path)
    for name in (RELAUNCHED_ENV, *session.USER_DRIVER_ENVIRONMENT):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(session.SparkSession, "getActiveSession", staticmethod(lambda: None))

    def wanted(path=str(large), **conf):
        return relaunch_wanted(path, SparkConf(loadDefaults=False).setAll(list(conf.items())))

    local = {"spark.master": "local[*]"}
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert not wanted(**local)  # python -m: small_run_conf and get_spark choose the JVM it starts
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert wanted(**local) and wanted(f"file://{large}", **local)
    assert not wanted(str(small), **local) and not wanted("hdfs://nn/crawl/2026-11-21", **local)
    assert not wanted(**{"spark.master": "yarn"}) and not wanted()
    for key in session.USER_DRIVER_SETTINGS:
        assert not wanted(**local, **{key: "4g" if key.endswith("memory") else "-Xss4m"})
    for name in (RELAUNCHED_ENV, *session.USER_DRIVER_ENVIRONMENT):
        monkeypatch.setenv(name, "")
        assert not wanted(**local), name
        monkeypatch.delenv(name)
    monkeypatch.setattr(session.SparkSession, "getActiveSession", staticmethod(lambda: object()))
    assert not wanted(**local)

    monkeypatch.setenv("SIMHASH_DEDUP_DRIVER_MEMORY", "3g")
    given = SparkConf(loadDefaults=False).setAll([("spark.master", "local[2]"), ("spark.app.submitTime", "1"),
                                                  ("spark.sql.shuffle.partitions", "8")])
    command = relaunch_command(given, ["/jobs/dedup_job.py", "--input", str(large)])
    assert command[0].endswith(os.path.join("bin", "spark-submit"))
    assert command[1:] == ["--driver-memory", "3g", "--driver-java-options", session.large_run_java_options(),
                           "--conf", "spark.master=local[2]", "--conf", "spark.sql.shuffle.partitions=8",
                           "/jobs/dedup_job.py", "--input", str(large)]
    assert command[4].startswith(LARGE_RUN_JAVA_OPTIONS)


@pytest.mark.parametrize("setting, huge", [("always [madvise] never\n", True), ("[always] madvise never\n", True),
                                           ("always madvise [never]\n", False), ("always madvise never\n", False),
                                           (None, False)])
def test_the_large_run_heap_asks_for_huge_pages_where_the_kernel_gives_them(tmp_path, setting, huge):
    """session.large_run_java_options: the huge-pages option beside LARGE_RUN_JAVA_OPTIONS when the kernel's chosen
    mode (in brackets) gives transparent huge pages to a process that asks; without the setting (not Linux, where the
    JVM has no such option) or with "never", the large-run options alone."""
    from simhash_udf.spark.session import (
        HUGE_PAGES_OPTION,
        LARGE_RUN_JAVA_OPTIONS,
        large_run_java_options,
        transparent_huge_pages,
    )

    path = tmp_path / "enabled"
    if setting is not None:
        path.write_text(setting)
    assert transparent_huge_pages(str(path)) is huge
    assert large_run_java_options(str(path)) == (f"{LARGE_RUN_JAVA_OPTIONS} {HUGE_PAGES_OPTION}" if huge
                                                 else LARGE_RUN_JAVA_OPTIONS)


def test_spark_submit_on_a_large_local_input_runs_again_with_the_large_run_driver(tmp_path):
    """Under a real spark-submit (local[1], Spark's default driver of 1g) on a local input over SMALL_RUN_BYTES, the
    entry point's relaunch (session.relaunch_if_faster) ends in a JVM with the large-run heap and JVM options,
    the user's --conf and the application's arguments as given, relaunched once."""
    from simhash_udf.spark.session import HUGE_PAGES_OPTION, LARGE_RUN_JAVA_OPTIONS, transparent_huge_pages

    _, large = small_and_large_inputs(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("SIMHASH_DEDUP_JAVA_OPTIONS", "PYSPARK_SUBMIT_ARGS",
                                                            "SIMHASH_DEDUP_RELAUNCHED", "SPARK_DRIVER_MEMORY")}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1", SIMHASH_DEDUP_DRIVER_MEMORY="2g")
    proc = subprocess.run(
        [os.path.join(os.path.dirname(sys.executable), "spark-submit"), "--master", "local[1]",
         "--conf", "spark.ui.enabled=false", os.path.join(os.path.dirname(__file__), "submit_relaunch_check.py"),
         str(large), "--an-argument"], env=env, capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-3000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"relaunched"')]
    assert len(answers) == 1, output[-3000:]
    answer = answers[0]
    assert answer["relaunched"] and answer["arguments"] == [str(large), "--an-argument"]
    assert answer["max_heap_mb"] > 1536  # Spark's default driver: 1g
    assert "-Xmx2g" in answer["jvm_arguments"]
    assert all(option in answer["jvm_arguments"] for option in LARGE_RUN_JAVA_OPTIONS.split())
    # the heap on huge pages where this kernel gives them, and the JVM kept the option (HotSpot turns it off when
    # its own check of the kernel fails)
    assert (HUGE_PAGES_OPTION in answer["jvm_arguments"]) is transparent_huge_pages()
    assert (HUGE_PAGES_OPTION in answer["vm_flags"]) is transparent_huge_pages()
    assert answer["conf"]["spark.master"] == "local[1]" and answer["conf"]["spark.ui.enabled"] == "false"
    assert "running spark-submit again with --driver-memory 2g" in output


def test_only_local_mode_under_spark_submit_leaves_the_session_to_its_jvm(monkeypatch):
    """The job leaves its session to spark-submit's JVM in local mode only (session.stopped_by_its_jvm): that JVM's
    shutdown hook stops the SparkContext once the job's Python has ended (tests/test_readme_submit.py runs the
    README's spark-submit line and finds its event log closed with the application's end). Elsewhere (a cluster
    master, `python -m`) the job stops its session itself."""
    from simhash_udf.spark.session import stopped_by_its_jvm

    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert stopped_by_its_jvm("local[2]") and stopped_by_its_jvm("local")
    assert not stopped_by_its_jvm("spark://127.0.0.1:7077") and not stopped_by_its_jvm("yarn")
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT")
    assert not stopped_by_its_jvm("local[2]")


def test_the_entry_point_and_its_workers_import_the_installed_pyspark_under_its_own_spark_submit():
    """Under the spark-submit of the installed pyspark, jobs/dedup_job.py imports pyspark and py4j from the installed
    packages (compiled modules) rather than from the zips spark-submit puts first on PYTHONPATH (same code,
    compiled at every import), and so do the Python workers of the job's session (worker_daemon, Spark's
    spark.python.daemon.module: Spark puts the zips first on the workers' path too)."""
    import pyspark

    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "spark-submit"), "--master", "local[1]",
                           "--conf", "spark.ui.enabled=false",
                           os.path.join(os.path.dirname(__file__), "submit_import_check.py")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"driver"')]
    installed = {"pyspark": pyspark.__file__, "py4j": sys.modules["py4j"].__file__}
    assert answers == [{"driver": installed, "worker": installed, "daemon": "simhash_udf.spark.worker_daemon"}], \
        proc.stdout[-3000:]
    assert ".zip" not in pyspark.__file__


def test_the_workers_daemon_only_where_the_workers_find_this_package_installed(monkeypatch, tmp_path):
    """worker_daemon.daemon_conf: Spark's daemon module is replaced for a local master whose workers run this very
    interpreter (its path: a virtualenv's python links to its base), which has this package installed; not on a
    cluster, for another interpreter, or without the package's distribution (a checkout on sys.path, --py-files)."""
    from importlib import metadata

    from simhash_udf.spark.worker_daemon import MODULE, daemon_conf

    assert daemon_conf("local[2]", sys.executable) == {"spark.python.daemon.module": MODULE}
    assert daemon_conf("local", sys.executable) == {"spark.python.daemon.module": MODULE}
    assert daemon_conf("spark://127.0.0.1:7077", sys.executable) == {} and daemon_conf("yarn", sys.executable) == {}
    link = tmp_path / "python"
    link.symlink_to(sys.executable)
    assert daemon_conf("local[2]", str(link)) == {}

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "distribution", missing)
    assert daemon_conf("local[2]", sys.executable) == {}


def test_short_run_compiler_directives_only_for_a_small_local_input_under_spark_submit(monkeypatch, tmp_path):
    """The decision (session.short_run_directives_wanted) from the JVM's configuration and the input: only under
    spark-submit, in local mode, for a local input of at most SMALL_RUN_BYTES, and never over the user's own JVM
    options (--driver-java-options; SIMHASH_DEDUP_JAVA_OPTIONS, even empty) or a session that runs already."""
    from pyspark import SparkConf

    from simhash_udf.spark import session
    from simhash_udf.spark.session import short_run_directives_wanted

    small, large = small_and_large_inputs(tmp_path)
    monkeypatch.delenv("SIMHASH_DEDUP_JAVA_OPTIONS", raising=False)
    monkeypatch.setattr(session.SparkSession, "getActiveSession", staticmethod(lambda: None))

    def wanted(path=str(small), **conf):
        return short_run_directives_wanted(path, SparkConf(loadDefaults=False).setAll(list(conf.items())))

    local = {"spark.master": "local[2]"}
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    assert not wanted(**local)  # not under spark-submit: small_run_conf's JVM options instead
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    assert wanted(**local) and wanted(f"file://{small}", **local)
    assert not wanted(str(large), **local)
    assert not wanted("hdfs://nn/crawl/2026-11-21", **local)
    assert not wanted(**{"spark.master": "spark://127.0.0.1:7077"}) and not wanted()
    assert not wanted(**local, **{"spark.driver.extraJavaOptions": "-Xss4m"})
    monkeypatch.setenv("SIMHASH_DEDUP_JAVA_OPTIONS", "")
    assert not wanted(**local)
    monkeypatch.delenv("SIMHASH_DEDUP_JAVA_OPTIONS")
    monkeypatch.setattr(session.SparkSession, "getActiveSession", staticmethod(lambda: object()))
    assert not wanted(**local)


def test_java_options_for_a_started_jvm_go_before_the_callers(monkeypatch, spark):
    """SIMHASH_DEDUP_JAVA_OPTIONS (e.g. LARGE_RUN_JAVA_OPTIONS) reaches a JVM that get_spark starts, before a
    caller's own options (the later of two equal flags wins), and without it nothing is set, so a
    spark-defaults.conf value is left alone. The suite's own session shows that the key reaches the JVM."""
    from simhash_udf.spark.session import LARGE_RUN_JAVA_OPTIONS, with_java_options

    monkeypatch.delenv("SIMHASH_DEDUP_JAVA_OPTIONS", raising=False)
    assert with_java_options(None) == {}
    assert with_java_options({"spark.driver.extraJavaOptions": "-Xss4m"}) == {"spark.driver.extraJavaOptions": "-Xss4m"}
    monkeypatch.setenv("SIMHASH_DEDUP_JAVA_OPTIONS", f" {LARGE_RUN_JAVA_OPTIONS} ")
    assert with_java_options({"a": "b"}) == {"a": "b", "spark.driver.extraJavaOptions": LARGE_RUN_JAVA_OPTIONS}
    assert with_java_options({"spark.driver.extraJavaOptions": "-Xss4m"}) == {
        "spark.driver.extraJavaOptions": f"{LARGE_RUN_JAVA_OPTIONS} -Xss4m"}
    jvm = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert "-XX:+UseParallelGC" in list(jvm.getInputArguments())  # tests/conftest.py's option, through get_spark


def readme_python_snippet() -> str:
    """The README's Python API snippet, as written."""
    with open(os.path.join(os.path.dirname(__file__), "..", "README.md"), encoding="utf-8") as fh:
        readme = fh.read()
    section = readme[readme.index("**Python API**"):]
    code = section[section.index("```python\n") + len("```python\n"):]
    return code[:code.index("\n```")]


def test_readme_python_snippet_runs_as_a_script_with_the_projects_python(tmp_path):
    """The snippet as a script in a fresh process with the project's Python and no activated virtualenv (no
    VIRTUAL_ENV, no PYSPARK_PYTHON, the venv's bin not on PATH): it failed inside a Python worker with
    `No module named 'simhash_udf'` under a Java stack trace."""
    script = tmp_path / "snippet.py"
    script.write_text(readme_python_snippet() + "\nimport json\nprint(json.dumps({'report': result.report['duplicates'], "
                      "'clusters': sorted(map(tuple, result.clusters.select('id', 'cluster_id').collect())), "
                      "'pipeline': sorted(map(tuple, model.transform(df).select('id', 'is_duplicate').collect()))}))\n")
    venv_bin = os.path.dirname(sys.executable)
    env = {k: v for k, v in os.environ.items() if k not in (
        "VIRTUAL_ENV", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "PYSPARK_GATEWAY_PORT",
        "PYSPARK_SUBMIT_ARGS", "SIMHASH_DEDUP_MASTER")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if os.path.realpath(p) != venv_bin)
    # a JVM that lives for a few small queries: the short-run options (the API takes them from the environment)
    env.update(SPARK_LOCAL_IP="127.0.0.1", SIMHASH_DEDUP_MASTER="local[1]", SIMHASH_DEDUP_JAVA_OPTIONS=SHORT_RUN_JAVA_OPTIONS)
    proc = subprocess.run([sys.executable, str(script)], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer = json.loads(proc.stdout.strip().splitlines()[-1])
    assert answer == {"report": 1, "clusters": [[1, 1], [2, 1], [3, 3]],
                      "pipeline": [[1, False], [2, True], [3, False]]}, proc.stdout[-2000:]


def test_workers_that_cannot_import_the_package_are_named_with_the_fix_before_any_job(spark):
    """A session whose Python workers run an interpreter without the package (here the venv's base Python, as
    `python3` from PATH is without an activated venv): one line naming the interpreter and the fix, from
    near_duplicates and the fingerprint stages, before any Spark job runs."""
    from simhash_udf.spark import workers

    sc = spark.sparkContext
    df = spark.createDataFrame([(1, "a b c d e f")], "id long, text string")
    base_python = os.path.realpath(sys._base_executable)
    assert workers.import_failure(sys.executable, workers.worker_environment(sc)) is None
    # ('simhash_udf' itself, or from the repository's folder, where a worker finds it too, a dependency of it)
    assert "ModuleNotFoundError: No module named" in workers.import_failure(base_python, workers.worker_environment(sc))
    own, sc.pythonExec = sc.pythonExec, base_python
    sc.setJobGroup("worker-python-check", "no jobs expected")
    try:
        for call in (lambda: near_duplicates(df), lambda: SimHashFingerprint().transform(df),
                     lambda: SimHashFingerprintEstimator().fit(df)):
            with pytest.raises(DedupError) as caught:
                call()
            message = str(caught.value)
            assert "\n" not in message and repr(base_python) in message and "No module named" in message
            assert f"set PYSPARK_PYTHON={sys.executable} before the session starts" in message
        assert list(sc.statusTracker().getJobIdsForGroup("worker-python-check")) == []
    finally:
        sc.pythonExec = own
        sc.setLocalProperty("spark.jobGroup.id", None)


def test_api_shuffle_partitions_follow_the_input_not_the_session():
    from simhash_udf.job.pipeline import api_shuffle_partitions

    assert [api_shuffle_partitions(rows, 2) for rows in (0, 32, 25_000, 10**6, 10**8)] == [1, 1, 3, 4, 400]
    assert api_shuffle_partitions(32, 1000) == 1 and api_shuffle_partitions(10**7, 1000) == 1000


@pytest.mark.parametrize("adaptive", ["true", "false"])
def test_near_duplicates_sizes_its_shuffles_from_its_input_on_a_default_session(spark, adaptive):
    """On a session with Spark's default of 200 shuffle partitions a 32-row call ran 13,522 tasks (stages of
    up to 400): it sizes its own partitions from the rows (one here), and the session keeps its 200. Also with
    adaptive execution off, which merges no small partitions: the id check, before the rows are counted, ran
    200 tasks there."""
    from simhash_udf.spark.session import scoped_settings

    sc = spark.sparkContext
    df = spark.createDataFrame(pd.DataFrame(make_sample_corpus(32, seed=5)).head(32)).repartition(2)
    with scoped_settings(spark, {"spark.sql.shuffle.partitions": "200", "spark.sql.adaptive.enabled": adaptive}):
        sc.setJobGroup("api-partitions", "tasks counted")
        try:
            result = near_duplicates(df)
            assert result.clusters.count() == 32
        finally:
            sc.setLocalProperty("spark.jobGroup.id", None)
        assert spark.conf.get("spark.sql.shuffle.partitions") == "200"
    tracker = sc.statusTracker()
    stages = [tracker.getStageInfo(s) for j in tracker.getJobIdsForGroup("api-partitions")
              for s in tracker.getJobInfo(j).stageIds]
    tasks = [s.numTasks for s in stages if s is not None]
    assert result.report["shuffle_partitions"] == 1 and tasks
    # the input's two partitions, one partition a shuffle; the edges' union before the components are collected
    # has one more: the sentence-key pairs, made on the driver as one partition
    assert max(tasks) <= 3, tasks
    result.unpersist()


def test_related_pages_lists_each_kept_rows_nearest_kept_rows(spark):
    """related_pages: the near-duplicate clusters as near_duplicates gives them, plus each kept row's n
    nearest other kept rows within `distance` bits (brute force over the kept rows), a duplicate never
    listed; n must be at least 1."""
    rng = np.random.default_rng(3)
    fps = planted_fingerprints(rng, 12, 12, max_extra=4)
    df = spark.createDataFrame([(i, fp) for i, fp in enumerate(fps)], "id long, fingerprint long")
    result = related_pages(df, n=3, distance=12, fingerprint_col="fingerprint", min_similarity=0,
                           shuffle_partitions=3)
    clusters = {r.id: r for r in result.clusters.collect()}
    kept = sorted(i for i, r in clusters.items() if not r.is_duplicate)
    got = sorted((r.id, r.related_id, r.distance, r.rank) for r in result.related.collect())
    assert got and got == brute_force_related(kept, [fps[i] for i in kept], kept, 3, 12)
    assert result.report["related"]["pages"] == len(kept) and len(kept) < len(fps)
    assert all(r.similarity is None for r in result.related.collect())  # no signatures
    result.unpersist()
    with pytest.raises(DedupError, match="n must be a whole number of pages, at least 1"):
        related_pages(df, n=0, fingerprint_col="fingerprint", min_similarity=0)
    with pytest.raises(DedupError, match="--related-distance must be in 1..32"):
        related_pages(df, n=2, distance=40, fingerprint_col="fingerprint", min_similarity=0)
