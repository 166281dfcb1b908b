package io.mdfkit.spark;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** The scan of a table: only the columns the query uses, one partition per split. */
final class SplitScan implements ScanBuilder, SupportsPushDownRequiredColumns, Scan, Batch {
    private final Plan plan;
    private final StructType table;
    private StructType required;

    SplitScan(StructType table, Plan plan) {
        this.table = table;
        this.required = table;
        this.plan = plan;
    }

    @Override
    public void pruneColumns(StructType requiredSchema) {
        required = requiredSchema;
    }

    @Override
    public Scan build() {
        return this;
    }

    @Override
    public StructType readSchema() {
        return required;
    }

    @Override
    public String description() {
        // Shown in the plan (explain()): which columns the splits read.
        return "mdfkit " + plan.table() + " reading " + String.join(", ", required.fieldNames());
    }

    @Override
    public Batch toBatch() {
        return this;
    }

    @Override
    public InputPartition[] planInputPartitions() {
        List<String> wanted = new ArrayList<>();
        for (StructField field : required.fields()) {
            if (!field.name().equals(plan.sourceColumn())) {
                wanted.add(field.name());
            }
        }
        if (wanted.isEmpty()) {
            // Rows and no values (a count, or the source column alone): the narrowest read is one column.
            for (StructField field : table.fields()) {
                if (!field.name().equals(plan.sourceColumn())) {
                    wanted.add(field.name());
                    break;
                }
            }
        }
        return plan.partitions(wanted).toArray(new InputPartition[0]);
    }

    @Override
    public PartitionReaderFactory createReaderFactory() {
        return new SplitReaderFactory(plan.command(), required, plan.sourceColumn());
    }
}
