"""SIGTERM (Airflow's task timeout or `kill`, a scheduler's pre-emption): stop the run and clean up.

The handler does not raise: the driver is usually inside a py4j call waiting for a Spark job, and an
exception there would leave py4j's connection of the main thread in the middle of a command (the next call
would read the old call's answer). Instead it sets a flag and cancels the running Spark jobs from another
thread (its own py4j connection), every half second until the run has stopped: the action the driver waits
for fails, the run's normal failure path removes the staging directory and releases the lock, and the
flag is checked before the commit and between steps that start no Spark job. A SIGTERM that arrives once
the commit has begun lets it finish (it is a few renames): the output is then complete."""
from __future__ import annotations

import logging
import signal
import threading
from contextlib import contextmanager

from pyspark import SparkContext

log = logging.getLogger("simhash_dedup")
EXIT_CODE = 128 + signal.SIGTERM  # what a shell reports for a process ended by SIGTERM

_requested = threading.Event()
_stopped = threading.Event()  # the run has finished cleaning up: the cancelling can end


class Terminated(Exception):
    """SIGTERM arrived: the run stops at its next check, cleaning up as after any failure."""


def requested() -> bool:
    return _requested.is_set()


def check() -> None:
    if _requested.is_set():
        raise Terminated("stopped by SIGTERM")


def _cancel_spark_jobs() -> None:
    while not _stopped.is_set():
        sc = SparkContext._active_spark_context
        if sc is None:
            return
        try:
            sc.cancelAllJobs()
        except Exception:  # the context is stopping
            return
        _stopped.wait(0.5)


def _on_sigterm(signum, frame) -> None:
    if _requested.is_set():
        return
    _requested.set()
    log.warning("SIGTERM: cancelling the running Spark jobs; the run stops and removes its staging directory")
    threading.Thread(target=_cancel_spark_jobs, name="sigterm-cancel", daemon=True).start()


@contextmanager
def handle_sigterm():
    """Install the handler for the duration (main thread only; elsewhere a no-op), and restore the previous."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _requested.clear()
    _stopped.clear()
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        _stopped.set()
        signal.signal(signal.SIGTERM, previous)
