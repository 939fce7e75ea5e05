"""DataFrames of tables the driver computed (the components found in numpy, the sentence-key pairs verified on the
driver), made so that the tasks that read them do not carry their rows."""
from __future__ import annotations

from typing import Callable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from .session import scoped_settings

# createDataFrame of an Arrow table makes a local relation: its rows are part of the plan, and every task that reads
# them carries its partition's rows in its serialized form, even when they are read from a cache (a cache does not
# cut the lineage). 658,245 sentence-key pairs in one partition made tasks of 41 MB, serialized again by the
# scheduler's single thread for each of the six stages that read them; in spark-submit's default driver of 1g that
# thread ran out of heap and the run hung. A table of more Arrow bytes than this is checkpointed once instead (the
# run's checkpoint: files in its checkpoint directory, or the API's local checkpoint), in pieces of about this
# size (a task of ~3 times as many bytes of rows, under the 1,000 KiB over which Spark warns of a large task), and
# the tasks read it from there.
SHIPPED_BYTES = 320 << 10


def driver_frame(spark: SparkSession, table: pa.Table, schema, partitions: int,
                 checkpoint: Callable[[DataFrame], DataFrame]) -> DataFrame:
    """table as a DataFrame of at most `partitions` partitions, checkpointed first when it holds more than
    SHIPPED_BYTES. The same rows either way. A local relation's scan makes min(rows,
    spark.sql.leafNodeDefaultParallelism) partitions (the session's default parallelism unless set), so the
    checkpoint's pieces are set there."""
    if table.nbytes <= SHIPPED_BYTES:
        return spark.createDataFrame(table, schema).coalesce(partitions)
    pieces = max(partitions, -(-table.nbytes // SHIPPED_BYTES))
    with scoped_settings(spark, {"spark.sql.leafNodeDefaultParallelism": str(pieces)}):
        return checkpoint(spark.createDataFrame(table, schema)).coalesce(partitions)
