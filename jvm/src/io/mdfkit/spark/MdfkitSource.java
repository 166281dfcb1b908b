package io.mdfkit.spark;

import java.util.Map;

import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.read.format("mdfkit")} on the JVM: a table of one or many SQL Server databases
 * (files, backups, object URLs) read by the {@code mdfkit} command-line tool, one Spark
 * partition per split ({@code mdfkit splits} on the driver, {@code mdfkit read-split} on the
 * executors), its Arrow batches handed to Spark as columnar batches without turning them into
 * rows. The options are those of the Python data source ({@code mdfkit.spark}), plus
 * {@code command}: the {@code mdfkit} executable (default: the session's
 * {@code spark.mdfkit.command}, else {@code $MDFKIT_BIN}, else {@code mdfkit} on the PATH).
 */
public final class MdfkitSource implements TableProvider, DataSourceRegister {
    @Override
    public String shortName() {
        return "mdfkit";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return new Plan(options).schema();
    }

    @Override
    public boolean supportsExternalMetadata() {
        // A schema naming some of the columns is a column plan, as in the Python data source.
        return true;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new MdfkitTable(schema, new Plan(new CaseInsensitiveStringMap(properties)));
    }
}
