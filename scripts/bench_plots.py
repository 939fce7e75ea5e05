"""The report's pictures: report_plots.write_plots on one report.json, timed in this checkout and in others, side
by side. Each checkout runs in a process of its own (matplotlib imported and one untimed call first), the
checkouts taking turns round by round; prints each one's median and best, and the ratios to this checkout.

    python scripts/bench_plots.py --report OUT/report.json --compare /tmp/before --runs 10
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from simhash_udf.job import report_plots

class Discard:  # write.OutputDir's two methods that write_plots calls
    def staged(self, name):
        return name

    def write_bytes(self, path, data):
        pass

report = json.load(open(sys.argv[2]))
report_plots.write_plots(report, Discard())
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    report_plots.write_plots(report, Discard())
    times.append(time.perf_counter() - start)
print(json.dumps(times))
"""


def timed(checkout: str, report: str, runs: int) -> list[float]:
    out = subprocess.run([sys.executable, "-c", CHILD, checkout, report, str(runs)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--report", required=True, help="a run's report.json (for example the sample run's)")
    ap.add_argument("--compare", nargs="*", default=[], help="other checkouts to time beside this one")
    ap.add_argument("--runs", type=int, default=10, help="calls per process")
    ap.add_argument("--rounds", type=int, default=2, help="processes per checkout, taking turns")
    args = ap.parse_args()
    checkouts = [ROOT] + [os.path.abspath(c) for c in args.compare]
    times: dict[str, list[float]] = {c: [] for c in checkouts}
    for r in range(args.rounds):
        for c in checkouts if r % 2 == 0 else checkouts[::-1]:
            times[c] += timed(c, os.path.abspath(args.report), args.runs)
    print(f"write_plots on {args.report}: {args.rounds} processes x {args.runs} calls per checkout\n")
    print("| checkout | median s | best s |\n|---|---|---|")
    for c in checkouts:
        print(f"| {c} | {statistics.median(times[c]):.3f} | {min(times[c]):.3f} |")
    for c in checkouts[1:]:
        print(f"\nthis checkout / {c}: median {statistics.median(times[ROOT]) / statistics.median(times[c]):.2f}")


if __name__ == "__main__":
    main()
