package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.internal.RedlockNativeConstants;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collections;
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
    void closeReleasesWhatIsHeldAndRefusesEveryCall() throws Exception {
        Redlock client = Redlock.create(nodes.uris(), Map.of());
        RLock lock = client.getLock("closed");
        assertTrue(lock.tryLock(0, 20, TimeUnit.SECONDS));
        RLock kept = client.getLock("closed-kept");
        kept.lock();
        client.close();
        client.close();

        assertEquals("-2", nodes.cli(1, "PTTL", "closed"), "released by close");
        assertEquals("-2", nodes.cli(1, "PTTL", "closed-kept"), "released by close");
        assertFalse(lock.isHeldByCurrentThread());
        assertThrows(ClientClosedException.class, lock::tryLock);
        assertThrows(ClientClosedException.class, lock::unlock);
        assertThrows(ClientClosedException.class, kept::unlock);
        assertThrows(ClientClosedException.class, () -> lock.extend(1, TimeUnit.SECONDS));
        assertThrows(ClientClosedException.class, lock::isLocked);
        assertThrows(ClientClosedException.class, () -> client.getLock("other"));
        assertThrows(ClientClosedException.class, () -> client.getReadWriteLock("other"));
        assertThrows(ClientClosedException.class, client::ping);
        assertThrows(IllegalStateException.class, client::health, "an IllegalStateException");
    }

    @Test
    void closeWhileOtherThreadsCall() throws Exception {
        for (int round = 0; round < 5; round++) {
            Redlock client = Redlock.create(nodes.uris(), Map.of());
            RLock held = client.getLock("race-held");
            assertTrue(held.tryLock(0, 30, TimeUnit.SECONDS));
            List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                String name = "race-" + (i % 2);
                threads.add(new Thread(() -> {
                    try {
                        while (true) {
                            RLock lock = client.getLock(name);
                            if (lock.tryLock(200, 1000, TimeUnit.MILLISECONDS)) {
                                lock.remainingValidity(TimeUnit.MILLISECONDS);
                                lock.unlock();
                            }
                            lock.isLocked();
                        }
                    } catch (ClientClosedException closed) {
                        // the end
                    } catch (Throwable t) {
                        failures.add(t);
                    }
                }));
            }
            threads.add(new Thread(() -> {
                try {
                    client.getLock("race-held").lock(); // a wait without end
                    failures.add(new AssertionError("acquired a held lock"));
                } catch (ClientClosedException closed) {
                    // the end
                } catch (Throwable t) {
                    failures.add(t);
                }
            }));
            threads.forEach(Thread::start);
            Thread.sleep(100);
            long started = System.nanoTime();
            client.close();
            long tookMs = (System.nanoTime() - started) / 1_000_000;
            assertTrue(tookMs < 2000, "close took " + tookMs + " ms");
            for (Thread thread : threads) {
                thread.join(5000);
                assertFalse(thread.isAlive());
            }
            assertEquals(List.of(), failures);
            assertEquals("-2", nodes.cli(1, "PTTL", "race-held"), "released by close");
        }
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
