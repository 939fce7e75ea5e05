"""The report's pictures drawn by a Python process of their own, started as a one-off run starts.

A new driver process imports matplotlib for the pictures after the run's last Spark job, on the run's path: about
1 s of a small run, several seconds where Python cannot cache compiled modules (PYTHONDONTWRITEBYTECODE, an
install without them). Started at the run's start, the child imports matplotlib and draws a throwaway picture
while the driver waits on the JVM, then draws the report's pictures (report_plots.draw_plots: the same
functions, the same bytes) from report.json's numbers, which it reads on its standard input; the PNGs come back
on its standard output. Where the child cannot draw (it failed, or took longer than DRAW_SECONDS), the driver
draws them itself. A run in a process that stays (a notebook, the tests) draws in its own process, where
matplotlib is loaded once.

    python -m simhash_udf.job.plot_process < report.json   # {"pictures": {name: base64 PNG}}
"""
from __future__ import annotations

import base64
import io
import json
import logging
import os
import subprocess
import sys
from contextlib import contextmanager

from .report_plots import draw_plots
from .report_schema import Report

log = logging.getLogger("simhash_dedup")

MODULE = "simhash_udf.job.plot_process"
# Seconds the driver waits for the child's pictures once it has sent the numbers, before drawing them itself.
DRAW_SECONDS = 120.0


class PlotProcess:
    """A started child (start) that draws one report's pictures (draw), or is ended unused (close)."""

    def __init__(self, proc: subprocess.Popen):
        self.proc = proc

    @classmethod
    def start(cls) -> PlotProcess | None:
        """The child, this interpreter running MODULE with this package first on its path (a checkout, an
        installed package or a shipped zip alike); None when it cannot be started."""
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH")))))
        try:
            proc = subprocess.Popen([sys.executable, "-m", MODULE], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env)
        except OSError as exc:
            log.debug("the pictures are drawn by the driver: no process of their own (%s)", exc)
            return None
        return cls(proc)

    def draw(self, report: Report) -> dict[str, bytes] | None:
        """The report's pictures {file name: PNG} from the child; None where it could not draw them (the driver
        draws them then). Raises ImportError when the child has no matplotlib (nor has the driver)."""
        try:
            out, err = self.proc.communicate(json.dumps(report.to_dict()).encode(), timeout=DRAW_SECONDS)
        except (subprocess.TimeoutExpired, OSError) as exc:
            log.debug("the pictures' process did not answer (%s): the driver draws them", exc)
            self.close()
            return None
        if self.proc.returncode:
            log.debug("the pictures' process failed (exit %s): %s", self.proc.returncode, err.decode()[-2000:])
            return None
        answer = json.loads(out)
        if answer.get("no_matplotlib"):
            raise ImportError("matplotlib")
        return {name: base64.b64decode(data) for name, data in answer["pictures"].items()}

    def close(self) -> None:
        """End the child if it still runs (an unused one, or after a failed run)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


@contextmanager
def plots_aside(wanted: bool):
    """A PlotProcess for the block when wanted (None otherwise, or when it cannot start), ended on the way out."""
    drawer = PlotProcess.start() if wanted else None
    try:
        yield drawer
    finally:
        if drawer is not None:
            drawer.close()


def warm_up() -> None:
    """Import matplotlib and draw one throwaway picture: what the first picture of a new process costs (the
    modules, the fonts, the PNG writer), paid while the run goes on. Raises ImportError without matplotlib."""
    import matplotlib  # the point of this process: loaded here, not in the driver

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 2), dpi=50)
    ax = fig.subplots()
    ax.bar([0, 1], [1, 2])
    ax.set_title("warm-up")
    fig.savefig(io.BytesIO(), format="png")


def main() -> int:
    try:
        warm_up()
    except ImportError:
        sys.stdin.read()
        json.dump({"no_matplotlib": True}, sys.stdout)
        return 0
    pictures = draw_plots(Report.from_dict(json.load(sys.stdin)))
    json.dump({"pictures": {name: base64.b64encode(data).decode("ascii") for name, data in pictures.items()}},
              sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
