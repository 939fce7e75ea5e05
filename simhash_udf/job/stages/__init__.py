"""The stages of the job between reading and writing, one module each, in the order they run
(docs/design.md, "Stages"):

    fingerprint.py     2   fingerprint_stage      text prepared, fingerprint and signature, bad rows counted
    short_text.py      2b  short_text_stage       short pages' pairs verified by shingle Jaccard
    exact_collapse.py  3   exact_collapse_stage   identical fingerprints one node; units of pages that verify alike
    blocks.py          4   blocks_stage           the table plan; the history's rows that share a key
    candidates.py      5   candidates_stage       key groups, pairs within k
    sentence_keys.py   5d  sentence_keys_stage    pages sharing a longest sentence, verified (similar or contained)
    verify.py          5b  verify_stage           accepted pairs verified on signatures; forests of edges
    components.py      6   components_stage       connected components
    resolve.py         7   resolve_stage          one kept page per cluster
    related.py         7b  related_stage          with --related N: each kept page's N nearest kept pages

run.py runs them (run_stages: the job's pipeline.run and api.near_duplicates; near_duplicate_clusters:
stages 3-7). Each stage takes the results of the stages before it and a StageContext (context.py: the
search settings derived once from DedupConfig, persist, checkpoint, the StageTimer, the history's rows),
returns a dataclass, and runs under the timer: it is materialised once (persist + count) so its seconds can
be reported and nothing expensive, least of all the Python UDF, runs twice."""
from .candidates import chance_warning
from .context import HistoryView, Persist, SearchSpecs, StageContext, StageTimer, persisting, reliable_checkpoint
from .fingerprint import REPLACEMENT_FLAG, Fingerprinted, fingerprint_stage, pass_specs, prepare_documents, simulation_mask
from .related import Related, related_stage
from .run import CLUSTERING_SETTINGS, LARGE_RUN_PAGES, Clustered, StageResults, near_duplicate_clusters, run_stages
from .short_text import ShortText, short_text_stage

__all__ = [
    "CLUSTERING_SETTINGS", "LARGE_RUN_PAGES", "REPLACEMENT_FLAG", "Clustered", "Fingerprinted", "HistoryView", "Persist",
    "Related", "SearchSpecs", "ShortText", "StageContext", "StageResults", "StageTimer", "chance_warning", "fingerprint_stage",
    "near_duplicate_clusters", "pass_specs", "persisting", "prepare_documents", "related_stage", "reliable_checkpoint",
    "run_stages", "short_text_stage", "simulation_mask",
]
