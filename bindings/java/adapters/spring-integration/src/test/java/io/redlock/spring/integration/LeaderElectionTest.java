package io.redlock.spring.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.Redlock;
import io.redlock.testing.TwoInstances;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.Test;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;

/**
 * Spring Integration's leader election on the registry: two instances, each with its own
 * client and registry, run a LockRegistryLeaderInitiator for one role; one leads at a time,
 * and the other takes over when the leader stops.
 */
class LeaderElectionTest extends TwoInstances {
    @Override
    protected Map<String, String> options() {
        return Map.of("watchdog_lease_ms", "1500");
    }

    /** The candidates leading now, and the most that ever led at once. */
    private final AtomicInteger leading = new AtomicInteger();
    private final AtomicInteger mostLeading = new AtomicInteger();

    private final class Candidate extends DefaultCandidate {
        Candidate(String id) {
            super(id, "cleanup");
        }

        @Override
        public void onGranted(Context context) {
            mostLeading.accumulateAndGet(leading.incrementAndGet(), Math::max);
        }

        @Override
        public void onRevoked(Context context) {
            leading.decrementAndGet();
        }
    }

    private LockRegistryLeaderInitiator initiator(Redlock client, String id) {
        LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(
                new RedlockLockRegistry(client, "leader:"), new Candidate(id));
        initiator.setHeartBeatMillis(100);
        initiator.setBusyWaitMillis(50);
        return initiator;
    }

    private static void waitFor(BooleanSupplier condition, String what) throws InterruptedException {
        Instant deadline = Instant.now().plusSeconds(20);
        while (!condition.getAsBoolean()) {
            assertTrue(Instant.now().isBefore(deadline), what);
            Thread.sleep(20);
        }
    }

    @Test
    void oneInstanceLeadsAndTheOtherTakesOver() throws Exception {
        LockRegistryLeaderInitiator a = initiator(clientA, "a");
        LockRegistryLeaderInitiator b = initiator(clientB, "b");
        a.start();
        b.start();
        try {
            waitFor(() -> a.getContext().isLeader() || b.getContext().isLeader(),
                    "nobody was elected");
            // Several heartbeats and lock renewals, with one leader throughout.
            Thread.sleep(1500);
            assertEquals(1, mostLeading.get(), "two leaders at once");
            assertTrue(a.getContext().isLeader() != b.getContext().isLeader());
            LockRegistryLeaderInitiator leader = a.getContext().isLeader() ? a : b;
            LockRegistryLeaderInitiator follower = leader == a ? b : a;
            leader.stop();
            waitFor(() -> follower.getContext().isLeader(), "the other did not take over");
            assertFalse(leader.getContext().isLeader());
        } finally {
            a.stop();
            b.stop();
        }
    }
}
