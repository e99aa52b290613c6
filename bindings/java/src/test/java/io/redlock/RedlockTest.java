package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.internal.RedlockNativeConstants;
import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class RedlockTest extends FiveNodes {
    @Test
    void versionMatchesTheHeader() {
        assertEquals(RedlockNativeConstants.REDLOCK_VERSION_STRING, Redlock.version());
    }

    @Test
    void splitNodesKeepsASentinelUrisCommas() {
        assertEquals(List.of("redis-sentinel://s1,s2:26380?sentinelMasterId=a", "redis://m1:6379",
                             "rediss://m2"),
                     Redlock.splitNodes("redis-sentinel://s1,s2:26380?sentinelMasterId=a, "
                                        + "redis://m1:6379,rediss://m2"));
        assertEquals(List.of(), Redlock.splitNodes(""));
    }

    @Test
    void createWithNodesOnly() throws Exception {
        try (Redlock client = Redlock.create(nodes.uris().toArray(new String[0]))) {
            RLock lock = client.getLock("create-plain");
            assertTrue(lock.tryLock());
            assertTrue(nodes.cli(1, "GET", "create-plain").matches("[0-9a-f]{32}"));
            lock.unlock();
        }
    }

    @Test
    void unixSocketsReachTheSameNodes() throws Exception {
        try (Redlock overSockets = Redlock.create(nodes.socketUris(), Map.of());
                Redlock overTcp = Redlock.create(nodes.uris(), Map.of())) {
            RLock lock = overSockets.getLock("over-sockets");
            assertTrue(lock.tryLock());
            assertFalse(overTcp.getLock("over-sockets").tryLock());
            lock.unlock();
            assertTrue(overTcp.getLock("over-sockets").tryLock());
        }
    }

    @Test
    void optionsApply() throws Exception {
        Map<String, String> options = Map.of("key_prefix", "app:", "node_timeout_ms", "200",
                "pool_size", "2");
        try (Redlock client = Redlock.create(nodes.uris(), options)) {
            RLock lock = client.getLock("opts");
            assertTrue(lock.tryLock());
            assertTrue(nodes.cli(3, "GET", "app:opts").matches("[0-9a-f]{32}"));
            lock.unlock();
        }
    }

    @Test
    void badClientArguments() {
        List<String> uris = nodes.uris();
        assertThrows(NullPointerException.class, () -> Redlock.create((String[]) null));
        assertThrows(NullPointerException.class, () -> Redlock.create(null, Map.of()));
        assertThrows(NullPointerException.class, () -> Redlock.create(uris, null));
        assertThrows(NullPointerException.class, () -> Redlock.create(uris.get(0), null));
        assertThrows(IllegalArgumentException.class, () -> Redlock.create());
        Map<String, String> nullValue = new HashMap<>();
        nullValue.put("key_prefix", null);
        assertThrows(NullPointerException.class, () -> Redlock.create(uris, nullValue));

        assertCode(RedlockNativeConstants.REDLOCK_EINVAL, InvalidArgumentException.class,
                () -> Redlock.create(uris, Map.of("no_such_option", "1")));
        assertCode(RedlockNativeConstants.REDLOCK_EINVAL, InvalidArgumentException.class,
                () -> Redlock.create(uris, Map.of("node_timeout_ms", "soon")));
        assertCode(RedlockNativeConstants.REDLOCK_EINVAL, InvalidArgumentException.class,
                () -> Redlock.create(uris.get(0), uris.get(1), uris.get(0)));
        assertCode(RedlockNativeConstants.REDLOCK_EINVAL, InvalidArgumentException.class,
                () -> Redlock.create("http://127.0.0.1"));
        assertCode(RedlockNativeConstants.REDLOCK_EINVAL, InvalidArgumentException.class,
                () -> Redlock.create("rediss://127.0.0.1:0"));
        InvalidArgumentException leaked = assertThrows(InvalidArgumentException.class,
                () -> Redlock.create("redis://:Xy@SecretTail/9@host/x"));
        assertFalse(leaked.getMessage().contains("Xy"), leaked.getMessage());
        assertFalse(leaked.getMessage().contains("Secret"), leaked.getMessage());
        assertTrue(leaked.getMessage().contains("'redis://***@host/x': db must be a number"),
                leaked.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Redlock.create("redis://127.0.0.1\0"));
        assertThrows(IllegalArgumentException.class,
                () -> Redlock.create(uris, Map.of("key_prefix", "a\0b")));
    }

    @Test
    void badCredentials() throws Exception {
        for (int i = 1; i <= 5; i++) {
            assertEquals("OK", nodes.cli(i, "ACL", "SETUSER", "alice", "on", ">s3cret", "~*", "+@all"));
        }
        try (Redlock good = Redlock.create(nodes.urisWithCredentials("alice", "s3cret"), Map.of())) {
            RLock lock = good.getLock("acl");
            assertTrue(lock.tryLock());
            lock.unlock();
        }
        try (Redlock bad = Redlock.create(nodes.urisWithCredentials("alice", "wr0ng"), Map.of())) {
            RLock lock = bad.getLock("acl");
            RedlockException e = assertCode(RedlockNativeConstants.REDLOCK_EAUTH,
                    AuthException.class, lock::tryLock);
            assertFalse(e.getMessage().contains("wr0ng"), e.getMessage());
            assertTrue(e.getMessage().contains("127.0.0.1:"), "names the nodes: " + e.getMessage());
            assertFalse(lock.isHeldByCurrentThread());
            assertThrows(AuthException.class, lock::isLocked);
        }
    }

    @Test
    void aCommandTheAclForbidsIsNotRefusedCredentials() throws Exception {
        for (int i = 1; i <= 5; i++) {
            assertEquals("OK", nodes.cli(i, "ACL", "SETUSER", "nofence", "on", ">s3cret", "~*",
                    "&*", "+@all", "-incr"));
        }
        try (Redlock client = Redlock.create(nodes.urisWithCredentials("nofence", "s3cret"),
                Map.of("fencing", "1"))) {
            RLock lock = client.getLock("acl-fenced");
            RedlockException e = assertCode(RedlockNativeConstants.REDLOCK_ENOPERM,
                    PermissionDeniedException.class, lock::tryLock);
            assertFalse(e instanceof AuthException, e.getMessage());
            assertTrue(e.getMessage().contains("incr"), "names the command: " + e.getMessage());
            assertTrue(e.getMessage().contains("127.0.0.1:"), "names the nodes: " + e.getMessage());
            assertFalse(lock.isHeldByCurrentThread());
        }
    }

    @Test
    void closeFreesTheClientAndLeavesLocksToExpire() throws Exception {
        Redlock client = Redlock.create(nodes.uris(), Map.of());
        RLock lock = client.getLock("closed");
        assertTrue(lock.tryLock(0, 20, TimeUnit.SECONDS));
        client.close();
        client.close();

        assertFalse(lock.isHeldByCurrentThread());
        assertThrows(IllegalStateException.class, lock::tryLock);
        assertThrows(IllegalStateException.class, lock::unlock);
        assertThrows(IllegalStateException.class, () -> client.getLock("other").tryLock());
        long ttl = Long.parseLong(nodes.cli(1, "PTTL", "closed"));
        assertTrue(ttl > 10_000, "the lock is left to expire, pttl " + ttl);
        nodes.cli(1, "DEL", "closed");
    }

    @Test
    void handlesOfUnreachableLocksAreFreed() throws Exception {
        try (Redlock client = Redlock.create(nodes.uris(), Map.of())) {
            for (int i = 0; i < 100; i++) {
                assertTrue(client.getLock("gc-" + i).tryLock(0, 2, TimeUnit.SECONDS));
            }
            Field handles = NativeClient.class.getDeclaredField("handles");
            handles.setAccessible(true);
            Set<?> live = (Set<?>) handles.get(client.nativeClient());
            assertEquals(100, live.size());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (!live.isEmpty() && System.nanoTime() < deadline) {
                System.gc();
                Thread.sleep(50);
            }
            assertTrue(live.isEmpty(), live.size() + " handles left");
            RLock lock = client.getLock("gc-after");
            assertTrue(lock.tryLock());
            lock.unlock();
        }
    }

    private static <T extends RedlockException> T assertCode(int code, Class<T> type,
            org.junit.jupiter.api.function.Executable call) {
        T e = assertThrows(type, call);
        assertEquals(code, e.getCode());
        assertFalse(e.getMessage().isEmpty());
        return e;
    }
}
