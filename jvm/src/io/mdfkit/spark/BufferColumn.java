package io.mdfkit.spark;

import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampMicroVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A column of one Arrow batch read straight from its buffers' memory, as Spark reads its own
 * off-heap columns, for the types {@code read-split --spark-types} writes flat: booleans, 2-, 4-
 * and 8-byte integers, floats, dates, microsecond timestamps, decimals, strings and binaries
 * (others go to Spark's {@link ArrowColumnVector}). Spark's {@code ArrowColumnVector} goes through
 * Arrow's accessors, which check the reference count, the null bit and the bounds on every value,
 * and makes a {@code java.math.BigDecimal} of every decimal; with every column of the forged
 * {@code dbo.Fact} (money and decimal(9,2)) read and handed on as rows, that was more than half of
 * a Spark task's CPU time.
 *
 * <p>Layout (Arrow's columnar format): a validity bitmap (bit {@code i % 8} of byte {@code i / 8}
 * set = row {@code i} not null; absent when the batch has no nulls); fixed-width values
 * little-endian at {@code i * width} ({@code BitVector}: one bit a value, as the bitmap); Decimal128
 * 16 bytes a value, a two's complement integer, low 8 bytes first; strings and binaries as
 * 4-byte offsets ({@code offsets[i]} to {@code offsets[i + 1]} into the data buffer).
 *
 * <p>Memory is read by address, so every read is checked first: {@link #load} checks each buffer's
 * capacity against the batch's row count (a stream that lies fails the task), each getter checks
 * its row against that count, and a string's offsets against its data buffer.
 */
final class BufferColumn extends ColumnVector {
    /** Bytes of one Decimal128 value. */
    private static final int DECIMAL_BYTES = 16;
    /** Unscaled values under this (10^18) are kept in a long by Spark's {@link Decimal} whatever the precision. */
    private static final long LONG_DECIMAL_LIMIT = 1_000_000_000_000_000_000L;
    private static final int OFFSET_BYTES = BaseVariableWidthVector.OFFSET_WIDTH;

    private final FieldVector vector;
    /** Bytes a value takes in the data buffer; 0 for bits, -1 for strings and binaries (offsets). */
    private final int width;
    private int rows;
    /** 0 when the batch has no nulls. */
    private long validity;
    private long data;
    private long dataBytes;
    private long offsets;

    private BufferColumn(FieldVector vector, DataType type, int width) {
        super(type);
        this.vector = vector;
        this.width = width;
    }

    /**
     * {@code vector} as Spark reads it: this class where the Arrow vector's layout is one Spark's
     * getter for {@code type} reads, Spark's own column otherwise. {@link #load} it for each batch.
     */
    static ColumnVector of(FieldVector vector, DataType type) {
        int width = width(vector, type);
        return width == Integer.MIN_VALUE ? new ArrowColumnVector(vector) : new BufferColumn(vector, type, width);
    }

    /** The bytes a value of {@code vector} takes where Spark reads {@code type} from it, else MIN_VALUE. */
    private static int width(FieldVector vector, DataType type) {
        boolean matches = (vector instanceof BitVector && type instanceof BooleanType)
                || (vector instanceof SmallIntVector && type instanceof ShortType)
                || (vector instanceof IntVector && type instanceof IntegerType)
                || (vector instanceof DateDayVector && type instanceof DateType)
                || (vector instanceof BigIntVector && type instanceof LongType)
                || (vector instanceof TimeStampMicroTZVector && type instanceof TimestampType)
                || (vector instanceof TimeStampMicroVector && type instanceof TimestampNTZType)
                || (vector instanceof Float4Vector && type instanceof FloatType)
                || (vector instanceof Float8Vector && type instanceof DoubleType)
                || (vector instanceof DecimalVector && type instanceof DecimalType);
        if (matches) {
            return vector instanceof BitVector ? 0 : ((BaseFixedWidthVector) vector).getTypeWidth();
        }
        if ((vector instanceof VarCharVector && type instanceof StringType)
                || (vector instanceof VarBinaryVector && type instanceof BinaryType)) {
            return -1;
        }
        return Integer.MIN_VALUE;
    }

    /** Takes the vector's buffers for a batch of {@code rows} rows, checking that they hold them. */
    void load(int rows) {
        this.rows = 0;
        long needed = width > 0 ? (long) rows * width : width == 0 ? bitmapBytes(rows) : (rows + 1L) * OFFSET_BYTES;
        ArrowBuf values = width < 0 ? vector.getOffsetBuffer() : vector.getDataBuffer();
        check(values, needed, width < 0 ? "offsets" : "values");
        if (width < 0) {
            offsets = values.memoryAddress();
            ArrowBuf bytes = vector.getDataBuffer();
            data = bytes.memoryAddress();
            dataBytes = bytes.capacity();
        } else {
            data = values.memoryAddress();
        }
        validity = 0;
        if (vector.getNullCount() > 0) {
            ArrowBuf bitmap = vector.getValidityBuffer();
            check(bitmap, bitmapBytes(rows), "validity");
            validity = bitmap.memoryAddress();
        }
        this.rows = rows;
    }

    private static long bitmapBytes(int rows) {
        return (rows + 7L) / 8;
    }

    private void check(ArrowBuf buffer, long needed, String what) {
        if (buffer == null || buffer.capacity() < needed) {
            throw new IllegalStateException("mdfkit: column " + vector.getName() + ": the " + what + " buffer holds "
                    + (buffer == null ? 0 : buffer.capacity()) + " bytes, " + needed + " needed");
        }
    }

    /** Checks that the batch has row {@code rowId}. */
    private void row(int rowId) {
        if (Integer.compareUnsigned(rowId, rows) >= 0) {
            throw new IndexOutOfBoundsException("mdfkit: row " + rowId + " of a batch of " + rows + " in " + vector.getName());
        }
    }

    /** The address of the row's value, read {@code bytes} wide: the column's own width only. */
    private long at(int rowId, int bytes) {
        if (bytes != width) {
            throw notThisType();
        }
        row(rowId);
        return data + (long) rowId * bytes;
    }

    private static boolean bit(long bitmap, int rowId) {
        return (Platform.getByte(null, bitmap + (rowId >>> 3)) >> (rowId & 7) & 1) != 0;
    }

    @Override
    public boolean isNullAt(int rowId) {
        row(rowId);
        return validity != 0 && !bit(validity, rowId);
    }

    @Override
    public boolean hasNull() {
        return validity != 0;
    }

    @Override
    public int numNulls() {
        return validity == 0 ? 0 : vector.getNullCount();
    }

    @Override
    public boolean getBoolean(int rowId) {
        at(rowId, 0);
        return bit(data, rowId);
    }

    @Override
    public short getShort(int rowId) {
        return Platform.getShort(null, at(rowId, Short.BYTES));
    }

    @Override
    public int getInt(int rowId) {
        return Platform.getInt(null, at(rowId, Integer.BYTES));
    }

    @Override
    public long getLong(int rowId) {
        return Platform.getLong(null, at(rowId, Long.BYTES));
    }

    @Override
    public float getFloat(int rowId) {
        return Platform.getFloat(null, at(rowId, Float.BYTES));
    }

    @Override
    public double getDouble(int rowId) {
        return Platform.getDouble(null, at(rowId, Double.BYTES));
    }

    /**
     * The value as Spark keeps it: a long under 10^18 (as {@code Decimal.set} would: money's
     * decimal(19,4) included), a BigDecimal only beyond (and a value over the precision fails).
     */
    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        if (isNullAt(rowId)) {
            return null;
        }
        long address = at(rowId, DECIMAL_BYTES);
        long low = Platform.getLong(null, address);
        if (Platform.getLong(null, address + 8) == (low >> 63) && low > -LONG_DECIMAL_LIMIT && low < LONG_DECIMAL_LIMIT) {
            return Decimal.createUnsafe(low, precision, scale);
        }
        return Decimal.apply(((DecimalVector) vector).getObject(rowId), precision, scale);
    }

    /** The start of the row's bytes in the data buffer and their length, checked against it. */
    private long span(int rowId) {
        if (width >= 0) {
            throw notThisType();
        }
        row(rowId);
        long start = Platform.getInt(null, offsets + (long) rowId * OFFSET_BYTES) & 0xFFFFFFFFL;
        long end = Platform.getInt(null, offsets + (rowId + 1L) * OFFSET_BYTES) & 0xFFFFFFFFL;
        if (start > end || end > dataBytes) {
            throw new IllegalStateException("mdfkit: column " + vector.getName() + ", row " + rowId + ": bytes " + start
                    + " to " + end + " of a buffer of " + dataBytes);
        }
        return start << 32 | (end - start);
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        if (isNullAt(rowId)) {
            return null;
        }
        long span = span(rowId);
        return UTF8String.fromAddress(null, data + (span >>> 32), (int) span);
    }

    @Override
    public byte[] getBinary(int rowId) {
        if (isNullAt(rowId)) {
            return null;
        }
        long span = span(rowId);
        byte[] out = new byte[(int) span];
        Platform.copyMemory(null, data + (span >>> 32), out, Platform.BYTE_ARRAY_OFFSET, out.length);
        return out;
    }

    @Override
    public void close() {
        // The stream reader owns the vector.
    }

    private UnsupportedOperationException notThisType() {
        return new UnsupportedOperationException("mdfkit: column " + vector.getName() + " read as another type");
    }

    @Override
    public byte getByte(int rowId) {
        throw notThisType();
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        throw notThisType();
    }

    @Override
    public ColumnarMap getMap(int rowId) {
        throw notThisType();
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        throw notThisType();
    }
}
