package io.redlock.testing;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

/**
 * Independent redis-server nodes for a test class, started and stopped with
 * scripts/redis-nodes.sh in a temporary directory (loopback ports and unix sockets). The tests
 * of the binding and of its adapters share it.
 */
public final class RedisNodes implements AutoCloseable {
    private static final Path SCRIPT = Paths.get(System.getProperty("redlock.source.dir", "../.."),
            "scripts", "redis-nodes.sh").toAbsolutePath().normalize();

    private final Path dir;
    private final List<String> uris;
    private final Thread stopAtExit;
    private final Set<Integer> stopped = new TreeSet<>();

    private RedisNodes(Path dir, List<String> uris) {
        this.dir = dir;
        this.uris = uris;
        this.stopAtExit = new Thread(this::stop);
        Runtime.getRuntime().addShutdownHook(stopAtExit);
    }

    public static RedisNodes start(int n) throws IOException, InterruptedException {
        return start(n, Map.of());
    }

    /**
     * n nodes started with env added to the script's environment: REDIS_NO_SCRIPTING "lua" or
     * "acl" makes nodes that run no scripts (see scripts/redis-nodes.sh).
     */
    public static RedisNodes start(int n, Map<String, String> env)
            throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("redlock-java-");
        String out = run(env, SCRIPT.toString(), "start", dir.toString(), Integer.toString(n));
        return new RedisNodes(dir, List.of(out.trim().split("\n")));
    }

    /**
     * TLS-only nodes (rediss:// URIs) with the certificates of {@link #makeCertificates}: commands
     * of these tests still go to them over their unix sockets, in the clear.
     */
    public static RedisNodes startTls(int n, Path certs) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("redlock-java-tls-");
        String out = run(SCRIPT.toString(), "start", dir.toString(), Integer.toString(n), "--tls",
                certs.toString());
        return new RedisNodes(dir, List.of(out.trim().split("\n")));
    }

    /** Makes the TLS tests' certificates (tests/support/tls-certs.sh) in a new directory. */
    public static Path makeCertificates() throws IOException, InterruptedException {
        Path certs = Files.createTempDirectory("redlock-java-certs-");
        run("bash", SCRIPT.getParent().resolveSibling("tests").resolve("support")
                .resolve("tls-certs.sh").toString(), certs.toString());
        return certs;
    }

    /** The nodes' redis:// URIs. */
    public List<String> uris() {
        return uris;
    }

    /** The nodes' unix:// URIs. */
    public List<String> socketUris() throws IOException {
        return Files.readAllLines(dir.resolve("sockets"));
    }

    /** The URIs with credentials added: redis://user:password@host:port. */
    public List<String> urisWithCredentials(String user, String password) {
        List<String> result = new ArrayList<>();
        for (String uri : uris) {
            result.add(uri.replace("redis://", "redis://" + user + ":" + password + "@"));
        }
        return result;
    }

    /** Runs a command on node i (1-based) with redis-cli, over its unix socket; its raw output. */
    public String cli(int i, String... command) throws IOException, InterruptedException {
        String socket = socketUris().get(i - 1).replace("unix://", "");
        List<String> args = new ArrayList<>(List.of("redis-cli", "--raw", "-s", socket));
        args.addAll(Arrays.asList(command));
        return run(args.toArray(new String[0])).trim();
    }

    /**
     * Sends one command to node i (1-based) on a connection of its own, without a process:
     * for tests whose timing matters. The reply as text: a status, an integer, a bulk string
     * ("" for nil); an error reply throws IOException.
     */
    public String call(int i, String... command) throws IOException {
        URI uri = URI.create(uris.get(i - 1));
        try (Socket socket = new Socket(uri.getHost(), uri.getPort())) {
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(10_000);
            ByteArrayOutputStream request = new ByteArrayOutputStream();
            request.writeBytes(("*" + command.length + "\r\n").getBytes(StandardCharsets.UTF_8));
            for (String arg : command) {
                byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
                request.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.UTF_8));
                request.writeBytes(bytes);
                request.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
            }
            OutputStream out = socket.getOutputStream();
            out.write(request.toByteArray());
            out.flush();
            InputStream in = new BufferedInputStream(socket.getInputStream());
            String line = readLine(in);
            switch (line.isEmpty() ? ' ' : line.charAt(0)) {
                case '+':
                case ':':
                    return line.substring(1);
                case '$':
                    int n = Integer.parseInt(line.substring(1));
                    if (n < 0) {
                        return "";
                    }
                    byte[] data = in.readNBytes(n + 2);
                    return new String(data, 0, n, StandardCharsets.UTF_8);
                default:
                    throw new IOException(String.join(" ", command) + ": " + line);
            }
        }
    }

    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) != '\n') {
            if (c < 0) {
                throw new IOException("connection closed");
            }
            if (c != '\r') {
                line.write(c);
            }
        }
        return line.toString(StandardCharsets.UTF_8);
    }

    /** Pauses the nodes (CLIENT PAUSE ms ALL): they answer nobody for ms. */
    public void pause(long ms, int... which) throws IOException {
        for (int i : which) {
            call(i, "CLIENT", "PAUSE", Long.toString(ms), "ALL");
        }
    }

    /** Stops node i (1-based); {@link #restartStopped()} starts it again on the same port. */
    public void stopNode(int i) throws IOException, InterruptedException {
        run(SCRIPT.toString(), "stop-node", dir.toString(), Integer.toString(i));
        stopped.add(i);
    }

    /**
     * Starts the stopped nodes again, new servers without data, and records the group anew
     * (redis-nodes.sh record): without that, restart_records would hold them back for
     * max_lease_ms, as it does a server that may have replaced one without its data.
     */
    public void restartStopped() throws IOException, InterruptedException {
        for (int i : stopped) {
            run(SCRIPT.toString(), "start-node", dir.toString(), Integer.toString(i));
        }
        stopped.clear();
        run(SCRIPT.toString(), "record", dir.toString());
    }

    @Override
    public void close() {
        stop();
        Runtime.getRuntime().removeShutdownHook(stopAtExit);
    }

    private void stop() {
        try {
            run(SCRIPT.toString(), "stop", dir.toString());
            run("rm", "-rf", dir.toString());
        } catch (IOException e) {
            throw new RuntimeException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Removes a directory this class made (certificates). */
    public static void removeDirectory(Path dir) throws IOException, InterruptedException {
        run("rm", "-rf", dir.toString());
    }

    public static String run(String... command) throws IOException, InterruptedException {
        return run(Map.of(), command);
    }

    private static String run(Map<String, String> env, String... command)
            throws IOException, InterruptedException {
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
        builder.environment().putAll(env);
        Process process = builder.start();
        byte[] out = process.getInputStream().readAllBytes();
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IOException(String.join(" ", command) + " failed: "
                    + new String(out, StandardCharsets.UTF_8));
        }
        return new String(out, StandardCharsets.UTF_8);
    }
}
