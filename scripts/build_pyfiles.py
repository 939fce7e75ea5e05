"""Build dist/simhash_udf.zip: the simhash_udf package for spark-submit --py-files.

    python scripts/build_pyfiles.py [--out dist/simhash_udf.zip]

This is how the job's code reaches executors on YARN, Kubernetes or a standalone cluster: Spark puts the
zip on every Python worker's sys.path. The third-party packages (jieba, rjieba, mmh3, numpy, pandas,
pyarrow) come from the executors' Python environment: the packed one that scripts/ship.sh builds beside the
zip, or the cluster's image (docs/operations.md, "Running on a cluster"). The zip is reproducible: same
sources, same bytes. The evaluation subpackage is left out.
"""
from __future__ import annotations

import argparse
import os
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# Evaluation and demo code runs on the driver or in scripts only: it does not go to executors.
LEFT_OUT = ("evaluation", "__pycache__")


def _left_out(subdir: str) -> bool:
    return subdir.split(os.sep)[0] in LEFT_OUT


def build(out: str = os.path.join(ROOT, "dist", "simhash_udf.zip")) -> str:
    package = os.path.join(ROOT, "simhash_udf")
    sources = sorted(os.path.relpath(os.path.join(d, f), package) for d, subdirs, files in os.walk(package)
                     for f in files if f.endswith((".py", ".toml")) and not _left_out(os.path.relpath(d, package)))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = out + ".tmp"
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sources:
            info = zipfile.ZipInfo("simhash_udf/" + name.replace(os.sep, "/"), date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(os.path.join(package, name), "rb") as fh:
                zf.writestr(info, fh.read())
    os.replace(tmp, out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "dist", "simhash_udf.zip"))
    print(build(ap.parse_args().out))


if __name__ == "__main__":
    main()
