"""simhash-dedup: exact near-duplicate detection for web crawls with 64-bit SimHash on Spark."""

__version__ = "0.1.0"
