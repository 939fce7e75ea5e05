"""A real Spark standalone cluster on 127.0.0.1 from the installed pyspark: one master, N workers.

    python scripts/spark_cluster.py start [--workers 2] [--dir work/cluster]   # prints the master URL
    python scripts/spark_cluster.py stop [--dir work/cluster]

Every daemon is a `spark-class` JVM bound to 127.0.0.1 on free ports, with its logs and work directory
under DIR; `stop` (or leaving the `StandaloneCluster` context) kills exactly the processes it started and
the executors they launched, nothing else on the machine. The tests use the same class.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pyspark

from simhash_udf.spark.session import SHORT_RUN_JAVA_OPTIONS

SPARK_HOME = os.path.dirname(pyspark.__file__)


def free_ports(n: int) -> list[int]:
    """n different free ports on 127.0.0.1. The sockets are held until all n are bound: one at a time, a port
    released could be handed out again (a worker was once given the master UI's port, bound it first, and the
    master's UI moved to the next port, where nobody looked for it)."""
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


class StandaloneCluster:
    def __init__(self, root: str, workers: int = 2, cores: int = 1, memory: str = "2g"):
        self.root = os.path.abspath(root)
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.procs: list[subprocess.Popen] = []
        # the master's two ports, then each worker's RPC and UI port
        ports = free_ports(2 + 2 * workers)
        self.port, self.ui_port = ports[:2]
        self.worker_ports = ports[2::2]
        self._worker_ui_ports = ports[3::2]
        self.url = f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict:
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", SPARK_HOME=SPARK_HOME, SPARK_LOG_DIR=self.root,
                   SPARK_NO_DAEMONIZE="1")
        # the master and workers of a test or a trial run: JVMs that mostly start and wait (the client compiler)
        env.setdefault("SPARK_DAEMON_JAVA_OPTS", SHORT_RUN_JAVA_OPTIONS)
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        return env

    def _spawn(self, name: str, *args: str) -> None:
        log = open(os.path.join(self.root, f"{name}.log"), "wb")
        cmd = [os.path.join(SPARK_HOME, "bin", "spark-class"), *args]
        self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self._env(),
                                           start_new_session=True))  # own process group: stop kills the tree

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as resp:
            return json.load(resp)

    def start(self, timeout: float = 90) -> "StandaloneCluster":
        os.makedirs(self.root, exist_ok=True)
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.port), "--webui-port", str(self.ui_port))
        for w, (port, ui_port) in enumerate(zip(self.worker_ports, self._worker_ui_ports)):
            work = os.path.join(self.root, f"worker-{w}")
            os.makedirs(work, exist_ok=True)
            self._spawn(f"worker-{w}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                        "--port", str(port), "--webui-port", str(ui_port), "--cores", str(self.cores),
                        "--memory", self.memory, "--work-dir", work, self.url)
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if sum(w["state"] == "ALIVE" for w in self.state()["workers"]) == self.n_workers:
                    return self
            except (OSError, ValueError):  # not up yet, or its UI answered with a page cut short (not JSON)
                pass
            if any(p.poll() is not None for p in self.procs):
                break
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the standalone cluster did not come up; see the logs in {self.root}")

    def executor_pids(self) -> list[int]:
        """Executor JVMs launched by this cluster's workers (matched by their worker URL's port; read from
        /proc because ps cuts a JVM's long command line)."""
        marks = [f"Worker@127.0.0.1:{p}".encode() for p in self.worker_ports]
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    cmd = fh.read()
            except OSError:
                continue
            if b"CoarseGrainedExecutorBackend" in cmd and any(m in cmd for m in marks):
                pids.append(int(entry))
        return sorted(pids)

    def stop(self) -> None:
        for pid in self.executor_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.procs.clear()

    def __enter__(self) -> "StandaloneCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["start", "stop"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                                  "work", "cluster"))
    args = ap.parse_args()
    pidfile = os.path.join(args.dir, "cluster.json")
    if args.action == "start":
        cluster = StandaloneCluster(args.dir, args.workers).start()
        with open(pidfile, "w") as fh:
            json.dump({"pids": [p.pid for p in cluster.procs], "worker_ports": cluster.worker_ports,
                       "url": cluster.url}, fh)
        print(cluster.url)
        return
    with open(pidfile) as fh:
        saved = json.load(fh)
    cluster = StandaloneCluster(args.dir)
    cluster.worker_ports = saved["worker_ports"]
    for pid in cluster.executor_pids():
        os.kill(pid, signal.SIGKILL)
    for pid in saved["pids"]:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    os.remove(pidfile)


if __name__ == "__main__":
    main()
