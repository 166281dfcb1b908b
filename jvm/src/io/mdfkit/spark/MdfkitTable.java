package io.mdfkit.spark;

import java.util.EnumSet;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** One table of the databases a {@link Plan} names, read in batches. */
final class MdfkitTable implements SupportsRead {
    private final StructType schema;
    private final Plan plan;

    MdfkitTable(StructType schema, Plan plan) {
        this.schema = schema;
        this.plan = plan;
    }

    @Override
    public String name() {
        return plan.table();
    }

    // Deprecated for columns() in Spark 4.1, whose default reads this; kept for every Spark 4.
    @Override
    @SuppressWarnings("deprecation")
    public StructType schema() {
        return schema;
    }

    @Override
    public Set<TableCapability> capabilities() {
        return EnumSet.of(TableCapability.BATCH_READ);
    }

    @Override
    public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
        return new SplitScan(schema, plan);
    }
}
