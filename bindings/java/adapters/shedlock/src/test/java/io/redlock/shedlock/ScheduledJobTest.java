package io.redlock.shedlock;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.redlock.Redlock;
import io.redlock.testing.TwoInstances;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * One scheduled job, in two Spring application contexts that stand for two instances of a
 * service, each with its own redlock client: ShedLock's {@code @SchedulerLock} on Spring's
 * {@code @Scheduled}, every second on both, runs it once a second across both.
 */
class ScheduledJobTest extends TwoInstances {
    /** Every lock attempt the two instances made, and the job's runs. */
    static final List<Attempt> ATTEMPTS = new CopyOnWriteArrayList<>();
    static final List<String> RUNS = new CopyOnWriteArrayList<>();

    record Attempt(String instance, LockConfiguration configuration, boolean acquired,
            Instant returned) {
    }

    /** Which instance a context is. */
    record Instance(String name) {
    }

    /** A service's configuration, as an application declares it. */
    @Configuration
    @EnableScheduling
    @EnableSchedulerLock(defaultLockAtMostFor = "PT30S")
    static class Service {
        @Bean
        Redlock redlock() {
            return Redlock.create(nodes.uris(), Map.of());
        }

        @Bean
        LockProvider lockProvider(Redlock redlock, Instance instance) {
            return new Recording(instance.name(), new RedlockLockProvider(redlock, "scheduled:"));
        }

        @Bean
        Job job(Instance instance) {
            return new Job(instance.name());
        }
    }

    /** The job: Spring schedules it every second, ShedLock locks it. */
    static class Job {
        private final String instance;

        Job(String instance) {
            this.instance = instance;
        }

        @Scheduled(cron = "* * * * * *")
        @SchedulerLock(name = "report", lockAtLeastFor = "PT0.8S")
        public void report() {
            LockAssert.assertLocked(); // ShedLock's own check: the job runs under its lock
            RUNS.add(instance);
        }
    }

    /** The redlock provider, with each attempt recorded for the test. */
    static final class Recording implements LockProvider {
        private final String instance;
        private final LockProvider provider;

        Recording(String instance, LockProvider provider) {
            this.instance = instance;
            this.provider = provider;
        }

        @Override
        public Optional<SimpleLock> lock(LockConfiguration configuration) {
            Optional<SimpleLock> lock = provider.lock(configuration);
            ATTEMPTS.add(new Attempt(instance, configuration, lock.isPresent(), Instant.now()));
            return lock;
        }
    }

    private static AnnotationConfigApplicationContext start(String instance) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.registerBean(Instance.class, () -> new Instance(instance));
        context.register(Service.class);
        context.refresh();
        return context;
    }

    @Test
    void theJobRunsOncePerPeriodAcrossBothInstances() throws Exception {
        Instant deadline = Instant.now().plusSeconds(30);
        try (AnnotationConfigApplicationContext first = start("A");
                AnnotationConfigApplicationContext second = start("B")) {
            while (acquisitions().size() < 4 || attemptsOf("A") < 3 || attemptsOf("B") < 3) {
                assertTrue(Instant.now().isBefore(deadline), "too few runs: " + ATTEMPTS);
                assertTrue(first.isActive() && second.isActive());
                Thread.sleep(100);
            }
        }
        List<Attempt> acquired = acquisitions();
        // Each run came after the one before had held the lock for lockAtLeastFor (0.8 s) from
        // its start: at most one run per second, across both instances.
        for (int i = 1; i < acquired.size(); i++) {
            Attempt before = acquired.get(i - 1);
            Attempt after = acquired.get(i);
            assertFalse(after.returned().isBefore(before.configuration().getLockAtLeastUntil()),
                    "run " + after + " during the lock of " + before);
        }
        // Both instances tried every second, and the one that came second was refused.
        assertTrue(ATTEMPTS.size() > acquired.size(), "no attempt was refused: " + ATTEMPTS);
        // A run for each lock (but the last, which the contexts' close may have cut short).
        assertTrue(RUNS.size() <= acquired.size() && RUNS.size() >= acquired.size() - 1,
                RUNS + " for " + acquired);
        assertTrue(clientA.getLock("scheduled:report").tryLock(10, 1, TimeUnit.SECONDS),
                "the job's lock was left held");
    }

    private static List<Attempt> acquisitions() {
        List<Attempt> acquired = new ArrayList<>();
        for (Attempt attempt : ATTEMPTS) {
            if (attempt.acquired()) {
                acquired.add(attempt);
            }
        }
        acquired.sort(Comparator.comparing(Attempt::returned));
        return acquired;
    }

    private static long attemptsOf(String instance) {
        return ATTEMPTS.stream().filter(attempt -> attempt.instance().equals(instance)).count();
    }
}
