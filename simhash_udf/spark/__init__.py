"""Spark glue, one module per stage, named after the core module it runs (fingerprint, blocks, candidates,
verified, short_text, star), plus connected components and the session helper."""
