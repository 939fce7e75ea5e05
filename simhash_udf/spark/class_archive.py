"""A class-data sharing archive of the driver's JVM (HotSpot's AppCDS): the Spark classes a run loads, stored once
per installation, mapped by later JVMs instead of loaded, verified and linked again. A new spark-submit JVM spends
seconds doing that for each run; the job's entry point runs spark-submit again with the archive when one fits its
Java and Spark (session.relaunch_if_faster). Speed only, never the output.

The archive is written by a run of the job with -XX:ArchiveClassesAtExit (scripts/class_archive.py, which
scripts/ship.sh runs) and belongs to the Java binary and the Spark jars it was written
with (its stamp): a JVM maps it only when its class path starts with the same jars, and HotSpot refuses any class
path that holds a non-empty directory, such as a Spark conf directory with a spark-defaults.conf in it (which is why
the archive is not given through spark-defaults.conf: the launcher puts that directory first on the class path)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

import pyspark

# SIMHASH_DEDUP_CLASS_ARCHIVE: the archive's path (empty: none is used or written). By default next to this
# environment's packages, so each virtualenv has its own.
ARCHIVE_ENV = "SIMHASH_DEDUP_CLASS_ARCHIVE"


def archive_path() -> str | None:
    """Where this environment's archive is (or would be written); None when SIMHASH_DEDUP_CLASS_ARCHIVE is empty."""
    path = os.environ.get(ARCHIVE_ENV)
    if path is not None:
        return path or None
    return os.path.join(sys.prefix, "share", "simhash-dedup", "spark-classes.jsa")


def archive_options(path: str) -> str:
    """The driver's JVM options that map the archive. A JVM that cannot map it runs without it (-Xshare:auto, the
    default); its CDS log lines would go to standard output, so they are off."""
    return f"-XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off"


def with_archive_options(options: str, path: str | None) -> str:
    """JVM options followed by the archive's (archive_options) when there is an archive at `path`."""
    return f"{options} {archive_options(path)}" if path else options


def spark_home() -> str:
    """The Spark that pyspark's launcher runs: SPARK_HOME, else the installed pyspark's folder."""
    return os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)


def spark_conf_dir() -> str:
    """The launcher's conf directory (spark-defaults.conf's folder): SPARK_CONF_DIR, else SPARK_HOME/conf."""
    return os.environ.get("SPARK_CONF_DIR") or os.path.join(spark_home(), "conf")


def java_binary() -> str | None:
    """The java that Spark's launcher (bin/spark-class) runs: JAVA_HOME's, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    path = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(path) if path and os.path.exists(path) else None


def conf_dir_blocks_archive() -> bool:
    """Spark's launcher puts its conf directory (SPARK_CONF_DIR, else SPARK_HOME/conf) first on the class path when it
    exists, and HotSpot maps no archive for a class path with a non-empty directory."""
    try:
        return bool(os.listdir(spark_conf_dir()))
    except OSError:
        return False


def stamp() -> str | None:
    """What an archive belongs to: the java binary (path, size, time) and the names and sizes of Spark's jars. None
    without a java."""
    java = java_binary()
    if java is None:
        return None
    jars_dir = os.path.join(spark_home(), "jars")
    try:
        jars = sorted((name, os.path.getsize(os.path.join(jars_dir, name)))
                      for name in os.listdir(jars_dir) if name.endswith(".jar"))
    except OSError:
        jars = []
    info = os.stat(java)
    return json.dumps({"java": [java, info.st_size, int(info.st_mtime)], "jars": jars}, sort_keys=True)


def usable_archive() -> str | None:
    """The archive's path when a JVM that Spark's launcher starts now can map it: it exists, its stamp is this Java's
    and these jars', and no non-empty conf directory is on the class path; otherwise None (a relaunch would not pay)."""
    path = archive_path()
    if not path or not os.path.isfile(path) or conf_dir_blocks_archive():
        return None
    try:
        with open(path + ".stamp", encoding="utf-8") as fh:
            written = fh.read()
    except OSError:
        return None
    now = stamp()
    return path if now is not None and written == now else None


def write_archive(application: list[str], path: str | None = None, env: dict[str, str] | None = None,
                  timeout: float = 1800) -> str:
    """Run `spark-submit --master local[2] APPLICATION` with -XX:ArchiveClassesAtExit and store what it loaded as the
    archive at `path` (archive_path() by default), with its stamp; written to a temporary name first, so a failed or
    killed run leaves no half archive. Returns the path; raises RuntimeError with the run's output when it fails."""
    path = path or archive_path()
    if not path:
        raise RuntimeError(f"{ARCHIVE_ENV} is empty: no archive is written")
    if conf_dir_blocks_archive():
        raise RuntimeError(f"Spark's conf directory {spark_conf_dir()} is on the class path and not empty: the JVM "
                           "cannot write or map a class archive with it")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".spark-classes-", suffix=".jsa", dir=os.path.dirname(os.path.abspath(path)))
    os.close(fd)
    os.unlink(tmp)  # the JVM writes it
    # the run itself is never relaunched: its driver's default JVM options are the user's choice (and no archive)
    run_env = {k: v for k, v in (env or os.environ).items() if k not in ("PYSPARK_SUBMIT_ARGS", "SPARK_DRIVER_MEMORY")}
    run_env.update({ARCHIVE_ENV: "", "SPARK_LOCAL_IP": run_env.get("SPARK_LOCAL_IP", "127.0.0.1"),
                    "PYSPARK_PYTHON": run_env.get("PYSPARK_PYTHON", sys.executable)})
    command = [os.path.join(spark_home(), "bin", "spark-submit"), "--master", "local[2]",
               "--conf", f"spark.driver.defaultJavaOptions=-XX:ArchiveClassesAtExit={tmp}", *application]
    try:
        proc = subprocess.run(command, env=run_env, capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0 or not os.path.isfile(tmp):
            raise RuntimeError(f"the run that writes the class archive failed (exit {proc.returncode}):\n"
                               + (proc.stdout + proc.stderr)[-3000:])
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    with open(path + ".stamp", "w", encoding="utf-8") as fh:
        fh.write(stamp() or "")
    return path
