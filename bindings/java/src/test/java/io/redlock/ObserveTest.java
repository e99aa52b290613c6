package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The library's events in System.Logger "io.redlock" (here through its default backend,
 * java.util.logging), and a client's health() and ping(), against five real nodes.
 */
class ObserveTest extends FiveNodes {
    private static final Pattern TOKEN = Pattern.compile("[0-9a-f]{32}");

    /** Keeps every record it is given. */
    static final class Captured extends Handler {
        final List<LogRecord> records = new ArrayList<>();

        @Override
        public synchronized void publish(LogRecord record) {
            records.add(record);
        }

        synchronized List<String> messages(Level level, String event) {
            return records.stream()
                    .filter(r -> r.getLevel().equals(level)
                            && r.getMessage().startsWith(event + " "))
                    .map(LogRecord::getMessage)
                    .collect(Collectors.toList());
        }

        synchronized List<String> atLevel(Level level) {
            return records.stream().filter(r -> r.getLevel().equals(level))
                    .map(LogRecord::getMessage).collect(Collectors.toList());
        }

        synchronized List<String> all() {
            return records.stream().map(LogRecord::getMessage).collect(Collectors.toList());
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }

    private final Logger jul = Logger.getLogger("io.redlock");
    private final Captured captured = new Captured();

    /** Before the client is made: the levels sent are those the logger takes then. */
    @BeforeEach
    void captureEverything() {
        jul.setLevel(Level.ALL);
        jul.addHandler(captured);
    }

    @AfterEach
    void stopCapturing() throws Exception {
        jul.removeHandler(captured);
        jul.setLevel(null);
        nodes.restartStopped();
    }

    @Test
    void aLockCycleIsLoggedAtDebugWithNoToken() throws Exception {
        try (Redlock client = Redlock.create(nodes.uris(), Map.of("key_prefix", "observe:"))) {
            RLock lock = client.getLock("job");
            assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
            lock.unlock();
            lock.lock();   // kept: renewed by the library until unlocked
            lock.unlock();
        }
        List<String> acquired = captured.messages(Level.FINE, "acquired");   // DEBUG
        assertEquals(2, acquired.size(), captured.all().toString());
        assertTrue(acquired.get(0).startsWith("acquired op=lock resource=job owner="),
                acquired.get(0));
        assertEquals(2, captured.messages(Level.FINE, "released").size());
        for (String message : captured.all()) {
            assertFalse(TOKEN.matcher(message).find(), message);
        }
    }

    @Test
    void aNamesControlCharactersAreEscaped() throws Exception {
        try (Redlock client = Redlock.create(nodes.uris(), Map.of("key_prefix", "observe:"))) {
            RLock lock = client.getLock("job\n[error] lost\u001b[31m\u007f");
            assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
            lock.unlock();
        }
        List<String> acquired = captured.messages(Level.FINE, "acquired");
        assertEquals(1, acquired.size(), captured.all().toString());
        assertTrue(acquired.get(0).contains("resource=job\\n[error] lost\\x1b[31m\\x7f"),
                acquired.get(0));
        for (String message : captured.all()) {
            assertFalse(message.chars().anyMatch(c -> c < 0x20 || c == 0x7f), message);
        }
        assertEquals("a\\nb\\x01\\x7f\\tc", NativeClient.escape("a\nb\u0001\u007f\tc"));
    }

    @Test
    void healthAndPingSeeAStoppedNode() throws Exception {
        try (Redlock client = Redlock.create(nodes.uris(), Map.of("key_prefix", "observe:"))) {
            assertEquals("unknown", client.health().get(0).state());
            assertEquals(5, client.ping());
            List<NodeHealth> health = client.health();
            assertEquals(5, health.size());
            for (NodeHealth node : health) {
                assertEquals("up", node.state(), node.toString());
                assertTrue(node.rttMs().isPresent());
                assertEquals(40, node.runId().length());
                assertTrue(node.commands() >= 1 && node.failures() == 0);
                assertFalse(node.lastError().isPresent());
            }
            nodes.stopNode(1);
            RLock lock = client.getLock("stopped");
            assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
            lock.unlock();
            NodeHealth down = client.health().get(0);
            assertEquals("down", down.state());
            assertTrue(down.lastError().orElse("").contains("connect"), down.toString());
            assertEquals(1, captured.messages(Level.WARNING, "node_down").size(),
                    captured.all().toString());
            nodes.restartStopped();
            Thread.sleep(1100);   // the longest pause between connects to a node that failed
            assertEquals(4, client.ping());   // back, but under the restart guard
            NodeHealth back = client.health().get(0);
            assertEquals("guarded", back.state(), back.toString());
            // Routine: DEBUG (java.util.logging's FINE), below its default INFO.
            List<String> told = captured.messages(Level.FINE, "node_back");
            assertEquals(1, told.size(), captured.all().toString());
            assertEquals(List.of(), captured.atLevel(Level.INFO), captured.all().toString());
            assertTrue(told.get(0).contains(" was=down "), told.get(0));
            assertEquals(1, captured.messages(Level.WARNING, "node_restarted").size(),
                    captured.all().toString());
            nodes.stopNode(2);
            nodes.stopNode(3);
            assertThrows(NoQuorumException.class, client::ping);
        }
    }
}
