package io.mdfkit.spark;

import org.apache.spark.sql.connector.read.InputPartition;

/** One Spark partition: one split's JSON (from {@code mdfkit splits}), its database, and how errors name it. */
final class SplitPartition implements InputPartition {
    private static final long serialVersionUID = 1L;

    final String json;
    final String database;
    final String label;

    SplitPartition(String json, String database, String label) {
        this.json = json;
        this.database = database;
        this.label = label;
    }
}
