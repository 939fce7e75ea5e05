"""Spark stage 8: write clusters/, kept/ and report.json into a staging directory beside DIR, move it
into place, and write DIR/_SUCCESS last. A failed or killed run never leaves a DIR that looks done."""
from __future__ import annotations

import json
import uuid

from pyspark.sql import SparkSession

from .errors import DedupError


class OutputDir:
    """The job's output directory on any Hadoop file system (local, HDFS, S3A, ...)."""

    def __init__(self, spark: SparkSession, path: str):
        jvm = spark.sparkContext._jvm
        self._jvm = jvm
        self.path = path.rstrip("/")
        self._final = jvm.org.apache.hadoop.fs.Path(self.path)
        self.fs = self._final.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        self.fs.setWriteChecksum(False)  # no .crc siblings next to report.json and _SUCCESS on local disks
        self.staging = f"{self.path}.__staging-{uuid.uuid4().hex[:12]}"
        self._staging = jvm.org.apache.hadoop.fs.Path(self.staging)

    def _p(self, path: str):
        return self._jvm.org.apache.hadoop.fs.Path(path)

    def is_finished(self) -> bool:
        return self.fs.exists(self._p(self.path + "/_SUCCESS"))

    def check_writable(self, overwrite: bool) -> None:
        """Refuse to touch an existing non-empty DIR unless --overwrite; nothing is deleted yet."""
        if not self.fs.exists(self._final) or overwrite:
            return
        if self.is_finished():
            raise DedupError(f"output {self.path} already holds a finished run (_SUCCESS): pass --overwrite or another --output")
        if self.fs.listStatus(self._final):
            raise DedupError(f"output {self.path} exists and is not a finished run of this job: remove it, or pass --overwrite")

    def staged(self, name: str) -> str:
        return f"{self.staging}/{name}"

    def remove_staged(self, name: str) -> None:
        self.fs.delete(self._p(self.staged(name)), True)

    def write_bytes(self, path: str, data: bytes) -> None:
        stream = self.fs.create(self._p(path), True)
        try:
            stream.write(bytearray(data))
        finally:
            stream.close()

    def write_text(self, path: str, text: str) -> None:
        self.write_bytes(path, text.encode("utf-8"))

    def write_report(self, report: dict) -> None:
        self.write_text(self.staged("report.json"), json.dumps(report, indent=2, ensure_ascii=False, default=str) + "\n")

    def commit(self) -> None:
        """Move the staging directory to DIR (replacing an old one), then write _SUCCESS."""
        if self.fs.exists(self._final):
            self.fs.delete(self._final, True)
        if not self.fs.rename(self._staging, self._final):
            raise DedupError(f"could not move {self.staging} to {self.path}: check permissions on the output's parent")
        self.write_text(self.path + "/_SUCCESS", "")

    def abort(self) -> None:
        """Remove the staging directory after a failure (DIR itself is untouched)."""
        try:
            self.fs.delete(self._staging, True)
        except Exception:  # the original error matters more than a failed clean-up
            pass
