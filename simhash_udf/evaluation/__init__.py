"""Evaluation and demo code (generated corpora with ground truth, the Jaccard oracle, the demo's sample).
Not part of what executors run: scripts/build_pyfiles.py leaves it out of the --py-files zip."""
