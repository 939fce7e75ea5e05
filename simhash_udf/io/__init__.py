"""Input and output: readers (Parquet, JSON Lines, CSV, text, WET), the Hadoop file-system helpers shared by
the output and the history, the atomic output directory with its lock, and the history of earlier runs."""
