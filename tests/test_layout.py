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


PACKAGE = "simhash_udf"
# Imports of simhash_udf modules inside functions, each for a reason other than dodging an import cycle:
# (importing module, imported module): why it waits for the call.
LAZY_IMPORTS = {
    ("simhash_udf.job.cli", "simhash_udf.job.sizing"): "--plan only",
    ("simhash_udf.job.cli", "simhash_udf.spark.session"):
        "an option error or --plan answers without loading the Spark job",
    ("simhash_udf.job.cli", "simhash_udf.spark.py4j_converters"):
        "an option error or --plan answers without loading the Spark job",
    ("simhash_udf.job.cli", "simhash_udf.job.pipeline"):
        "an option error or --plan answers without loading the Spark job",
}


def package_modules() -> dict[str, str]:
    """{dotted module name: file} of every module of simhash_udf (a package by its __init__.py)."""
    modules = {}
    for folder, _, files in os.walk(os.path.join(ROOT, PACKAGE)):
        for name in files:
            if name.endswith(".py"):
                parts = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].split(os.sep)
                modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = os.path.join(folder, name)
    return modules


def imported_modules(module: str, path: str, node: ast.Import | ast.ImportFrom, modules) -> list[str]:
    """The simhash_udf modules an import statement of `module` loads: `from .a import b` is module a.b when that is a
    module, else a (b a name in it); relative imports resolved against the importing module's package."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in modules]
    if node.level:
        package = module.split(".") if path.endswith("__init__.py") else module.split(".")[:-1]
        base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    if base.split(".")[0] != PACKAGE:
        return []
    found = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in modules]
    return found if len(found) == len(node.names) else [base, *found]


def import_graph() -> tuple[dict[str, set[str]], list[tuple[str, str, int]]]:
    """({module: the simhash_udf modules it imports}, [(module, imported, line) of imports inside functions]),
    read from the import statements themselves (module level and inside functions alike)."""
    modules = package_modules()
    graph: dict[str, set[str]] = {m: set() for m in modules}
    in_functions = []
    for module, path in modules.items():
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        local = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                 for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))}
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in imported_modules(module, path, node, modules):
                    graph[module].add(target)
                    if id(node) in local:
                        in_functions.append((module, target, node.lineno))
    return graph, in_functions


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph as [a, b, ..., a], or None (a depth-first search for an edge back into the
    current path)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_find_cycle_finds_a_cycle_and_only_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_modules_import_each_other_without_a_cycle():
    """No module of simhash_udf imports, directly or through others, one that imports it back, counting the imports
    inside functions too: an import moved into a function to dodge a cycle hides the cycle, not the tangle (two
    modules that need each other are one responsibility split wrongly, or a helper in the wrong place)."""
    graph, _ = import_graph()
    assert len(graph) > 60 and sum(map(len, graph.values())) > 150, graph  # the walk found the package
    assert graph["simhash_udf.job.cli"] >= {"simhash_udf.job.config", "simhash_udf.errors"}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_no_module_imports_another_inside_a_function():
    """simhash_udf's modules import each other at the top, where a reader sees what a module needs; the few that
    wait for the call do so for a reason stated in LAZY_IMPORTS. (Heavy or optional third-party modules, such as
    pandas in Python workers, fastwarc and matplotlib, may be imported where they are used.)"""
    _, in_functions = import_graph()
    assert not [f"{m}:{line} imports {t}" for m, t, line in in_functions if (m, t) not in LAZY_IMPORTS]
    assert {(m, t) for m, t, _ in in_functions} == set(LAZY_IMPORTS)  # the list names no import that is gone
