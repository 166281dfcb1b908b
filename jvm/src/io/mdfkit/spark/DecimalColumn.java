package io.mdfkit.spark;

import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarArray;
import org.apache.spark.sql.vectorized.ColumnarMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A decimal column read without a {@code java.math.BigDecimal} per value where the value fits in
 * a long, as Spark reads its own decimal columns ({@link Decimal#createUnsafe} up to 18 digits,
 * {@link Decimal#apply(long, int, int)} beyond). Spark's {@link ArrowColumnVector} makes a
 * BigDecimal of every value, which cost the forged {@code dbo.Fact} (money and decimal(9,2))
 * more than half of a read's CPU time. Layout (Arrow's columnar format, Decimal128): 16 bytes a
 * value, a little-endian two's complement integer; it fits in a long when its high 8 bytes are
 * the sign of its low 8.
 */
final class DecimalColumn extends ColumnVector {
    /** Bytes of one Decimal128 value. */
    private static final long VALUE_BYTES = 16;

    private final DecimalVector vector;

    private DecimalColumn(DecimalVector vector, DataType type) {
        super(type);
        this.vector = vector;
    }

    /** {@code vector} as Spark reads it: this class for decimals, Spark's own column otherwise. */
    static ColumnVector of(FieldVector vector, DataType type) {
        if (vector instanceof DecimalVector && type instanceof DecimalType) {
            return new DecimalColumn((DecimalVector) vector, type);
        }
        return new ArrowColumnVector(vector);
    }

    @Override
    public Decimal getDecimal(int rowId, int precision, int scale) {
        if (vector.isNull(rowId)) {
            return null;
        }
        long low = vector.getDataBuffer().getLong(rowId * VALUE_BYTES);
        if (precision <= Decimal.MAX_LONG_DIGITS()) {
            return Decimal.createUnsafe(low, precision, scale);
        }
        if (vector.getDataBuffer().getLong(rowId * VALUE_BYTES + 8) == (low >> 63)) {
            return Decimal.apply(low, precision, scale);
        }
        return Decimal.apply(vector.getObject(rowId), precision, scale);
    }

    @Override
    public boolean isNullAt(int rowId) {
        return vector.isNull(rowId);
    }

    @Override
    public boolean hasNull() {
        return vector.getNullCount() > 0;
    }

    @Override
    public int numNulls() {
        return vector.getNullCount();
    }

    @Override
    public void close() {
        // The stream reader owns the vector.
    }

    private UnsupportedOperationException notDecimal() {
        return new UnsupportedOperationException("a decimal column read as another type");
    }

    @Override
    public boolean getBoolean(int rowId) {
        throw notDecimal();
    }

    @Override
    public byte getByte(int rowId) {
        throw notDecimal();
    }

    @Override
    public short getShort(int rowId) {
        throw notDecimal();
    }

    @Override
    public int getInt(int rowId) {
        throw notDecimal();
    }

    @Override
    public long getLong(int rowId) {
        throw notDecimal();
    }

    @Override
    public float getFloat(int rowId) {
        throw notDecimal();
    }

    @Override
    public double getDouble(int rowId) {
        throw notDecimal();
    }

    @Override
    public ColumnarArray getArray(int rowId) {
        throw notDecimal();
    }

    @Override
    public ColumnarMap getMap(int rowId) {
        throw notDecimal();
    }

    @Override
    public UTF8String getUTF8String(int rowId) {
        throw notDecimal();
    }

    @Override
    public byte[] getBinary(int rowId) {
        throw notDecimal();
    }

    @Override
    public ColumnVector getChild(int ordinal) {
        throw notDecimal();
    }
}
