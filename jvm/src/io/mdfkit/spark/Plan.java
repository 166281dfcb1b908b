package io.mdfkit.spark;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.ArrowUtils;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;

/**
 * What a read asks for (the data source's options) and the driver's half of it: the schema and
 * the splits, from {@code mdfkit splits} and {@code mdfkit read-split --schema-only}.
 */
final class Plan {
    private final String command;
    private final String table;
    private final List<String> columns;
    private final long targetBytes;
    private final String timestamps;
    private final boolean salvage;
    private final String sourceColumn;
    private final List<String> databases;

    Plan(CaseInsensitiveStringMap options) {
        table = options.get("table");
        if (table == null || table.isBlank()) {
            throw new IllegalArgumentException("mdfkit: give the table with .option('table', 'schema.name'); "
                    + "`mdfkit tables FILE` lists them");
        }
        columns = list(options.get("columns"));
        targetBytes = Long.parseLong(options.getOrDefault("target_bytes", String.valueOf(256L << 20)));
        timestamps = options.getOrDefault("timestamps", "ns");
        salvage = Arrays.asList("true", "1", "yes").contains(options.getOrDefault("salvage", "false").toLowerCase(Locale.ROOT));
        sourceColumn = options.get("source_column");
        command = command(options.get("command"));
        String paths = options.containsKey("paths") ? options.get("paths") : options.get("path");
        if (paths != null && paths.startsWith("[")) {
            // DataFrameReader.load(a, b) passes a JSON list: plain strings, quoted.
            paths = paths.substring(1, paths.length() - 1).replace("\"", "");
        }
        if (paths == null || paths.isBlank()) {
            throw new IllegalArgumentException("mdfkit: give the database with .load(PATH) (a file, a backup, a URL, a glob)");
        }
        databases = databases(paths);
    }

    String table() {
        return table;
    }

    String command() {
        return command;
    }

    String sourceColumn() {
        return sourceColumn;
    }

    /** The option's command, else the session's {@code spark.mdfkit.command}, else $MDFKIT_BIN, else mdfkit. */
    private static String command(String given) {
        if (given != null && !given.isBlank()) {
            return given;
        }
        Option<SparkSession> session = SparkSession.getActiveSession();
        if (session.isDefined()) {
            String conf = session.get().conf().get("spark.mdfkit.command", "");
            if (!conf.isBlank()) {
                return conf;
            }
        }
        String env = System.getenv("MDFKIT_BIN");
        return env != null && !env.isBlank() ? env : "mdfkit";
    }

    private static List<String> list(String text) {
        if (text == null || text.isBlank()) {
            return null;
        }
        List<String> out = new ArrayList<>();
        for (String part : text.split(",")) {
            if (!part.isBlank()) {
                out.add(part.trim());
            }
        }
        return out;
    }

    /** Each database: a URL, a path (made absolute), or each local file a glob in its last component matches. */
    private static List<String> databases(String paths) {
        List<String> out = new ArrayList<>();
        for (String item : list(paths)) {
            Path path = Paths.get(item);
            String name = path.getFileName() == null ? "" : path.getFileName().toString();
            if (item.contains("://")) {
                out.add(item);
                continue;
            }
            if (!name.matches(".*[*?\\[].*")) {
                // Absolute, as the splits name it (a worker may start elsewhere).
                out.add(path.toAbsolutePath().toString());
                continue;
            }
            Path dir = (path.getParent() == null ? Paths.get(".") : path.getParent()).toAbsolutePath();
            PathMatcher matcher = FileSystems.getDefault().getPathMatcher("glob:" + name);
            List<String> matches = new ArrayList<>();
            try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
                for (Path file : files) {
                    if (matcher.matches(file.getFileName()) && Files.isRegularFile(file)) {
                        matches.add(file.toString());
                    }
                }
            } catch (IOException e) {
                throw new IllegalArgumentException("mdfkit: cannot list " + dir + ": " + e.getMessage(), e);
            }
            if (matches.isEmpty()) {
                throw new IllegalArgumentException("mdfkit: no file matches " + item);
            }
            Collections.sort(matches);
            out.addAll(matches);
        }
        return out;
    }

    /** The Spark schema of the rows (the {@code columns} option's, or every column) and the source column. */
    StructType schema() {
        List<String> first = splits(databases.get(0), columns, Long.MAX_VALUE);
        byte[] stream = Commands.run(Arrays.asList(command, "read-split", "--spark-types", "--schema-only"), first.get(0),
                "the schema of " + table + " in " + databases.get(0));
        StructType schema;
        try (BufferAllocator allocator = ArrowUtils.rootAllocator().newChildAllocator("mdfkit schema", 0, Long.MAX_VALUE);
                ArrowStreamReader reader = new ArrowStreamReader(new ByteArrayInputStream(stream), allocator)) {
            schema = ArrowUtils.fromArrowSchema(reader.getVectorSchemaRoot().getSchema());
        } catch (IOException e) {
            throw new IllegalStateException("mdfkit: the schema of " + table + " in " + databases.get(0) + ": " + e.getMessage(), e);
        }
        return sourceColumn == null ? schema : schema.add(sourceColumn, DataTypes.StringType, false);
    }

    /** One partition per split of every database, reading {@code wanted} (table columns). */
    List<SplitPartition> partitions(List<String> wanted) {
        List<SplitPartition> out = new ArrayList<>();
        for (String database : databases) {
            List<String> splits = splits(database, wanted, targetBytes);
            for (int i = 0; i < splits.size(); i++) {
                String label = "split " + (i + 1) + " of " + splits.size() + " of " + table + " in " + database;
                out.add(new SplitPartition(splits.get(i), database, label));
            }
        }
        return out;
    }

    private List<String> splits(String database, List<String> wanted, long target) {
        List<String> argv = new ArrayList<>(Arrays.asList(command, "splits", database, "--table", table,
                "--target-bytes", String.valueOf(target), "--timestamps", timestamps));
        if (wanted != null) {
            argv.add("--columns=" + String.join(",", wanted));
        }
        if (salvage) {
            argv.add("--salvage");
        }
        String text = new String(Commands.run(argv, null, "planning " + table + " in " + database), StandardCharsets.UTF_8);
        List<String> lines = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (!line.isBlank()) {
                lines.add(line);
            }
        }
        if (lines.isEmpty()) {
            throw new IllegalStateException("mdfkit: planning " + table + " in " + database + ": no splits");
        }
        return lines;
    }
}
