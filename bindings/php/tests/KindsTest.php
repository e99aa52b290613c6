<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Redlock\InvalidArgumentException;
use Redlock\Permit;

/** Multi-locks, fair locks, read-write locks, semaphores, fencing tokens. */
final class KindsTest extends TestCase
{
    protected function tearDown(): void
    {
        Nodes::closeAll();
    }

    public function testAMultiLockTakesAllOrNothing(): void
    {
        [$a, $b, $c] = [Nodes::name('m1'), Nodes::name('m2'), Nodes::name('m3')];
        $multi = Nodes::client()->getMultiLock($a, $b);
        $this->assertSame([$a, $b], $multi->getNames());
        $other = Nodes::client();
        $this->assertTrue($multi->tryLock(0, 10.0));
        $this->assertFalse($other->getLock($b)->tryLock());
        $this->assertFalse($other->getMultiLock($b, $c)->tryLock());
        $this->assertTrue($other->getLock($c)->tryLock(0, 1.0), 'not part of it');
        $multi->unlock();
        $single = $other->getLock($a);
        $this->assertTrue($single->tryLock(0, 8.0));
        $this->assertFalse($multi->tryLock(), 'one of its resources is held');
        $this->assertTrue($multi->isLocked());
        $this->assertGreaterThan(7.0, $multi->remainTimeToLive());
        $this->assertFalse($other->getLock($b)->isLocked(), 'nothing of it was taken');
        $single->unlock();
    }

    public function testAMultiLockRefusesANameTwice(): void
    {
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage("name 3: 'b' is listed twice (as name 2)");
        Nodes::client()->getMultiLock('a', 'b', 'b');
    }

    public function testAFairLockIsThePlainLockOfItsName(): void
    {
        $name = Nodes::name('fair');
        $fair = Nodes::client(['fencing' => true])->getFairLock($name);
        $this->assertTrue($fair->tryLock(0, 10.0));
        $this->assertNull($fair->getFence(), 'a fair lock has no fence');
        $other = Nodes::client();
        $this->assertFalse($other->getLock($name)->tryLock());
        $this->assertFalse($other->getFairLock($name)->tryLock());
        $fair->unlock();
        $plain = $other->getLock($name);
        $this->assertTrue($plain->tryLock(0, 10.0));
        $this->assertFalse($fair->tryLock());
        $plain->unlock();
    }

    public function testAFairLockServesItsWaiterWhenReleased(): void
    {
        $name = Nodes::name('fair-wait');
        $holder = Nodes::holder($name, 'fair', 400);
        $waiter = Nodes::client()->getFairLock($name);
        $this->assertTrue($waiter->tryLock(5, 5.0));
        $this->assertSame('released', Nodes::endHolder($holder));
        $waiter->unlock();
    }

    public function testReadersShareAndTheWriterIsAlone(): void
    {
        $name = Nodes::name('rw');
        $mine = Nodes::client()->getReadWriteLock($name);
        $this->assertSame($mine->readLock(), $mine->readLock());
        $theirs = Nodes::client()->getReadWriteLock($name);
        $writer = Nodes::client()->getReadWriteLock($name)->writeLock();
        $this->assertTrue($mine->readLock()->tryLock(0, 10.0));
        $this->assertTrue($theirs->readLock()->tryLock(0, 10.0), 'readers together');
        $this->assertFalse($writer->tryLock(), 'no writer beside readers');
        $mine->readLock()->unlock();
        $this->assertFalse($writer->tryLock(), 'nor beside one reader');
        $theirs->readLock()->unlock();
        $this->assertTrue($writer->tryLock(0, 10.0));
        $writer->unlock();
        $this->assertTrue($theirs->writeLock()->tryLock(0, 10.0));
        $this->assertFalse($mine->readLock()->tryLock(), 'no reader beside the writer');
        $this->assertFalse(Nodes::client()->getLock($name)->tryLock(), 'the write lock is the plain lock');
        $theirs->writeLock()->unlock();
    }

    public function testTheWriterDowngradesButNoReaderUpgrades(): void
    {
        $name = Nodes::name('downgrade');
        $rw = Nodes::client()->getReadWriteLock($name);
        $this->assertTrue($rw->writeLock()->tryLock(0, 10.0));
        $this->assertTrue($rw->readLock()->tryLock(0, 10.0), 'a downgrade');
        $rw->writeLock()->unlock();
        $other = Nodes::client()->getReadWriteLock($name);
        $this->assertTrue($other->readLock()->tryLock(0, 5.0));
        $this->assertFalse(Nodes::client()->getReadWriteLock($name)->writeLock()->tryLock(),
            'still read by the first');
        try {
            $rw->writeLock()->tryLock();
            $this->fail('an upgrade was allowed');
        } catch (InvalidArgumentException $e) {
            $this->assertSame(REDLOCK_EINVAL, $e->getCode());
        }
        $other->readLock()->unlock();
        $rw->readLock()->unlock();
    }

    public function testASemaphoreLetsItsPermitsInAndNoMore(): void
    {
        $name = Nodes::name('semaphore');
        $semaphore = Nodes::client()->getSemaphore($name, 2);
        $this->assertSame(2, $semaphore->getPermits());
        $this->assertSame(2, $semaphore->availablePermits());
        $first = $semaphore->tryAcquire(0, 10.0);
        $this->assertInstanceOf(Permit::class, $first);
        $this->assertMatchesRegularExpression('/^[0-9a-f]{32}$/', $first->getId());
        $second = Nodes::client()->getSemaphore($name, 2)->tryAcquire();   // kept
        $this->assertNotNull($second);
        $this->assertNotSame($first->getId(), $second->getId());
        $this->assertSame(0, $semaphore->availablePermits());
        $this->assertNull($semaphore->tryAcquire(0, 10.0));
        $this->assertTrue($first->isHeld());
        $first->release();
        $this->assertFalse($first->isHeld());
        $this->assertSame(1, $semaphore->availablePermits());
        $third = $semaphore->tryAcquire(0, 10.0);
        $this->assertNotNull($third);
        $third->release();
        $second->release();
        $this->assertSame(2, $semaphore->availablePermits());
    }

    public function testAWaitingPermitIsWokenByARelease(): void
    {
        $name = Nodes::name('semaphore-wait');
        $holder = Nodes::holder($name, 'permits=1', 400);
        $semaphore = Nodes::client(['retry_delay_ms' => 3000, 'retry_jitter_ms' => 0])->getSemaphore($name, 1);
        $started = microtime(true);
        $permit = $semaphore->tryAcquire(5, 5.0);
        $this->assertNotNull($permit);
        $this->assertLessThan(2.0, microtime(true) - $started);
        $this->assertSame('released', Nodes::endHolder($holder));
        $permit->release();
    }

    public function testEveryClientMustGiveTheSamePermits(): void
    {
        $name = Nodes::name('semaphore-permits');
        $permit = Nodes::client()->getSemaphore($name, 2)->tryAcquire(0, 10.0);
        $this->assertNotNull($permit);
        try {
            Nodes::client()->getSemaphore($name, 3)->tryAcquire();
            $this->fail('another number of permits was accepted');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('2', $e->getMessage());
            $this->assertStringContainsString('3', $e->getMessage());
        }
        $permit->release();
    }

    public function testAPermitIsNotALock(): void
    {
        $permit = Nodes::client()->getSemaphore(Nodes::name('permit'), 1)->tryAcquire(0, 5.0);
        $this->assertNotNull($permit);
        try {
            $permit->tryLock();
            $this->fail('a permit took tryLock()');
        } catch (BadMethodCallException $e) {
            $this->assertStringContainsString('tryAcquire', $e->getMessage());
        }
        $permit->release();
    }

    public function testFencesGrowWithEveryHolder(): void
    {
        $name = Nodes::name('fence');
        $client = Nodes::client(['fencing' => true]);
        $lock = $client->getLock($name);
        $this->assertNull($lock->getFence(), 'not held');
        $this->assertTrue($lock->tryLock(0, 5.0));
        $first = $lock->getFence();
        $this->assertIsInt($first);
        $this->assertGreaterThanOrEqual(1, $first);
        $lock->unlock();
        $other = Nodes::client(['fencing' => true])->getLock($name);
        $this->assertTrue($other->tryLock(0, 5.0));
        $this->assertGreaterThan($first, $other->getFence());
        $other->unlock();
        $plain = Nodes::client()->getLock($name);
        $this->assertTrue($plain->tryLock(0, 5.0));
        $this->assertNull($plain->getFence(), 'no fencing: no fence');
        $this->assertSame([], $plain->getFences());
        $plain->unlock();

        [$a, $b] = [Nodes::name('fa'), Nodes::name('fb')];
        $multi = $client->getMultiLock($a, $b);
        $this->assertTrue($multi->tryLock(0, 5.0));
        $fences = $multi->getFences();
        $this->assertSame([$a, $b], array_keys($fences));
        $this->assertSame($fences[$b], $multi->getFence($b));
        $multi->unlock();
    }
}
