"""The Bloom filter of core/key_filter.py in Spark: built from one run's rows without collecting its keys, and
applied to the history's rows in a mapInArrow, before any join or shuffle of the history.

Build: each partition sets the bits of its keys in a numpy bitmap and emits the chunks that have a bit set
as 4096-byte binaries; Spark's `bitmap_or_agg` ORs the chunks of all partitions by chunk index, and the
driver receives only the bitmap (2 MB per 10^6 keys), never the keys. Apply: the bitmap is broadcast and each
batch of history rows keeps the rows whose keys may be in it."""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, LongType, StructField, StructType

from ..core.key_filter import log2_bits_for, might_contain, set_bits

CHUNK_BYTES = 4096  # Spark's bitmap functions work on 4096-byte (32768-bit) bitmaps
_CHUNKS = StructType([StructField("chunk", LongType()), StructField("bits", BinaryType())])

# (record batch) -> int64 filter keys of its rows: one array (one key a row) or a 2-D array (several)
KeysOf = Callable[[pa.RecordBatch], np.ndarray]


class KeyBloom:
    """A built filter: the bitmap (uint8) and log2 of its size in bits."""

    def __init__(self, bitmap: np.ndarray, log2_bits: int):
        self.bitmap, self.log2_bits = bitmap, log2_bits

    def rows_that_may_match(self, rows: DataFrame, keys_of: KeysOf) -> DataFrame:
        """The rows of `rows` with at least one filter key that may be in the filter (all rows with a key in
        it are kept; a row of one key that is not passes with a chance of ~0.16%)."""
        shared = rows.sparkSession.sparkContext.broadcast((self.bitmap, self.log2_bits))

        def keep(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            bitmap, log2_bits = shared.value
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                keys = keys_of(batch)
                flat = might_contain(bitmap, keys.reshape(-1), log2_bits)
                hit = flat.reshape(keys.shape).any(axis=1) if keys.ndim == 2 else flat
                if hit.any():
                    yield batch.filter(pa.array(hit))

        return rows.mapInArrow(keep, rows.schema)


def build_key_bloom(rows: DataFrame, keys_of: KeysOf, most_keys: int) -> KeyBloom:
    """The filter of every filter key of `rows` (keys_of gives them per Arrow batch); most_keys bounds their
    number and sizes the bitmap."""
    log2_bits = log2_bits_for(most_keys)
    n_chunks = (1 << log2_bits) // (8 * CHUNK_BYTES)  # >= 1: MIN_LOG2_BITS is one chunk

    def chunks(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        bitmap = None
        for batch in batches:
            if batch.num_rows:
                if bitmap is None:
                    bitmap = np.zeros(1 << (log2_bits - 3), dtype=np.uint8)
                set_bits(bitmap, keys_of(batch).reshape(-1), log2_bits)
        if bitmap is None:
            return
        per_chunk = bitmap.reshape(n_chunks, CHUNK_BYTES)
        used = np.flatnonzero(per_chunk.any(axis=1))
        data = [per_chunk[i].tobytes() for i in used]
        yield pa.RecordBatch.from_arrays([pa.array(used, pa.int64()), pa.array(data, pa.binary())], schema=_ARROW)

    ored = rows.mapInArrow(chunks, _CHUNKS).groupBy("chunk").agg(F.bitmap_or_agg("bits").alias("bits"))
    bitmap = np.zeros((n_chunks, CHUNK_BYTES), dtype=np.uint8)
    for r in ored.collect():
        bitmap[int(r["chunk"])] = np.frombuffer(bytes(r["bits"]), dtype=np.uint8)
    return KeyBloom(bitmap.reshape(-1), log2_bits)


_ARROW = pa.schema([pa.field("chunk", pa.int64()), pa.field("bits", pa.binary())])


# The band rows of a history are ten a page (3 x 10^8 for 30 days of 10^6 pages): handing them to Python for
# the Bloom filter above took 95 s of 2 cores, while the JVM reads them in 4 s. So they are filtered in the
# JVM by a one-probe bitmap built in SQL: a position per key from xxhash64, the bitmap as dense chunks of 64
# longs (a broadcast of 2^(log2_bits - 3) bytes, looked up by chunk number), and a bit test per row.
WORDS_PER_CHUNK = 64
JVM_BITS_PER_KEY = 48  # one probe: ~2% of other keys pass at 48 bits a key (1/48), fewer when rounded up
JVM_MAX_LOG2_BITS = 29  # a 64 MB broadcast; past ~10^7 keys the share that passes grows instead


def jvm_log2_bits(n_keys: int) -> int:
    want = max(1, int(n_keys)) * JVM_BITS_PER_KEY
    return int(min(JVM_MAX_LOG2_BITS, max(12, (want - 1).bit_length())))


def rows_with_shared_keys(rows: DataFrame, day_rows: DataFrame, key_cols: list[str], most_keys: int) -> DataFrame:
    """The rows of `rows` whose key_cols may equal those of a row of `day_rows` (all rows that do, and a few
    per cent of the others: match them exactly afterwards). Everything runs in the JVM; most_keys bounds the
    day's distinct keys and sizes the bitmap."""
    log2_bits = jvm_log2_bits(most_keys)
    pos = F.xxhash64(*key_cols).bitwiseAND(F.lit((1 << log2_bits) - 1).cast("long"))
    chunk, word, bit = F.shiftright(pos, 12), F.shiftright(pos, 6).bitwiseAND(WORDS_PER_CHUNK - 1), pos.bitwiseAND(63)
    words = (day_rows.select(chunk.alias("chunk"), word.cast("int").alias("word"), bit.alias("bit"))
             .groupBy("chunk", "word").agg(F.bit_or(F.expr("shiftleft(1L, cast(bit AS INT))")).alias("bits")))
    dense = words.groupBy("chunk").agg(F.map_from_entries(F.collect_list(F.struct("word", "bits"))).alias("m")).select(
        "chunk", F.transform(F.sequence(F.lit(0), F.lit(WORDS_PER_CHUNK - 1)),
                             lambda i: F.coalesce(F.element_at("m", i), F.lit(0).cast("long"))).alias("_words"))
    probed = rows.withColumn("_pos", pos).withColumn("_chunk", F.shiftright("_pos", 12))
    joined = probed.join(F.broadcast(dense), probed["_chunk"] == dense["chunk"], "inner")
    word_of = F.element_at("_words", F.shiftright("_pos", 6).bitwiseAND(WORDS_PER_CHUNK - 1).cast("int") + 1)
    hit = F.expr("shiftrightunsigned(_word, cast(_pos & 63 AS INT)) & 1") == 1
    return joined.withColumn("_word", word_of).where(hit).select(*rows.columns)
