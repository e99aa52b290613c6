package io.redlock;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Read-write locks (getReadWriteLock): readers together, the writer alone and waiting for the
 * last reader, a downgrade, no upgrade, the async methods; and withLock.
 */
class ReadWriteLockTest extends TwoClients {
    @Override
    String keyPrefix() {
        return "rw:";
    }

    @Test
    void readersShareItAndTheWriterWaitsForThemAll() throws Exception {
        RReadWriteLock mine = client.getReadWriteLock(name);
        RReadWriteLock theirs = other.getReadWriteLock(name);
        assertSame(mine.readLock(), mine.readLock());
        assertTrue(mine.readLock().tryLock());   // kept
        assertTrue(theirs.readLock().tryLock(0, 10, TimeUnit.SECONDS));
        RReadWriteLock third = other.getReadWriteLock(name);
        assertFalse(third.writeLock().tryLock());
        assertFalse(other.getLock(name).tryLock());   // a plain lock of the name too
        CompletableFuture<Boolean> writer = third.writeLock().tryLockAsync(10, TimeUnit.SECONDS);
        Thread.sleep(200);
        mine.readLock().unlock();
        Thread.sleep(200);
        assertFalse(writer.isDone());   // the other reader still holds it
        theirs.readLock().unlock();
        assertTrue(writer.get(10, TimeUnit.SECONDS));
        assertFalse(mine.readLock().tryLock());
        third.writeLock().unlock();
    }

    @Test
    void aWriterDowngradesAndAReaderIsNotUpgraded() throws Exception {
        RReadWriteLock rw = client.getReadWriteLock(name);
        assertTrue(rw.writeLock().tryLock(0, 10, TimeUnit.SECONDS));
        assertTrue(rw.readLock().tryLock(0, 10, TimeUnit.SECONDS));   // beside its write lock
        RReadWriteLock theirs = other.getReadWriteLock(name);
        assertFalse(theirs.readLock().tryLock());   // the writer still holds it
        rw.writeLock().unlock();
        assertTrue(theirs.readLock().tryLock(0, 10, TimeUnit.SECONDS));   // now readers join
        InvalidArgumentException upgrade = assertThrows(InvalidArgumentException.class,
                () -> rw.writeLock().tryLock());
        assertTrue(upgrade.getMessage().contains("upgraded"), upgrade.getMessage());
        rw.readLock().unlock();
        theirs.readLock().unlock();
        assertTrue(rw.writeLock().tryLock());
        rw.writeLock().unlock();
    }

    @Test
    void withLockRunsTheActionUnderTheLock() throws Exception {
        int result = client.withLock(name, 1, 0, TimeUnit.SECONDS, () -> {
            assertFalse(other.getLock(name).tryLock());
            return 42;
        });
        assertEquals(42, result);
        RLock held = other.getLock(name);
        assertTrue(held.tryLock(0, 10, TimeUnit.SECONDS));
        assertThrows(LockHeldException.class,
                () -> client.withLock(name, 0, 1, TimeUnit.SECONDS, () -> 1));
        held.unlock();
        IllegalStateException thrown = assertThrows(IllegalStateException.class,
                () -> client.withLock(name, 0, 0, TimeUnit.SECONDS, () -> {
                    throw new IllegalStateException("inside");
                }));
        assertEquals("inside", thrown.getMessage());
        assertTrue(held.tryLock(0, 1, TimeUnit.SECONDS));   // released after the failure
        held.unlock();
    }
}
