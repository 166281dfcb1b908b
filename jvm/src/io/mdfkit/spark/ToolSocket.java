package io.mdfkit.spark;

import java.io.Closeable;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A Unix socket in a private temporary folder that one {@code mdfkit read-split --socket PATH}
 * connects to and writes its Arrow stream into. Arrow reads a socket channel straight into its
 * vectors' off-heap buffers, one copy from the kernel; a {@link Process}'s stdout is an
 * {@code InputStream}, which Arrow reads 8 KB at a time through two heap arrays (three copies of
 * every byte, and a system call asking what is available at each step).
 */
final class ToolSocket implements Closeable {
    /** How long to wait for the tool's connection before asking whether it is still running. */
    private static final long POLL_MILLIS = 100;

    private final Path folder;
    private final Path path;
    private final ServerSocketChannel server;

    ToolSocket() throws IOException {
        folder = Files.createTempDirectory("mdfkit-split");
        path = folder.resolve("s");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        try {
            server.bind(UnixDomainSocketAddress.of(path));
            server.configureBlocking(false);
        } catch (IOException | RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Where the tool connects. */
    String path() {
        return path.toString();
    }

    /**
     * The tool's connection, waited for while {@code tool} runs; null when it ended without
     * connecting (it failed before writing: its exit status and stderr say why).
     */
    SocketChannel accept(Process tool) throws IOException {
        try (Selector selector = Selector.open()) {
            server.register(selector, SelectionKey.OP_ACCEPT);
            while (true) {
                // Asked before accepting: a tool that connected and then ended is still accepted.
                boolean running = tool.isAlive();
                SocketChannel channel = server.accept();
                if (channel != null) {
                    channel.configureBlocking(true);
                    return channel;
                }
                if (!running) {
                    return null;
                }
                selector.select(POLL_MILLIS);
            }
        }
    }

    /** Stops listening and removes the socket and its folder (an accepted connection stays open). */
    @Override
    public void close() throws IOException {
        try {
            server.close();
        } finally {
            Files.deleteIfExists(path);
            Files.deleteIfExists(folder);
        }
    }
}
