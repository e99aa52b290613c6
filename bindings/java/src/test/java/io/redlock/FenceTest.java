package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Fencing tokens (client option fencing): getFence() grows with every holder of a resource,
 * whichever client took it; a multi-lock has one per resource; null without fencing.
 */
class FenceTest extends TwoClients {
    @Override
    String keyPrefix() {
        return "fence:";
    }

    @Override
    Map<String, String> clientOptions() {
        return Map.of("fencing", "1");
    }

    @Test
    void everyHolderGetsALargerFence() throws Exception {
        try (Redlock second = Redlock.create(nodes.uris(),
                Map.of("key_prefix", keyPrefix(), "fencing", "1"))) {
            long last = 0;
            for (Redlock c : new Redlock[] {client, second, client}) {
                RLock lock = c.getLock(name);
                assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
                long fence = lock.getFence();
                assertTrue(fence > last, "fence " + fence + " after " + last);
                assertEquals(fence, lock.getFence(name));
                last = fence;
                lock.unlock();
                assertNull(lock.getFence(), "none once released");
            }
        }
    }

    @Test
    void aMultiLockHasAFencePerResource() throws Exception {
        RLock single = client.getLock("b-" + name);
        assertTrue(single.tryLock(0, 10, TimeUnit.SECONDS));
        single.unlock();
        RLock both = client.getMultiLock("a-" + name, "b-" + name);
        assertTrue(both.tryLock(0, 10, TimeUnit.SECONDS));
        assertEquals(1L, both.getFence("a-" + name));
        assertEquals(2L, both.getFence("b-" + name));
        assertEquals(1L, both.getFence());
        assertThrows(IllegalArgumentException.class, () -> both.getFence("nope"));
        both.unlock();
    }

    @Test
    void withoutFencingThereIsNoFence() throws Exception {
        RLock lock = other.getLock(name);
        assertTrue(lock.tryLock(0, 10, TimeUnit.SECONDS));
        assertNull(lock.getFence());
        lock.unlock();
    }
}
