package io.mdfkit.spark;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.execution.vectorized.ConstantColumnVector;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.unsafe.types.UTF8String;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One split's rows: {@code mdfkit read-split --spark-types} with the split's JSON on stdin, its
 * Arrow IPC stream read batch by batch from a {@link ToolSocket} into vectors Spark reads in place
 * ({@link BufferColumn}: from the buffers' memory). A failed read throws
 * with the split named and what the tool said (file, table, page); a salvage read's skipped pages
 * are logged as warnings.
 */
final class SplitReader implements PartitionReader<ColumnarBatch> {
    private static final Logger LOG = LoggerFactory.getLogger(SplitReader.class);

    private final SplitPartition split;
    private final StructType schema;
    private final String sourceColumn;
    private final ToolSocket socket;
    private final Process process;
    private final Commands.Drain stderr;
    private final BufferAllocator allocator;
    /** Null until the tool connects. */
    private ArrowStreamReader reader;
    private ColumnVector[] columns;
    /** The columns read from memory, given each batch's buffers. */
    private final List<BufferColumn> buffers = new ArrayList<>();
    private ColumnarBatch batch;
    private int sourceIndex = -1;

    SplitReader(SplitPartition split, StructType schema, String command, String sourceColumn) {
        this.split = split;
        this.schema = schema;
        this.sourceColumn = sourceColumn;
        try {
            socket = new ToolSocket();
        } catch (IOException e) {
            throw new IllegalStateException("mdfkit: " + split.label + ": cannot listen at a Unix socket: " + e.getMessage(), e);
        }
        try {
            process = Commands.start(Arrays.asList(command, "read-split", "--spark-types", "--socket", socket.path()),
                    split.json, split.label);
        } catch (RuntimeException e) {
            // No tool, so no reader to close the socket's folder later.
            try {
                socket.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        stderr = Commands.Drain.start(process.getErrorStream());
        allocator = ArrowUtils.rootAllocator().newChildAllocator(split.label, 0, Long.MAX_VALUE);
    }

    /** Waits for the tool's connection; a tool that ended without one failed before writing. */
    private void connect() throws IOException {
        SocketChannel channel = socket.accept(process);
        socket.close();
        if (channel == null) {
            throw new IOException("the tool ended without writing its rows");
        }
        reader = new ArrowStreamReader(channel, allocator);
    }

    @Override
    public boolean next() throws IOException {
        try {
            if (reader == null) {
                connect();
            }
            if (columns == null) {
                bind(reader.getVectorSchemaRoot());
            }
            if (reader.loadNextBatch()) {
                int rows = reader.getVectorSchemaRoot().getRowCount();
                for (BufferColumn column : buffers) {
                    column.load(rows);
                }
                if (sourceIndex >= 0) {
                    ConstantColumnVector source = new ConstantColumnVector(rows, schema.fields()[sourceIndex].dataType());
                    source.setUtf8String(UTF8String.fromString(split.database));
                    columns[sourceIndex] = source;
                }
                batch.setNumRows(rows);
                return true;
            }
        } catch (IOException | RuntimeException e) {
            throw failure(e);
        }
        finish();
        return false;
    }

    /** The batch's columns: the stream's vectors, by name, in the order Spark asked for. */
    private void bind(VectorSchemaRoot root) {
        StructField[] fields = schema.fields();
        columns = new ColumnVector[fields.length];
        for (int i = 0; i < fields.length; i++) {
            if (fields[i].name().equals(sourceColumn)) {
                sourceIndex = i;
                continue;
            }
            FieldVector vector = root.getVector(fields[i].name());
            if (vector == null) {
                throw new IllegalStateException("no column " + fields[i].name() + " in the split's rows");
            }
            columns[i] = BufferColumn.of(vector, fields[i].dataType());
            if (columns[i] instanceof BufferColumn) {
                buffers.add((BufferColumn) columns[i]);
            }
        }
        batch = new ColumnarBatch(columns);
    }

    @Override
    public ColumnarBatch get() {
        return batch;
    }

    /** Waits for the tool: an exit status other than 0 fails the read. */
    private void finish() throws IOException {
        int status;
        try {
            status = process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("mdfkit: " + split.label + ": interrupted", e);
        }
        String said = stderr.text();
        if (status != 0) {
            throw Commands.failure(split.label, status, said);
        }
        for (String line : said.split("\n")) {
            if (!line.isBlank()) {
                LOG.warn("{}: {}", split.label, line);
            }
        }
    }

    /** The tool's own words when it stopped (a damaged page, a missing file), else {@code cause}'s. */
    private RuntimeException failure(Exception cause) {
        try {
            if (process.waitFor(30, TimeUnit.SECONDS) && process.exitValue() != 0) {
                return Commands.failure(split.label, process.exitValue(), stderr.text());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return new IllegalStateException("mdfkit: " + split.label + ": " + cause.getMessage(), cause);
    }

    @Override
    public void close() throws IOException {
        process.destroy();
        try {
            if (reader != null) {
                reader.close();
            }
        } finally {
            try {
                socket.close();
            } finally {
                allocator.close();
            }
        }
    }
}
