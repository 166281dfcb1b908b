"""Arrow types the engines take: Spark and Delta Lake have no unsigned integers, no time of day,
no fixed-size binary and timestamps in microseconds only. Each column of another type is cast to
the nearest they have, values kept where the target can hold them:

=====================  =======================  ==========================================
mdfkit's Arrow type    engines' type            why
=====================  =======================  ==========================================
uint8 (tinyint)        int16                    0..255 does not fit a signed byte
fixed_size_binary      binary                   (uniqueidentifier, rowversion)
time64 (time)          string ``HH:MM:SS.f``     no time-of-day type in Delta (or Spark < 4.1)
timestamp s / ms       timestamp us             lossless
timestamp ns           timestamp us             datetime2(7)/datetimeoffset(7): the 7th digit
                                                (100 ns) is dropped
=====================  =======================  ==========================================

Struct columns (datetimeoffset, geometry, sql_variant) are cast field by field.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.types as pt


def portable_type(t: pa.DataType) -> pa.DataType:
    if pt.is_uint8(t):
        return pa.int16()
    if pt.is_fixed_size_binary(t):
        return pa.binary()
    if pt.is_time(t):
        return pa.string()
    if pt.is_timestamp(t) and t.unit != "us":
        return pa.timestamp("us", tz=t.tz)
    if pt.is_struct(t):
        return pa.struct([f.with_type(portable_type(f.type)) for f in t])
    return t


def portable_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(portable_type(f.type)) for f in schema], metadata=schema.metadata)


def portable_batch(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``batch`` cast to ``schema`` (its :func:`portable_schema`); nanoseconds are truncated."""
    if batch.schema.equals(schema, check_metadata=False):
        return batch
    return batch.cast(schema, safe=False)
