"""The suite's own Spark session settings (tests/conftest.py), apart from what users run with."""

# Adaptive execution plans each query again after every shuffle stage it runs: work on the driver that pays off
# on large data and is pure cost on the tests' few hundred rows, for thousands of queries (tests/test_job.py and
# test_verified.py in one process: 8% less wall and 7% less CPU without it). Spark's results do not depend on it;
# the partitioning it would vary is varied by the tests themselves (--shuffle-partitions, --input-partitions), and
# the sample's run that counts a run's Spark jobs and that those tests compare with runs with it
# (tests/test_job.py, watched_sample_run: PRODUCTION_SETTINGS).
TEST_SESSION_SETTINGS = {"spark.sql.adaptive.enabled": "false"}
# What TEST_SESSION_SETTINGS changed, as a user's session has it (scoped_settings, for a run that must be one).
PRODUCTION_SETTINGS = {"spark.sql.adaptive.enabled": "true"}
