package io.mdfkit.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/** Sent to the executors: makes a {@link SplitReader} for each split. Columnar only. */
final class SplitReaderFactory implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;

    private final String command;
    private final StructType schema;
    private final String sourceColumn;

    SplitReaderFactory(String command, StructType schema, String sourceColumn) {
        this.command = command;
        this.schema = schema;
        this.sourceColumn = sourceColumn;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
        return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
        return new SplitReader((SplitPartition) partition, schema, command, sourceColumn);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
        throw new UnsupportedOperationException("mdfkit reads splits as columnar batches only");
    }
}
