"""The algorithm in pure numpy/Python: text normalisation and features, the SimHash fingerprint and the
verification signature, table plans, the candidate search within key groups, verification and centres.
Nothing here imports pyspark (tests/test_layout.py checks it), so it runs and is tested without a JVM."""
