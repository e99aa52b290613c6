<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Redlock\ClientClosedException;
use Redlock\LockNotHeldException;

/** Plain locks: exclusion, leases, kept locks, waiting, reentry, the lost signal, close. */
final class LockTest extends TestCase
{
    protected function tearDown(): void
    {
        Nodes::closeAll();
    }

    public function testTwoClientsExcludeEachOther(): void
    {
        $name = Nodes::name('exclusion');
        $a = Nodes::client()->getLock($name);
        $b = Nodes::client()->getLock($name);
        $this->assertTrue($a->tryLock(0, 10.0));
        $this->assertTrue($a->isHeld());
        $this->assertMatchesRegularExpression('/^[0-9a-f]{32}$/', $a->getToken());
        $this->assertFalse($b->tryLock());
        $this->assertFalse($b->isHeld());
        $this->assertTrue($b->isLocked(), 'anyone holding it counts');
        $ttl = $b->remainTimeToLive();
        $this->assertGreaterThan(9.0, $ttl);
        $this->assertLessThanOrEqual(10.0, $ttl);
        $a->unlock();
        $this->assertFalse($a->isHeld());
        $this->assertNull($a->getToken());
        $this->assertFalse($b->isLocked());
        $this->assertNull($b->remainTimeToLive());
        $this->assertTrue($b->tryLock(0, 10.0));
        $this->assertFalse($a->tryLock());
        $b->unlock();
    }

    public function testALeaseRunsOutAndTheLockIsLost(): void
    {
        $lock = Nodes::client()->getLock(Nodes::name('lease'));
        $this->assertTrue($lock->tryLock(0, 0.3));
        $this->assertFalse($lock->isLost());
        $this->assertGreaterThan(0.2, $lock->getValidity());
        usleep(450_000);
        $this->assertTrue($lock->isLost());
        $this->assertFalse($lock->isHeld());
        $this->assertFalse($lock->isLocked());
        try {
            $lock->unlock();
            $this->fail('unlock of a lost lock');
        } catch (LockNotHeldException $e) {
            $this->assertSame(REDLOCK_ENOTHELD, $e->getCode());
        }
        $this->assertTrue($lock->isLost(), 'still lost after the unlock');
    }

    public function testAKeptLockOutlivesItsLease(): void
    {
        $name = Nodes::name('kept');
        $lock = Nodes::client(['watchdog_lease_ms' => 600])->getLock($name);
        $lock->lock();   // no lease: kept, renewed every 200 ms by the C library's thread
        usleep(1_500_000);   // PHP sleeps through 2.5 leases
        $this->assertTrue($lock->isHeld());
        $this->assertFalse($lock->isLost());
        $this->assertLessThanOrEqual(0.6, $lock->getValidity());
        $this->assertFalse(Nodes::client()->getLock($name)->tryLock());
        $lock->unlock();
        $this->assertFalse($lock->isLost());
        $this->assertTrue(Nodes::client()->getLock($name)->tryLock(0, 1.0));
    }

    public function testExtendRenewsTheLease(): void
    {
        $lock = Nodes::client()->getLock(Nodes::name('extend'));
        $this->assertTrue($lock->tryLock(0, 0.4));
        $lock->extend(5.0);
        $this->assertGreaterThan(4.0, $lock->getValidity());
        usleep(600_000);
        $this->assertTrue($lock->isHeld());
        $this->assertFalse($lock->isLost());
        $lock->unlock();
        $this->expectException(LockNotHeldException::class);
        $lock->extend(1.0);
    }

    public function testTryLockWithAWaitIsWokenByTheRelease(): void
    {
        $name = Nodes::name('wake');
        // Retries 3 s apart: only the holder's release can make it quick.
        $waiter = Nodes::client(['retry_delay_ms' => 3000, 'retry_jitter_ms' => 0])->getLock($name);
        $holder = Nodes::holder($name, 'plain', 400);
        $started = microtime(true);
        $this->assertFalse($waiter->tryLock(0, 5.0), 'held elsewhere');
        $this->assertTrue($waiter->tryLock(10, 5.0));
        $waited = microtime(true) - $started;
        $this->assertSame('released', Nodes::endHolder($holder));
        $this->assertGreaterThan(0.3, $waited);
        $this->assertLessThan(2.0, $waited, 'woken by the release, not by a retry 3 s later');
        $waiter->unlock();
    }

    public function testTryLockGivesUpWhenTheWaitEnds(): void
    {
        $name = Nodes::name('give-up');
        $holder = Nodes::client()->getLock($name);
        $this->assertTrue($holder->tryLock(0, 10.0));
        $started = microtime(true);
        $this->assertFalse(Nodes::client()->getLock($name)->tryLock(0.5, 5.0));
        $this->assertGreaterThanOrEqual(0.45, microtime(true) - $started);
        $holder->unlock();
    }

    public function testLockWaitsUntilAcquired(): void
    {
        $name = Nodes::name('lock-waits');
        $holder = Nodes::holder($name, 'plain', 500);
        $lock = Nodes::client()->getLock($name);
        $started = microtime(true);
        $lock->lock(5.0);
        $this->assertGreaterThan(0.3, microtime(true) - $started);
        $this->assertTrue($lock->isHeld());
        $this->assertSame('released', Nodes::endHolder($holder));
        $lock->unlock();
    }

    public function testTheSameObjectReentersAndKeepsTheFirstTerms(): void
    {
        $name = Nodes::name('reentry');
        $lock = Nodes::client()->getLock($name);
        $this->assertSame(0, $lock->getHoldCount());
        $this->assertTrue($lock->tryLock(0, 5.0));
        $this->assertTrue($lock->tryLock(0, 0.1));   // counted; the lease stays 5 s
        $this->assertSame(2, $lock->getHoldCount());
        usleep(200_000);
        $this->assertTrue($lock->isHeld());
        $lock->unlock();
        $this->assertSame(1, $lock->getHoldCount());
        $this->assertTrue($lock->isLocked(), 'one hold left');
        $lock->unlock();
        $this->assertSame(0, $lock->getHoldCount());
        $this->assertFalse($lock->isLocked());
        $this->expectException(LockNotHeldException::class);
        $lock->unlock();
    }

    public function testAKeptLockForcedOpenIsLostAndOnLostIsTold(): void
    {
        $name = Nodes::name('lost');
        $lock = Nodes::client(['watchdog_lease_ms' => 300])->getLock($name);
        $told = [];
        $lock->onLost(function ($lost, $error) use (&$told, $lock): void {
            $this->assertSame($lock, $lost);
            $told[] = $error;
        });
        $this->assertTrue($lock->tryLock());   // kept
        $this->assertTrue(Nodes::client()->getLock($name)->forceUnlock());
        usleep(600_000);   // a renewal finds the key gone, on the C library's thread
        $this->assertSame([], $told, 'callbacks run on PHP\'s thread, at its next call');
        $this->assertTrue($lock->isLost());
        $this->assertCount(1, $told);
        $this->assertInstanceOf(LockNotHeldException::class, $told[0]);
        $this->assertSame(REDLOCK_ENOTHELD, $told[0]->getCode());
        $this->assertNotSame('', $told[0]->getMessage());
        $this->assertTrue($lock->isLost());
        $this->assertCount(1, $told, 'told once');
        $late = [];
        $lock->onLost(function ($l, $e) use (&$late): void {
            $late[] = $e;
        });
        $this->assertCount(1, $late, 'a callback given after the loss runs at once');
        $this->expectException(LockNotHeldException::class);
        $lock->unlock();
    }

    public function testForceUnlockOpensAHeldLock(): void
    {
        $name = Nodes::name('force');
        $holder = Nodes::client()->getLock($name);
        $this->assertTrue($holder->tryLock(0, 30.0));
        $other = Nodes::client()->getLock($name);
        $this->assertTrue($other->forceUnlock());
        $this->assertFalse($other->forceUnlock(), 'nothing left to delete');
        $this->assertTrue($other->tryLock(0, 5.0));
        $other->unlock();
    }

    public function testADestroyedLockIsReleased(): void
    {
        $name = Nodes::name('destroyed');
        $client = Nodes::client();
        $lock = $client->getLock($name);
        $this->assertTrue($lock->tryLock(0, 30.0));
        unset($lock);
        $this->assertFalse($client->getLock($name)->isLocked());
    }

    public function testCloseReleasesAndRefusesLaterCalls(): void
    {
        $name = Nodes::name('close');
        $client = new Redlock\Client(Nodes::uris());
        $lock = $client->getLock($name);
        $this->assertTrue($lock->tryLock(0, 30.0));
        $client->close();
        $client->close();   // once
        $this->assertFalse(Nodes::client()->getLock($name)->isLocked());
        foreach ([fn () => $client->getLock('x'), fn () => $lock->tryLock(), fn () => $lock->unlock(),
                  fn () => $client->health()] as $call) {
            try {
                $call();
                $this->fail('a call on a closed client');
            } catch (ClientClosedException $e) {
                $this->assertStringContainsString('the Redlock client is closed', $e->getMessage());
            }
        }
    }
}
