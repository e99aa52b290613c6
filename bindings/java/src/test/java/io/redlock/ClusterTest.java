package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.testing.RedisNodes;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A Redis Cluster of three masters (scripts/redis-topo.sh) as the one node. */
class ClusterTest {
    private static final Path SCRIPT = Paths.get(System.getProperty("redlock.source.dir", "../.."),
            "scripts", "redis-topo.sh").toAbsolutePath().normalize();
    private static Path dir;
    private static String uri;

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("redlock-java-cluster-");
        uri = RedisNodes.run(SCRIPT.toString(), "cluster", dir.toString(), "3", "0").trim();
    }

    @AfterAll
    static void stop() throws Exception {
        RedisNodes.run(SCRIPT.toString(), "stop", dir.toString());
    }

    @Test
    void locksGoToEachSlotsMasterSyncAndAsync() throws Exception {
        try (Redlock one = Redlock.create(List.of(uri), Map.of());
                Redlock two = Redlock.create(List.of(uri), Map.of())) {
            List<RLock> locks = new ArrayList<>();
            for (int i = 0; i < 30; i++) {
                RLock lock = one.getLock("java-cluster-" + i);
                assertTrue(i % 2 == 0 ? lock.tryLock(0, 10, TimeUnit.SECONDS)
                                      : lock.tryLockAsync(0, 10, TimeUnit.SECONDS).get());
                assertFalse(two.getLock("java-cluster-" + i).tryLock());
                locks.add(lock);
            }
            NodeHealth node = one.health().get(0);
            assertEquals("cluster", node.kind());
            assertEquals(3, node.server().orElseThrow().split("\\+").length);
            for (RLock lock : locks) {
                lock.unlock();
            }
            assertTrue(two.getLock("java-cluster-0").tryLock());
            two.getLock("java-cluster-0").unlock();
        }
    }

    @Test
    void aMultiLockAcrossSlotsIsTakenSlotBySlot() throws Exception {
        try (Redlock client = Redlock.create(List.of(uri), Map.of());
             Redlock two = Redlock.create(List.of(uri), Map.of())) {
            RLock spread = client.getMultiLock("java-a", "java-b", "java-c");
            assertTrue(spread.tryLock());   // kept: renewed part by part
            assertFalse(two.getLock("java-b").tryLock());
            spread.unlock();
            RLock alone = two.getLock("java-b");
            assertTrue(alone.tryLock());
            alone.unlock();
        }
        try (Redlock fenced = Redlock.create(List.of(uri), Map.of("fencing", "1"))) {
            RLock spread = fenced.getMultiLock("java-a", "java-b");
            InvalidArgumentException e = assertThrows(InvalidArgumentException.class, spread::tryLock);
            assertTrue(e.getMessage().contains("hash tag"), e.getMessage());
            RLock tagged = fenced.getMultiLock("{java}:a", "{java}:b");
            assertTrue(tagged.tryLock());
            tagged.unlock();
        }
    }
}
