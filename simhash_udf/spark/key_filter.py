"""The Bloom filter of core/key_filter.py in Spark: built from one run's rows without collecting its keys, and
applied to the history's rows in a mapInArrow, before any join or shuffle of the history.

Build: each partition sets the bits of its keys in a numpy bitmap and emits the chunks that have a bit set
as 4096-byte binaries; Spark's `bitmap_or_agg` ORs the chunks of all partitions by chunk index, and the
driver receives only the bitmap (3-6 MB per 10^6 keys), never the keys. Apply: the bitmap is broadcast and each
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
_ARROW = pa.schema([pa.field("chunk", pa.int64()), pa.field("bits", pa.binary())])  # the same, as Arrow

# (record batch) -> int64 filter keys of its rows: one array (one key a row) or a 2-D array (several), or
# (keys, valid) where only the keys marked valid count (null array elements)
KeysOf = Callable[[pa.RecordBatch], "np.ndarray | tuple[np.ndarray, np.ndarray]"]


def _with_validity(keys) -> tuple[np.ndarray, np.ndarray | None]:
    return keys if isinstance(keys, tuple) else (keys, None)


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
                keys, valid = _with_validity(keys_of(batch))
                flat = might_contain(bitmap, keys.reshape(-1), log2_bits).reshape(keys.shape)
                if valid is not None:
                    flat &= valid
                hit = flat.any(axis=1) if keys.ndim == 2 else flat
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
                keys, valid = _with_validity(keys_of(batch))
                set_bits(bitmap, keys[valid] if valid is not None else keys.reshape(-1), log2_bits)
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

