package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.testing.RedisNodes;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * Plain locks on nodes that run no scripts (docs/servers.md): Valkey 9.1 with its Lua engine
 * unloaded (REDIS_NO_SCRIPTING=lua) or a server whose ACL refuses @scripting (acl, the default on
 * other servers). A lock of one resource is taken, extended, fenced, kept and released with no
 * script run; what needs a script throws UnsupportedException at once, naming scripting.
 */
class ScriptlessTest {
    private static final int N = 3;
    private static final String PREFIX = "scriptless:";
    /** A kept lock's lease here: renewed every 200 ms. */
    private static final long LEASE_MS = 600;
    private static final Pattern SCRIPT_CALLS = Pattern.compile(
            "cmdstat_(?:eval|evalsha|eval_ro|evalsha_ro|fcall|fcall_ro):calls=(\\d+),.*failed_calls=(\\d+)");

    static RedisNodes nodes;

    @BeforeAll
    static void startNodes() throws Exception {
        String how = System.getenv("REDIS_NO_SCRIPTING");
        if (how == null || how.isEmpty()) {
            how = System.getenv().getOrDefault("REDIS_SERVER", "").contains("valkey") ? "lua" : "acl";
        }
        nodes = RedisNodes.start(N, Map.of("REDIS_NO_SCRIPTING", how));
    }

    @AfterAll
    static void stopNodes() {
        nodes.close();
    }

    /**
     * The scripts and functions the nodes ran, from INFO commandstats: calls that did not fail (a
     * refusal by the ACL is no call; one for want of the Lua engine is a failed call).
     */
    @AfterEach
    void noScriptRan() throws Exception {
        long ran = 0;
        for (int i = 1; i <= N; i++) {
            Matcher m = SCRIPT_CALLS.matcher(nodes.call(i, "INFO", "commandstats"));
            while (m.find()) {
                ran += Long.parseLong(m.group(1)) - Long.parseLong(m.group(2));
            }
        }
        assertEquals(0, ran, "scripts run");
    }

    /** A client with options besides generous deadlines (the machine may be busy). */
    private static Redlock client(String... options) {
        Map<String, String> all = new HashMap<>(Map.of("key_prefix", PREFIX,
                "node_timeout_ms", "2000", "connect_timeout_ms", "2000"));
        for (int i = 0; i < options.length; i += 2) {
            all.put(options[i], options[i + 1]);
        }
        return Redlock.create(nodes.uris(), all);
    }

    /** How many nodes hold name's key. */
    private static int holders(String name) throws Exception {
        int n = 0;
        for (int i = 1; i <= N; i++) {
            n += nodes.call(i, "EXISTS", PREFIX + name).equals("1") ? 1 : 0;
        }
        return n;
    }

    /** Waits until no node holds name's key (the call returns at a quorum). */
    private static void assertReleasedEverywhere(String name) throws Exception {
        for (int tries = 0; holders(name) > 0; tries++) {
            assertTrue(tries < 100, holders(name) + " nodes still hold " + name);
            Thread.sleep(10);
        }
    }

    @Test
    void aPlainLockIsTakenExtendedAndReleased() throws Exception {
        try (Redlock c = client()) {
            RLock lock = c.getLock("plain");
            assertTrue(lock.tryLock(0, 5, TimeUnit.SECONDS));
            assertTrue(lock.isHeldByCurrentThread());
            assertTrue(lock.isLocked());
            assertTrue(holders("plain") >= 2);
            lock.extend(20, TimeUnit.SECONDS);
            long validity = lock.remainingValidity(TimeUnit.MILLISECONDS);
            assertTrue(validity > 5_000 && validity <= 20_000, "validity " + validity);
            lock.unlock();
            assertFalse(lock.isHeldByCurrentThread());
            assertReleasedEverywhere("plain");
            for (NodeHealth node : c.health()) {
                assertEquals("no", node.scripting(), node.toString());
            }
        }
    }

    @Test
    void fencesIncrease() throws Exception {
        long[] fences = new long[2];
        for (int k = 0; k < 2; k++) {
            try (Redlock c = client("fencing", "1")) {
                RLock lock = c.getLock("fenced");
                assertTrue(lock.tryLock(0, 5, TimeUnit.SECONDS));
                fences[k] = lock.getFence();
                lock.unlock();
            }
        }
        assertTrue(fences[0] >= 1 && fences[1] > fences[0], fences[0] + " then " + fences[1]);
    }

    @Test
    void aKeptLockOutlivesItsLease() throws Exception {
        try (Redlock keeper = client("watchdog_lease_ms", Long.toString(LEASE_MS));
                Redlock rival = client()) {
            RLock lock = keeper.getLock("kept");
            assertTrue(lock.tryLock());
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LEASE_MS * 5 / 2);
            while (System.nanoTime() < end) {
                assertFalse(rival.getLock("kept").tryLock(0, 5, TimeUnit.SECONDS));
                assertTrue(lock.isHeldByCurrentThread() && !lock.isLost());
                assertTrue(lock.remainingValidity(TimeUnit.MILLISECONDS) > 0);
                Thread.sleep(100);
            }
            lock.unlock();
            assertReleasedEverywhere("kept");
        }
    }

    /** call throws UnsupportedException naming scripting, within a second. */
    private static void assertRefused(Executable call) {
        long start = System.nanoTime();
        UnsupportedException e = assertThrows(UnsupportedException.class, call);
        assertTrue(e.getMessage().contains("scripting"), e.getMessage());
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(1), "at once");
    }

    @Test
    void whatNeedsAScriptIsRefused() throws Exception {
        try (Redlock c = client()) {
            // A fresh client finds out by the nodes' refusals; then it knows.
            for (int k = 0; k < 2; k++) {
                assertRefused(() -> c.getMultiLock("a", "b").tryLock(0, 5, TimeUnit.SECONDS));
                RReadWriteLock rw = c.getReadWriteLock("rw");
                assertRefused(() -> rw.readLock().tryLock(0, 5, TimeUnit.SECONDS));
                assertRefused(() -> rw.writeLock().tryLock(0, 5, TimeUnit.SECONDS));
                assertRefused(() -> c.getPermitExpirableSemaphore("sem", 2)
                        .tryAcquire(0, 5, TimeUnit.SECONDS));
                RLock lock = c.getLock("still");
                assertTrue(lock.tryLock(0, 5, TimeUnit.SECONDS), "a plain lock still works");
                lock.unlock();
            }
        }
    }
}
