"""SparkSession for the job: whatever spark-submit configured, or local mode on every core."""
from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from contextlib import contextmanager

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from ..io.paths import local_input_bytes
from . import class_archive, worker_daemon

# JVM options for a JVM that lives for one small run (a local run of a small input, a test's spark-submit, a
# cluster test's executors): the client compiler only and the parallel collector. Such a JVM spends more CPU
# compiling and collecting than running tasks, and G1's concurrent threads compete with the tasks for few
# cores. Not for large runs: the optimising compiler pays off within minutes of work (small_run_conf).
SHORT_RUN_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseParallelGC"
# The input size up to which a local run that starts its own JVM takes SHORT_RUN_JAVA_OPTIONS (a compressed file
# counted 4x). Text inputs gain at every size measured (the Python workers compete with the JIT for the cores);
# stored fingerprints, bound by the JVM, break even near 1M rows (138 MB) and lose beyond, so 128 MB loses on
# neither (docs/performance.md).
SMALL_RUN_BYTES = 128 * 2**20

# JVM options for a large run on few cores (millions of pages): the JIT compiles a method only after 3x the usual
# invocations. A large run's hot loops reach that at once, while many generated classes that stay lukewarm are
# not compiled by C2, whose threads take about a quarter of a large run's JVM CPU on 2 cores (docs/performance.md).
# And the parallel collector: G1's write barriers and concurrent threads compete with the tasks on few cores.
# Not the default: many small runs in one JVM (the test suite's) are slower with the threshold. For spark-submit
# pass them with --driver-java-options (and spark.executor.extraJavaOptions on a cluster); a local run started with
# `python -m` takes them from SIMHASH_DEDUP_JAVA_OPTIONS.
LARGE_RUN_JAVA_OPTIONS = "-XX:CompileThresholdScaling=3 -XX:+UseParallelGC"
# And the heap on transparent huge pages where the kernel gives them to a process that asks (Linux, "madvise" or
# "always"): a new JVM touches its heap's pages for the first time in its collections' pauses, each 4 KB page a fault the
# kernel serves, and a large run's heap grows to gigabytes. A small run's small heap is slower on them, so they are not
# in SHORT_RUN_JAVA_OPTIONS (docs/performance.md, "Settings the job chooses").
HUGE_PAGES_OPTION = "-XX:+UseTransparentHugePages"
HUGE_PAGES_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"


def transparent_huge_pages(setting: str = HUGE_PAGES_SETTING) -> bool:
    """Whether the kernel gives transparent huge pages to a process that asks for them: its setting's chosen mode
    (the word in brackets) is "always" or "madvise". False without the setting (not Linux: the JVM option does not
    exist there) or when it cannot be read."""
    try:
        with open(setting) as fh:
            modes = fh.read()
    except OSError:
        return False
    return "[always]" in modes or "[madvise]" in modes


def large_run_java_options(setting: str = HUGE_PAGES_SETTING) -> str:
    """LARGE_RUN_JAVA_OPTIONS, with HUGE_PAGES_OPTION where the kernel gives huge pages (transparent_huge_pages)."""
    return f"{LARGE_RUN_JAVA_OPTIONS} {HUGE_PAGES_OPTION}" if transparent_huge_pages(setting) else LARGE_RUN_JAVA_OPTIONS


def under_spark_submit() -> bool:
    """spark-submit starts Python with a gateway to its own JVM; plain `python -m` has none."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def stopped_by_its_jvm(master: str) -> bool:
    """Whether the job's own session (on `master`) is stopped by its JVM once this process ends, so the job need not
    stop it: under spark-submit in local mode, spark-submit's JVM runs every task, waits for this Python process,
    then exits, and its shutdown hook stops the SparkContext (SparkContext registers that hook). Stopping it from
    Python as well makes every run wait for PySpark's accumulator server to notice its shutdown (its poll is half a
    second). On a cluster or from `python -m` the job stops its session itself."""
    return under_spark_submit() and master.startswith("local")


def _half_of_ram() -> str:
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return "2g"
    return f"{max(1, total // 2**31)}g"


def with_java_options(conf: dict[str, str] | None) -> dict[str, str]:
    """conf with SIMHASH_DEDUP_JAVA_OPTIONS (e.g. LARGE_RUN_JAVA_OPTIONS) before the caller's own
    spark.driver.extraJavaOptions, for a JVM that pyspark starts; without either, the key is left unset (a
    spark-defaults.conf value stays)."""
    conf = dict(conf or {})
    options = " ".join(filter(None, (os.environ.get("SIMHASH_DEDUP_JAVA_OPTIONS", "").strip(),
                                     conf.get("spark.driver.extraJavaOptions", "").strip())))
    if options:
        conf["spark.driver.extraJavaOptions"] = options
    return conf


def small_run_conf(input_path: str) -> dict[str, str]:
    """The driver's JVM options for a run about to start its own local JVM on a small input: SHORT_RUN_JAVA_OPTIONS
    when the input is on the local file system and at most SMALL_RUN_BYTES, with the class archive's options when
    this environment has a usable one (class_archive.usable_archive). Nothing (Spark's defaults) under
    spark-submit or with a session already running (the JVM exists), for a master other than local, when
    SIMHASH_DEDUP_JAVA_OPTIONS is set (even empty: the caller's choice) or a spark-defaults.conf names
    spark.driver.extraJavaOptions, and for inputs elsewhere or larger. The options change speed only, never
    the output."""
    if under_spark_submit() or SparkSession.getActiveSession() is not None:
        return {}
    if not run_master().startswith("local"):
        return {}
    if "SIMHASH_DEDUP_JAVA_OPTIONS" in os.environ or _spark_defaults_name("spark.driver.extraJavaOptions"):
        return {}
    if not small_local_input(input_path):
        return {}
    options = class_archive.with_archive_options(SHORT_RUN_JAVA_OPTIONS, class_archive.usable_archive())
    return {"spark.driver.extraJavaOptions": options}


def small_local_input(input_path: str) -> bool:
    """The input is on the local file system and at most SMALL_RUN_BYTES (io.paths.local_input_bytes)."""
    size = local_input_bytes(input_path, SMALL_RUN_BYTES)
    return size is not None and size <= SMALL_RUN_BYTES


# Under spark-submit the driver's JVM runs before the job's code does, so SHORT_RUN_JAVA_OPTIONS cannot reach it.
# HotSpot's compiler directives (JEP 165) can: added to the running JVM through its DiagnosticCommand MBean (what
# `jcmd PID Compiler.directives_add FILE` does), these exclude every method from the optimising compiler (C2) but
# those of UTF8String, so hot methods are compiled by the client compiler alone. They first run in its profiling
# tier (whose profile is for C2, which then declines them), which -XX:TieredStopAtLevel=1 skips: a JVM started with
# that option is faster still (small_relaunch_command), the directives are for the JVM the job has. UTF8String's
# loops over a text's bytes (the UTF-8 check of every page, its length) are the hottest Java of the fingerprint
# stage, a third of its task threads' samples, and C2 compiles them in a moment. The first directive that matches a
# method applies. Only in local mode (that JVM runs the tasks too), for a small local input
# (short_run_directives_wanted); the directives live as long as the JVM, i.e. this application.
SHORT_RUN_COMPILER_DIRECTIVES = ('[{match: "org/apache/spark/unsafe/types/UTF8String.*", c2: {Exclude: false}}, '
                                 '{match: "*.*", c2: {Exclude: true}}]')


def short_run_directives_wanted(input_path: str, conf: SparkConf) -> bool:
    """Whether the JVM spark-submit started for this run gets SHORT_RUN_COMPILER_DIRECTIVES: under spark-submit,
    before any session, in local mode, for a local input of at most SMALL_RUN_BYTES, and never over the user's own
    choice of JVM options (spark.driver.extraJavaOptions in the JVM's configuration, from --driver-java-options,
    --conf or a spark-defaults.conf; SIMHASH_DEDUP_JAVA_OPTIONS set, even empty). conf: the JVM's configuration
    (spark_submit_conf()). Not for a JVM started with SHORT_RUN_JAVA_OPTIONS (small_relaunch_command's). Speed only,
    never the output."""
    if not under_spark_submit() or SparkSession.getActiveSession() is not None:
        return False
    if not (conf.get("spark.master") or "").startswith("local"):
        return False
    if "SIMHASH_DEDUP_JAVA_OPTIONS" in os.environ or conf.contains("spark.driver.extraJavaOptions"):
        return False
    if SHORT_RUN_JAVA_OPTIONS in (conf.get("spark.driver.defaultJavaOptions") or ""):
        return False  # started with the client compiler alone already (small_relaunch_command)
    return small_local_input(input_path)


# Under spark-submit the driver's JVM is started before the job's code with Spark's default heap of 1g unless the user
# gives --driver-memory. Local mode runs every task in that JVM: a large input's caches then go to disk and its
# broadcasts crowd the heap, and the optimising compiler keeps compiling lukewarm generated code. For a local input
# larger than SMALL_RUN_BYTES the job runs spark-submit again (relaunch_command) with what `python -m` gives its own
# JVM: half of the RAM (SIMHASH_DEDUP_DRIVER_MEMORY chooses otherwise) and large_run_java_options(). Smaller inputs
# run on in the JVM they have (a second JVM's start would cost more than it saves; SHORT_RUN_COMPILER_DIRECTIVES).
# The new spark-submit finds RELAUNCHED_ENV set and runs as it is.
RELAUNCHED_ENV = "SIMHASH_DEDUP_RELAUNCHED"
# The user's choices of the driver's heap or JVM options, in the JVM's configuration or the launcher's environment:
# any of them leaves spark-submit's JVM as it is.
USER_DRIVER_SETTINGS = ("spark.driver.memory", "spark.driver.extraJavaOptions")
USER_DRIVER_ENVIRONMENT = ("SIMHASH_DEDUP_JAVA_OPTIONS", "SPARK_DRIVER_MEMORY", "SPARK_MEM")


def relaunch_wanted(input_path: str, conf: SparkConf) -> bool:
    """Whether this application runs spark-submit again with the large-run JVM (relaunch_command): under
    spark-submit, not relaunched already, before any session, in local mode, for a local input of more than
    SMALL_RUN_BYTES, and never over the user's own choice of driver memory or JVM options (USER_DRIVER_SETTINGS
    in the JVM's configuration, from the command line or a spark-defaults.conf; USER_DRIVER_ENVIRONMENT set, even
    empty). conf: the JVM's configuration (spark_submit_conf())."""
    if not _may_relaunch(conf, USER_DRIVER_SETTINGS):
        return False
    size = local_input_bytes(input_path, SMALL_RUN_BYTES)
    return size is not None and size > SMALL_RUN_BYTES


def _may_relaunch(conf: SparkConf, user_settings: tuple[str, ...]) -> bool:
    """Under spark-submit, not relaunched already, before any session, in local mode, and none of user_settings in
    the JVM's configuration nor USER_DRIVER_ENVIRONMENT set (even empty)."""
    if not under_spark_submit() or RELAUNCHED_ENV in os.environ or SparkSession.getActiveSession() is not None:
        return False
    if not (conf.get("spark.master") or "").startswith("local"):
        return False
    return not (any(conf.contains(key) for key in user_settings) or any(v in os.environ for v in USER_DRIVER_ENVIRONMENT))


def relaunch_command(conf: SparkConf, application: list[str], archive: str | None = None) -> list[str]:
    """spark-submit (of the Spark that runs this application) with the large-run driver (half of the RAM or
    SIMHASH_DEDUP_DRIVER_MEMORY, large_run_java_options(), and the class archive's options when one is given), the
    JVM's configuration as it was given (every setting but the submit time, which the new launch sets again), then
    `application`: the script and its arguments."""
    return [os.path.join(class_archive.spark_home(), "bin", "spark-submit"),
            "--driver-memory", os.environ.get("SIMHASH_DEDUP_DRIVER_MEMORY", _half_of_ram()),
            "--driver-java-options", class_archive.with_archive_options(large_run_java_options(), archive),
            *_given(conf), *application]


def _given(conf: SparkConf) -> list[str]:
    return [arg for key, value in sorted(conf.getAll()) if key != "spark.app.submitTime"
            for arg in ("--conf", f"{key}={value}")]


# Spark's default driver of 1g runs a small input too, but not every small input: a crawl's page mix of 56 MB of Parquet
# (120 MB of text) filled it and its scheduler's thread ran out of heap. A local input of more than this is run in a
# new spark-submit with the driver a `python -m` run gives its own JVM (small_relaunch_command).
DEFAULT_DRIVER_BYTES = 16 * 2**20


def small_relaunch_wanted(input_path: str, conf: SparkConf) -> bool:
    """Whether a small run may go to a new spark-submit (small_relaunch_command): under spark-submit, not relaunched
    already, before any session, in local mode, for a local input of at most SMALL_RUN_BYTES, and never over the
    user's own choice of driver memory or JVM options (USER_DRIVER_SETTINGS, spark.driver.defaultJavaOptions,
    USER_DRIVER_ENVIRONMENT). relaunch_if_faster relaunches when there is a class archive to map, or when the input
    is larger than DEFAULT_DRIVER_BYTES."""
    return _may_relaunch(conf, (*USER_DRIVER_SETTINGS, "spark.driver.defaultJavaOptions")) and small_local_input(
        input_path)


def fits_default_driver(input_path: str) -> bool:
    """The local input is at most DEFAULT_DRIVER_BYTES (io.paths.local_input_bytes)."""
    size = local_input_bytes(input_path, DEFAULT_DRIVER_BYTES)
    return size is not None and size <= DEFAULT_DRIVER_BYTES


def small_relaunch_command(conf: SparkConf, application: list[str], archive: str | None) -> list[str]:
    """spark-submit with the driver a `python -m` run gets for a small input: its memory (half of the RAM or
    SIMHASH_DEDUP_DRIVER_MEMORY), SHORT_RUN_JAVA_OPTIONS and the class archive's options when there is an archive, as
    the driver's default JVM options (spark.driver.defaultJavaOptions: the run's own JVM choices are left to it), the
    JVM's configuration as it was given, then `application`."""
    options = class_archive.with_archive_options(SHORT_RUN_JAVA_OPTIONS, archive)
    return [os.path.join(class_archive.spark_home(), "bin", "spark-submit"),
            "--driver-memory", os.environ.get("SIMHASH_DEDUP_DRIVER_MEMORY", _half_of_ram()),
            "--conf", f"spark.driver.defaultJavaOptions={options}", *_given(conf), *application]


def relaunch_if_faster(input_path: str, application: list[str]) -> None:
    """Run spark-submit again in place of this process (os.execv: the same process, whose exit spark-submit's first
    JVM waits for and reports) when that is faster or needed: with the large-run driver for a large local input
    (relaunch_wanted; with the class archive too when there is one), or with the heap and JVM options of a
    `python -m` run for a small one (small_relaunch_wanted) when there is a class archive to map
    (class_archive.usable_archive) or the input does not fit Spark's default driver (fits_default_driver). Otherwise
    return. Logged."""
    if not under_spark_submit() or RELAUNCHED_ENV in os.environ:
        return
    conf = spark_submit_conf()
    log = logging.getLogger(__name__)
    if relaunch_wanted(input_path, conf):
        archive = class_archive.usable_archive()
        command = relaunch_command(conf, application, archive)
        log.info("a large local input and Spark's default driver of 1g: running spark-submit again with --driver-memory "
                 "%s --driver-java-options %s (--driver-memory or --driver-java-options choose otherwise)",
                 command[2], command[4])
    elif small_relaunch_wanted(input_path, conf) and (
            (archive := class_archive.usable_archive()) or not fits_default_driver(input_path)):
        command = small_relaunch_command(conf, application, archive)
        if archive:
            log.info("a small local input: running spark-submit again with the class archive %s, --driver-memory %s "
                     "and %s (its JVM maps the classes this one loaded one by one; %s= turns the archive off, "
                     "--driver-memory or --driver-java-options choose otherwise)", archive, command[2],
                     SHORT_RUN_JAVA_OPTIONS, class_archive.ARCHIVE_ENV)
        else:
            log.info("a local input over %d MB and Spark's default driver of 1g: running spark-submit again with "
                     "--driver-memory %s and %s (--driver-memory or --driver-java-options choose otherwise)",
                     DEFAULT_DRIVER_BYTES >> 20, command[2], SHORT_RUN_JAVA_OPTIONS)
    else:
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    os.environ[RELAUNCHED_ENV] = "1"
    os.execv(command[0], command)


def spark_submit_conf() -> SparkConf:
    """The configuration of the JVM spark-submit started (its --conf, --driver-java-options, spark-defaults.conf),
    read through the gateway to it: connected first, since SparkConf() without it reads an empty configuration."""
    SparkContext._ensure_initialized()
    return SparkConf()


def diagnostic_command(gateway, command: str, *arguments: str) -> str:
    """Run a HotSpot diagnostic command (e.g. compilerDirectivesAdd, jcmd's Compiler.directives_add) in the JVM behind
    the py4j gateway, through its DiagnosticCommand MBean; its text answer. The MBean server's invoke is called by
    reflection on its public interface: py4j looks methods up on the implementing class, whose package
    java.management does not export."""
    jvm = gateway.jvm
    server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
    name = jvm.javax.management.ObjectName("com.sun.management:type=DiagnosticCommand")

    def array(kind, values):
        out = gateway.new_array(kind, len(values))
        for i, value in enumerate(values):
            out[i] = value
        return out

    Class = jvm.java.lang.Class
    invoke = Class.forName("javax.management.MBeanServer").getMethod("invoke", array(Class, [Class.forName(t) for t in (
        "javax.management.ObjectName", "java.lang.String", "[Ljava.lang.Object;", "[Ljava.lang.String;")]))
    String = jvm.java.lang.String
    parameters = array(jvm.java.lang.Object, [array(String, list(arguments))])
    answer = invoke.invoke(server, array(jvm.java.lang.Object, [name, command, parameters,
                                                                   array(String, ["[Ljava.lang.String;"])]))
    return str(answer or "")


def add_compiler_directives(gateway, directives: str) -> str:
    """Add compiler directives (JSON, HotSpot's syntax) to the JVM behind the gateway; the JVM's answer. The
    command reads a file: written to a temporary one, removed once read."""
    fd, path = tempfile.mkstemp(prefix="simhash-dedup-directives-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(directives)
        return diagnostic_command(gateway, "compilerDirectivesAdd", path)
    finally:
        os.unlink(path)


def start_job_session(input_path: str) -> SparkSession:
    """get_spark for a run of the job on input_path, a small local input with the short-run JVM settings: a JVM it
    starts itself gets SHORT_RUN_JAVA_OPTIONS (small_run_conf); the JVM spark-submit started, running already, gets
    SHORT_RUN_COMPILER_DIRECTIVES (short_run_directives_wanted). Both logged. A JVM that refuses the directive
    (another JVM than HotSpot) runs as it is. Its shuffles are not compressed (small_local_run_settings). A session the
    job starts logs at JOB_LOG_SETTINGS' level and without the plan-truncation warnings (quiet_plan_truncation); a
    session already running (a caller's) is left as it is."""
    ours = SparkSession.getActiveSession() is None
    conf = job_session_conf(prepare_job_jvm(input_path), {**JOB_LOG_SETTINGS, **small_local_run_settings(input_path)})
    if ours and under_spark_submit() and "spark.log.level" in conf:
        set_spark_log_level(SparkContext._gateway, conf["spark.log.level"])
    spark = get_spark(conf=conf)
    if ours:
        quiet_plan_truncation(spark)
    return spark


def set_spark_log_level(gateway, level: str) -> None:
    """Spark's root log level in the JVM spark-submit started, before its SparkContext exists (spark.log.level
    takes effect only after the context's first lines). Spark's logging is initialised first (by a SparkConf, a
    Spark class that logs: it loads log4j2-defaults.properties or the user's log4j2.properties), since that
    initialisation would otherwise come with the context and put the configured level back. A no-op where the
    driver does not log with log4j 2."""
    try:
        jvm = gateway.jvm
        jvm.org.apache.spark.SparkConf(False).initializeLogIfNecessary(False, False)
        log4j = jvm.org.apache.logging.log4j
        log4j.core.config.Configurator.setRootLevel(log4j.Level.toLevel(level, log4j.Level.WARN))
    except Exception as exc:  # noqa: BLE001 - Spark applies spark.log.level as its context starts
        logging.getLogger(__name__).debug("Spark's log level left to spark.log.level: %s", exc)


def prepare_job_jvm(input_path: str) -> dict[str, str]:
    """start_job_session's first half: the conf for get_spark (small_run_conf), or, under spark-submit, the
    directive added to its running JVM before any SparkContext exists."""
    log = logging.getLogger(__name__)
    conf = small_run_conf(input_path)
    if conf:
        log.info("a small local input: the driver's JVM starts with %s (the client compiler alone; "
                 "SIMHASH_DEDUP_JAVA_OPTIONS chooses otherwise)", conf["spark.driver.extraJavaOptions"])
    elif under_spark_submit() and short_run_directives_wanted(input_path, spark_submit_conf()):
        try:
            answer = add_compiler_directives(SparkContext._gateway, SHORT_RUN_COMPILER_DIRECTIVES)
            log.info("a small local input: this JVM compiles with the client compiler alone from now on "
                     "(compiler directive %s: %s; --driver-java-options chooses otherwise)",
                     SHORT_RUN_COMPILER_DIRECTIVES, answer.strip())
        except Exception as exc:  # noqa: BLE001 - speed only: the run goes on as it would have
            log.info("the JVM refused the short-run compiler directive (%s); running without it", exc)
    return conf


def _spark_defaults_name(key: str) -> bool:
    """A spark-defaults.conf (SPARK_CONF_DIR, or SPARK_HOME/conf, SPARK_HOME defaulting to pyspark's folder as
    pyspark's launcher does) sets `key`."""
    try:
        path = os.path.join(class_archive.spark_conf_dir(), "spark-defaults.conf")
        with open(path, encoding="utf-8", errors="replace") as fh:
            return any(line.split(None, 1)[:1] == [key] for line in fh)
    except OSError:
        return False


# Settings of the sessions the job starts, unless the user gives them (job_session_conf).
# PySpark's DataFrame debugging (a static setting, on by default) records the Python call site of every Column
# and DataFrame call in the JVM, for the query context of an error message: inspect.stack() and about six py4j
# round trips a call: about half of a run's py4j calls. Off, a process that waits on the JVM (a notebook, a test
# file) runs faster; a one-off spark-submit run is dominated by the JVM's cold start. A Python traceback still
# says where an error came from.
JOB_SESSION_SETTINGS = {"spark.python.sql.dataFrameDebugging.enabled": "false"}


# The job's own runs (start_job_session): Spark's loggers at WARN. At Spark's default level (INFO) a run of 200
# pages printed about 2,900 lines of Spark's scheduler, executor and block manager, which buried the job's one line
# per stage. spark.log.level is applied as the SparkContext starts, before its own start-up lines; a user who wants
# Spark's INFO lines back passes --conf spark.log.level=INFO (or sets it in spark-defaults.conf).
JOB_LOG_SETTINGS = {"spark.log.level": "WARN"}


# A small local run's shuffle files are not compressed: in local mode they never cross a network, and a small input's
# stay in the page cache, so compressing them is CPU spent for nothing (the fingerprint stage's shuffle of the pages'
# text the most). A large run keeps Spark's compression: its shuffle files are written out, and a large run of stored
# fingerprints was slower without it (docs/performance.md).
SMALL_LOCAL_RUN_SETTINGS = {"spark.shuffle.compress": "false"}


def small_local_run_settings(input_path: str) -> dict[str, str]:
    """SMALL_LOCAL_RUN_SETTINGS for a run in local mode (run_master) on a local input of at most SMALL_RUN_BYTES; none
    otherwise. job_session_conf leaves a key the user set to the user."""
    return dict(SMALL_LOCAL_RUN_SETTINGS) if run_master().startswith("local") and small_local_input(input_path) else {}


def run_master(master: str | None = None) -> str:
    """The master of the session get_spark starts: `master` when given, else spark-submit's (its JVM's configuration)
    under spark-submit, else SIMHASH_DEDUP_MASTER (local[*] when unset) for a JVM the job starts."""
    if master:
        return master
    if under_spark_submit():
        return spark_submit_conf().get("spark.master") or ""
    return os.environ.get("SIMHASH_DEDUP_MASTER", "local[*]")


def job_session_conf(conf: dict[str, str] | None, settings: dict[str, str] = JOB_SESSION_SETTINGS) -> dict[str, str]:
    """conf with `settings` (JOB_SESSION_SETTINGS by default) for each key that neither conf nor the user sets: under
    spark-submit its JVM's configuration (--conf, spark-defaults.conf), otherwise a spark-defaults.conf."""
    conf = dict(conf or {})
    given = spark_submit_conf() if under_spark_submit() else None
    for key, value in settings.items():
        if key not in conf and not (given.contains(key) if given is not None else _spark_defaults_name(key)):
            conf[key] = value
    return conf


def get_spark(app_name: str = "simhash-dedup", master: str | None = None,
              conf: dict[str, str] | None = None) -> SparkSession:
    """The active session as it is (a caller's: never reconfigured), or a new one for the job (with `conf` and
    JOB_SESSION_SETTINGS added to its settings)."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    builder = SparkSession.builder.appName(app_name)
    if master or not under_spark_submit():
        # Local workers must run this interpreter (the one with our dependencies), not the system python.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        master = run_master(master)
        builder = builder.master(master).config("spark.ui.showConsoleProgress", "false")
        # Local mode runs everything in the driver JVM: Spark's default of 1g is too small past ~10^6 pages.
        builder = builder.config("spark.driver.memory", os.environ.get("SIMHASH_DEDUP_DRIVER_MEMORY", _half_of_ram()))
        conf = with_java_options(conf)
        python = (conf or {}).get("spark.pyspark.python") or os.environ["PYSPARK_PYTHON"]
    else:
        given = spark_submit_conf()
        master = given.get("spark.master") or ""
        python = given.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or "python3"
    settings = {**JOB_SESSION_SETTINGS, **worker_daemon.daemon_conf(master, shutil.which(python) or python)}
    for key, value in job_session_conf(conf, settings).items():
        builder = builder.config(key, value)
    spark = builder.config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate()
    sc = spark.sparkContext
    if sc.master.startswith("local") and not sc.getConf().contains("spark.sql.shuffle.partitions"):
        # One machine: Spark's default of 200 shuffle partitions only adds task overhead.
        spark.conf.set("spark.sql.shuffle.partitions", str(max(4, 2 * sc.defaultParallelism)))
    return spark


# The logger of Spark's "Truncated the string representation of a plan since it was too long" warning (StringUtils'
# PlanStringConcat). The job caps plan descriptions on purpose (pipeline.PLAN_STRING_CHARS: a plan prints every
# cache it reads, megabytes with --history), and Spark describes a plan at every query and adaptive re-plan for
# its UI, so a run met the cap about 20 times, each time with a warning that only restated the job's own setting.
PLAN_TRUNCATION_LOGGER = "org.apache.spark.sql.catalyst.util.StringUtils"


def quiet_plan_truncation(spark: SparkSession) -> None:
    """PLAN_TRUNCATION_LOGGER at ERROR in the session's JVM, unless the user's log4j configuration names that
    logger (then it stands). Only the log changes: the plans are capped as before, the results are the same. A
    no-op where the driver does not log with log4j 2."""
    try:
        log4j = spark.sparkContext._jvm.org.apache.logging.log4j
        config = log4j.LogManager.getContext(False).getConfiguration()
        if config.getLoggerConfig(PLAN_TRUNCATION_LOGGER).getName() != PLAN_TRUNCATION_LOGGER:
            log4j.core.config.Configurator.setLevel(PLAN_TRUNCATION_LOGGER, log4j.Level.ERROR)
    except Exception as exc:  # noqa: BLE001 - another logging backend: its own levels stand
        logging.getLogger(__name__).debug("plan-truncation warnings left as they are: %s", exc)


# Spark aggregates in two phases: each map task pre-aggregates its rows in a hash map before the shuffle. Grouped
# by a column that is nearly unique (the ids, the fingerprints), that map holds every row and saves nothing.
# Spark 4.3's setting skips the phase (older versions ignore it).
UNIQUE_KEY_SETTINGS = {"spark.sql.execution.bypassPartialAggregation": "true"}


@contextmanager
def unique_key_aggregation(spark: SparkSession):
    """Plan the aggregations of the block in one phase (UNIQUE_KEY_SETTINGS): for groups by a nearly unique key.
    A DataFrame persisted in the block keeps that plan. A global aggregation (no key, e.g. a count) planned in
    the block would bring every row to one task, so count outside it."""
    with scoped_settings(spark, UNIQUE_KEY_SETTINGS):
        yield


def checkpoint_dir(spark: SparkSession) -> str | None:
    """The SparkContext's checkpoint directory, or None when it has none."""
    option = spark.sparkContext._jsc.sc().getCheckpointDir()
    return option.get() if option.isDefined() else None


@contextmanager
def scoped_settings(spark: SparkSession, conf: dict[str, str], checkpoints: str | None = None):
    """Run the block with these session settings (and checkpoint directory), then put back what the caller
    had: the job and the API never leave a caller's session changed, nor pointing into a removed directory."""
    before = {key: spark.conf.get(key, None) for key in conf}
    before_dir = checkpoint_dir(spark)
    for key, value in conf.items():
        spark.conf.set(key, value)
    if checkpoints:
        spark.sparkContext.setCheckpointDir(checkpoints)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
        if checkpoints:
            _set_checkpoint_dir(spark, before_dir)


def _set_checkpoint_dir(spark: SparkSession, path: str | None) -> None:
    """Put the checkpoint directory back as it was, or unset it: setCheckpointDir would add a new random
    subdirectory and cannot unset (the SparkContext's own setter is reached through the JVM gateway)."""
    jvm = spark.sparkContext._jvm
    getattr(spark.sparkContext._jsc.sc(), "checkpointDir_$eq")(jvm.scala.Option.apply(path))
