"""A corpus and a job's output read back for scoring: the rows of a run's clusters (to compare two runs), the
corpus as a table, each document's cluster as a label for the oracle (quality.Oracle.evaluate).

Shared by scripts/evaluate.py, scripts/same_clusters.py and the benchmarks in scripts/bench/."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from .quality import Oracle

CLUSTER_COLUMNS = ["id", "cluster_id", "is_duplicate"]


def cluster_rows(out: str) -> set[tuple]:
    """The (id, cluster_id, is_duplicate) rows of a run's clusters/: two runs gave the same result when
    these sets are equal."""
    table = ds.dataset(f"{out.rstrip('/')}/clusters", format="parquet").to_table(columns=CLUSTER_COLUMNS)
    return set(zip(*(table.column(c).to_pylist() for c in CLUSTER_COLUMNS)))


def read_table(path: str, columns: list[str] | None = None) -> pd.DataFrame:
    """Parquet (a file or a directory) or JSON Lines, with those of `columns` that it has."""
    if path.endswith((".jsonl", ".json")):
        df = pd.read_json(path, lines=True, dtype=False)
        return df[[c for c in columns if c in df.columns]] if columns else df
    schema = pq.read_schema(path) if os.path.isfile(path) else None
    names = schema.names if schema is not None else pq.ParquetDataset(path).schema.names
    return pq.read_table(path, columns=[c for c in (columns or names) if c in names]).to_pandas()


def load_corpus(path: str, id_col: str = "id", text_col: str = "text", lang_col: str = "lang") -> pd.DataFrame:
    """The corpus as id, text (and lang when it has one)."""
    df = read_table(path, [id_col, text_col, lang_col])
    missing = {id_col, text_col} - set(df.columns)
    if missing:
        raise SystemExit(f"{path}: no column {', '.join(sorted(missing))} (use --id-col / --text-col)")
    return df.rename(columns={id_col: "id", text_col: "text", lang_col: "lang"}).reset_index(drop=True)


def job_cluster_ids(docs: pd.DataFrame, output_dir: str) -> pd.Series:
    """The job's cluster_id (the id of the page kept) of every corpus document, in corpus order (every document
    must be there)."""
    clusters = read_table(os.path.join(output_dir, "clusters"), ["id", "cluster_id"])
    merged = docs[["id"]].merge(clusters, on="id", how="left", validate="one_to_one")
    if merged["cluster_id"].isna().any():
        raise SystemExit(f"{output_dir}/clusters lacks {int(merged['cluster_id'].isna().sum())} corpus documents")
    return merged["cluster_id"]


def job_labels(docs: pd.DataFrame, output_dir: str) -> np.ndarray:
    """The job's cluster of every corpus document as a label, in corpus order (every document must be there)."""
    return pd.factorize(job_cluster_ids(docs, output_dir))[0]


def kept_positions(docs: pd.DataFrame, cluster_ids: pd.Series) -> np.ndarray:
    """The corpus position of the page kept for each corpus document (its own for a kept one), from its
    job_cluster_ids."""
    position = pd.Series(np.arange(len(docs)), index=docs["id"].to_numpy())
    kept = cluster_ids.map(position)
    if kept.isna().any():
        raise SystemExit(f"the job's clusters name {int(kept.isna().sum())} kept pages that are not in the corpus")
    return kept.to_numpy(dtype=np.int64)


def truth_table(docs: pd.DataFrame, truth_path: str) -> pd.DataFrame:
    """id, cluster (and variant and related when the truth has them) of every corpus document, in corpus
    order."""
    truth = read_table(truth_path, ["id", "cluster", "variant", "related"])
    merged = docs[["id"]].merge(truth, on="id", how="left", validate="one_to_one")
    if merged["cluster"].isna().any():
        raise SystemExit(f"{truth_path} lacks {int(merged['cluster'].isna().sum())} corpus documents")
    return merged


def truth_labels(docs: pd.DataFrame, truth_path: str) -> np.ndarray:
    """The generator's cluster of every corpus document, in corpus order."""
    return truth_table(docs, truth_path)["cluster"].to_numpy()


def build_oracle(docs: pd.DataFrame) -> Oracle:
    """The Jaccard oracle of a corpus (its lang column when it has one, else each text's language guessed)."""
    langs = docs["lang"].tolist() if "lang" in docs.columns else None
    return Oracle(docs["text"].tolist(), langs)
