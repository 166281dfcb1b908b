package io.mdfkit.spark;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Runs the {@code mdfkit} tool: its input, its output, and what it said on stderr when it failed. */
final class Commands {
    /** The most of a tool's stderr kept for an error message. */
    private static final int STDERR_KEPT = 64 << 10;

    private Commands() {
    }

    /** Starts {@code argv}, writes {@code input} (when not null) to its stdin and closes it. */
    static Process start(List<String> argv, String input, String what) {
        Process process;
        try {
            process = new ProcessBuilder(argv).start();
        } catch (IOException e) {
            throw new IllegalStateException("mdfkit: " + what + ": cannot start " + argv.get(0)
                    + " (the mdfkit tool: set option 'command', spark.mdfkit.command or MDFKIT_BIN): " + e.getMessage(), e);
        }
        try (OutputStream stdin = process.getOutputStream()) {
            if (input != null) {
                stdin.write(input.getBytes(StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            // The tool stopped early: its exit status and stderr say why.
        }
        return process;
    }

    /** Runs {@code argv} to its end: its stdout, or an exception naming {@code what} with its stderr. */
    static byte[] run(List<String> argv, String input, String what) {
        Process process = start(argv, input, what);
        Drain stderr = Drain.start(process.getErrorStream());
        try {
            byte[] out = process.getInputStream().readAllBytes();
            int status = process.waitFor();
            if (status != 0) {
                throw failure(what, status, stderr.text());
            }
            return out;
        } catch (IOException e) {
            throw new IllegalStateException("mdfkit: " + what + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            process.destroy();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("mdfkit: " + what + ": interrupted", e);
        }
    }

    static RuntimeException failure(String what, int status, String stderr) {
        String said = stderr.strip().replaceFirst("^mdfkit: ", "");
        return new IllegalStateException("mdfkit: " + what + ": " + (said.isEmpty() ? "exit status " + status : said));
    }

    /** A stream read to its end on a thread of its own (so that a full pipe never blocks the tool). */
    static final class Drain extends Thread {
        private final InputStream in;
        private final ByteArrayOutputStream kept = new ByteArrayOutputStream();

        private Drain(InputStream in) {
            super("mdfkit stderr");
            setDaemon(true);
            this.in = in;
        }

        static Drain start(InputStream in) {
            Drain drain = new Drain(in);
            drain.start();
            return drain;
        }

        @Override
        public void run() {
            byte[] buffer = new byte[8192];
            try {
                for (int n; (n = in.read(buffer)) > 0; ) {
                    synchronized (kept) {
                        kept.write(buffer, 0, Math.min(n, Math.max(0, STDERR_KEPT - kept.size())));
                    }
                }
            } catch (IOException e) {
                // The tool is gone; what it said so far is kept.
            }
        }

        /** What the stream said, once it ended (or after 10 s). */
        String text() {
            try {
                join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            synchronized (kept) {
                return kept.toString(StandardCharsets.UTF_8);
            }
        }
    }
}
