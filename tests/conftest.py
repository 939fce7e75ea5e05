"""One local SparkSession for the whole suite (starting one costs about 5 s)."""
import os
import sys

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
# No class archive (simhash_udf.spark.class_archive) for the suite's runs, whether or not this environment has one
# (scripts/ship.sh writes it): a small spark-submit run is relaunched with it, and the tests that count processes,
# JVMs or signals would then depend on an earlier command. tests/test_class_archive.py gives its own.
os.environ["SIMHASH_DEDUP_CLASS_ARCHIVE"] = ""


# The C2 compiler only for what stays hot: HotSpot's tier-4 thresholds x10. The suite keeps both cores busy (96%
# of the CPU), and the two test processes' JVMs are most of it; at HotSpot's defaults C2 takes a quarter of their
# CPU, for thousands of short queries whose code is rarely hot for long. With these C2 takes half as much and
# the suite is shorter, though the code it no longer compiles runs a little slower. The client compiler alone
# (-XX:TieredStopAtLevel=1) is faster for the first files and slower for the later ones (docs/performance.md).
TEST_JVM_C2_THRESHOLDS = ("-XX:Tier4InvocationThreshold=50000 -XX:Tier4MinInvocationThreshold=6000 "
                          "-XX:Tier4CompileThreshold=150000 -XX:Tier4BackEdgeThreshold=400000")


@pytest.fixture(scope="session")
def spark():
    from simhash_udf.spark.session import get_spark

    # no web UI (the tests never read it) and two shuffle partitions (one task per core, still more than one
    # partition: fewer tasks for the tests' small inputs).
    # The suite plans a few thousand different queries in this one JVM: a generated-code cache that holds them
    # (Spark keeps 100) and the parallel collector (G1's concurrent threads compete with the tasks for the
    # 2 cores); with both tests/test_job.py is ~12% shorter.
    # A heap of 3g, not the job's half of the RAM: scripts/test.sh runs the test files in parallel processes, each
    # with a session of its own, and three sessions growing towards 12g each had the kernel kill one (24 GiB).
    # get_spark also turns PySpark's DataFrame debugging off (session.JOB_SESSION_SETTINGS): fewer py4j round
    # trips, which shortens a file run in one process; scripts/test.sh's two busy processes gain little.
    session = get_spark("simhash-dedup-tests", master="local[2]", conf={
        "spark.driver.memory": "3g",
        "spark.ui.enabled": "false",
        "spark.sql.codegen.cache.maxEntries": "5000",
        "spark.driver.extraJavaOptions": "-XX:+UseParallelGC " + TEST_JVM_C2_THRESHOLDS,
    })
    session.conf.set("spark.sql.shuffle.partitions", "2")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


# Markers (registered in pyproject.toml): `pytest -m "not spark"` runs the pure tests alone: no JVM, nothing
# installed. A test is `spark` when it uses the session fixture (directly or through another fixture), starts
# Spark in a subprocess (the modules below), or needs a JVM or an environment built on first use
# (BUILT_ENVIRONMENT_FIXTURES: Airflow's run the DAG's spark-submit); `cluster` starts a standalone cluster;
# `airflow` needs the Airflow environments (scripts/airflow_env.sh); `slow` is set on the test itself.
SUBPROCESS_SPARK = {"test_cluster.py", "test_job.py", "test_output_safety.py", "test_report_html.py",
                    "test_history_safety.py", "test_readme_submit.py", "test_api.py"}
AIRFLOW = {"test_airflow.py"}
# Fixtures that build an environment on first use (the two Airflow ones of scripts/airflow_env.sh, ~500 MB;
# Chromium, scripts/chromium_env.sh) or start a JVM (the Hadoop client): their tests are `spark`, so that
# `pytest -m "not spark"` neither builds nor starts them.
BUILT_ENVIRONMENT_FIXTURES = {"airflow_pythons", "chromium", "hadoop_fs"}
# over ~20 s each on the 2-core CI machine (pytest --durations): skip them with -m "not slow"
SLOW = {"test_executor_killed_mid_job", "test_clusters_equal_brute_force_components",
        "test_bad_shapes_converge_in_few_rounds", "test_random_graphs_match_union_find",
        "test_each_day_equals_one_run_over_all_days", "test_groups_cut_across_arrow_batches_stay_exact",
        "test_verified_mode_equals_brute_force_definition", "test_dag_loads_with_the_day_that_just_ended"}


# Seconds per test file on the 2-core CI machine (pytest --durations=0 summed per file, the Spark session's
# start in a file's first Spark test included; only their order matters). scripts/test.sh
# hands whole files to two processes in the order of collection (--dist loadfile --no-loadscope-reorder), each
# process taking the next file when it is done with one: the longest first keeps the two busy until the end
# (xdist's own order, by number of tests, left test_cluster.py and test_history.py, few tests but minutes, for
# last). Files not listed take a few seconds and come last.
FILE_SECONDS = {"test_airflow.py": 280, "test_job.py": 265, "test_cluster.py": 220, "test_output_safety.py": 170,
                "test_history.py": 140, "test_readme_submit.py": 100,
                "test_history_safety.py": 120,
                "test_verified.py": 111, "test_exactness.py": 81, "test_short_text.py": 72, "test_bands.py": 68,
                "test_inputs.py": 66, "test_components.py": 61, "test_star.py": 54, "test_api.py": 110,
                "test_report_html.py": 25, "test_class_archive.py": 45, "test_pairs.py": 23, "test_candidates.py": 22,
                "test_wet.py": 20}


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: -FILE_SECONDS.get(item.path.name, 0))  # stable: a file's tests stay in order
    for item in items:
        name = item.path.name
        fixtures = set(getattr(item, "fixturenames", ()))
        if "spark" in fixtures or fixtures & BUILT_ENVIRONMENT_FIXTURES or (name in SUBPROCESS_SPARK and "subprocess"
                                                                           in _source(item)):
            item.add_marker(pytest.mark.spark)
        if name == "test_cluster.py":
            item.add_marker(pytest.mark.cluster)
        if name in AIRFLOW:
            item.add_marker(pytest.mark.airflow)
        if getattr(item, "originalname", item.name) in SLOW:
            item.add_marker(pytest.mark.slow)


def _source(item) -> str:
    import inspect

    try:
        return inspect.getsource(item.function)
    except (OSError, TypeError, AttributeError):
        return ""
