"""The layout's promises: the pure core runs without pyspark, evaluation code is not shipped to executors, and no
function is too long to read as a unit."""
from __future__ import annotations

import ast
import os
import pkgutil
import subprocess
import sys
import zipfile

import simhash_udf.core

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_FUNCTION_LINES = 80  # CONTRIBUTING.md: keep functions under ~60 lines where reasonable, never over this


def test_core_imports_no_pyspark():
    """Every core module imports in a Python where importing pyspark fails."""
    names = [m.name for m in pkgutil.iter_modules(simhash_udf.core.__path__, "simhash_udf.core.")]
    assert len(names) >= 8, names
    code = ("import sys\nsys.modules['pyspark'] = None\n"  # any `import pyspark...` now raises ImportError
            + "".join(f"import {n}\n" for n in names)
            + "assert not any(m.startswith('pyspark') and sys.modules[m] is not None for m in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_the_spark_stages_modules_import_no_pandas():
    """The modules whose functions the job runs in Python workers (simhash_udf.spark.*, and the core under them)
    import without pandas: each worker imports them when it starts, and pandas alone took ~0.2 s of that (the
    fingerprint stage's first tasks wait for it). Old code: simhash_udf.spark.fingerprint imported it at the top.
    Not spark.ml, the pyspark.ml API for notebooks: pyspark.ml imports pandas itself, and the job never uses it."""
    import simhash_udf.spark

    names = [m.name for m in pkgutil.iter_modules(simhash_udf.spark.__path__, "simhash_udf.spark.")
             if m.name != "simhash_udf.spark.ml"]
    assert "simhash_udf.spark.fingerprint" in names, names
    code = "import sys\n" + "".join(f"import {n}\n" for n in names) + "assert 'pandas' not in sys.modules\n"
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_executor_zip_has_no_evaluation_code(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        from build_pyfiles import build
    finally:
        sys.path.pop(0)
    names = zipfile.ZipFile(build(str(tmp_path / "simhash_udf.zip"))).namelist()
    assert "simhash_udf/core/fingerprint.py" in names and "simhash_udf/job/cli.py" in names
    assert not [n for n in names if n.startswith("simhash_udf/evaluation/")], names
    assert "simhash_udf/job/default.toml" in names  # the shipped defaults travel with the code
    shipped = set(names)
    on_disk = {os.path.relpath(os.path.join(d, f), ROOT).replace(os.sep, "/")
               for d, _, files in os.walk(os.path.join(ROOT, "simhash_udf")) for f in files
               if f.endswith((".py", ".toml"))}
    assert shipped == {n for n in on_disk if not n.startswith("simhash_udf/evaluation/")}


def test_no_function_is_longer_than_the_limit():
    """Every function and method in simhash_udf, its docstring included, is at most MAX_FUNCTION_LINES lines:
    a stage, a check or a page section that grows past it is split into functions a reader can take one at a
    time (the near-duplicate stages were one function of 199 lines)."""
    too_long, seen = [], 0
    for folder, _, files in os.walk(os.path.join(ROOT, "simhash_udf")):
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), path)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    seen += 1
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        too_long.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {node.name} ({lines} lines)")
    assert seen > 300, seen  # the walk found the package's functions
    assert not too_long, too_long
