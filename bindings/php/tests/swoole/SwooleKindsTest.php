<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Redlock\InvalidArgumentException;
use Redlock\Permit;
use Swoole\Coroutine;
use Swoole\Coroutine\WaitGroup;

/**
 * Every kind of lock inside Swoole coroutines (multi, fair, read-write,
 * semaphore), and the issue's case: 50 coroutines contending for one lock
 * while a ticker coroutine shows the worker never stalls.
 */
final class SwooleKindsTest extends TestCase
{
    protected function tearDown(): void
    {
        Nodes::closeAll();
    }

    public function testAMultiLockTakesAllOrNothing(): void
    {
        [$a, $b, $c] = [Nodes::name('swoole-multi-a'), Nodes::name('swoole-multi-b'), Nodes::name('swoole-multi-c')];
        Coroutines::run(function () use ($a, $b, $c): void {
            $single = Nodes::client()->getLock($b);
            $this->assertTrue($single->tryLock(0, 10.0));
            $multi = Nodes::client()->getMultiLock($a, $b, $c);
            $this->assertFalse($multi->tryLock(), 'one of its resources is held');
            $this->assertFalse(Nodes::client()->getLock($a)->isLocked(), 'and it took none');
            $single->unlock();
            $this->assertTrue($multi->tryLock(0, 10.0));
            $this->assertSame([$a, $b, $c], $multi->getNames());
            $this->assertFalse(Nodes::client()->getLock($c)->tryLock());
            $this->assertTrue($multi->isLocked());
            $multi->unlock();
            $this->assertFalse($multi->isLocked());
        });
    }

    public function testAFairLockServesItsWaitersInTheirOrder(): void
    {
        $name = Nodes::name('swoole-fair');
        Coroutines::run(function () use ($name): void {
            $holder = Nodes::client()->getFairLock($name);
            $this->assertTrue($holder->tryLock(0, 30.0));
            $this->assertFalse(Nodes::client()->getLock($name)->tryLock(), 'it is the plain lock of its name');
            $order = [];
            $group = new WaitGroup();
            foreach (['first', 'second', 'third'] as $i => $who) {
                $group->add();
                Coroutine::create(function () use ($name, $who, &$order, $group): void {
                    $lock = Nodes::client()->getFairLock($name);
                    if ($lock->tryLock(20.0, 10.0)) {
                        $order[] = $who;
                        Coroutine::sleep(0.05);
                        $lock->unlock();
                    }
                    $group->done();
                });
                // Each is in the queue (its first attempt done) before the next comes.
                Coroutine::sleep(0.2);
            }
            $holder->unlock();
            $group->wait();
            $this->assertSame(['first', 'second', 'third'], $order);
        });
    }

    public function testReadersShareAndTheWriterIsAlone(): void
    {
        $name = Nodes::name('swoole-rw');
        Coroutines::run(function () use ($name): void {
            $mine = Nodes::client()->getReadWriteLock($name);
            $theirs = Nodes::client()->getReadWriteLock($name);
            $this->assertTrue($mine->readLock()->tryLock(0, 10.0));
            $this->assertTrue($theirs->readLock()->tryLock(0, 10.0), 'readers share');
            $writer = Nodes::client()->getReadWriteLock($name)->writeLock();
            $this->assertFalse($writer->tryLock(), 'no writer beside readers');
            $mine->readLock()->unlock();
            $theirs->readLock()->unlock();
            // A writer that waits is let in by the last reader's release.
            $this->assertTrue($mine->readLock()->tryLock(0, 10.0));
            Coroutine::create(function () use ($mine): void {
                Coroutine::sleep(0.2);
                $mine->readLock()->unlock();
            });
            $this->assertTrue($writer->tryLock(5.0, 10.0));
            $this->assertFalse($theirs->readLock()->tryLock(), 'no reader beside the writer');
            $writer->unlock();
            // A downgrade: a writer takes the read lock of its own pair.
            $this->assertTrue($theirs->writeLock()->tryLock(0, 10.0));
            $this->assertTrue($theirs->readLock()->tryLock(0, 10.0), 'a downgrade');
            $theirs->writeLock()->unlock();
            try {
                $theirs->writeLock()->tryLock();
                $this->fail('an upgrade was allowed');
            } catch (InvalidArgumentException $e) {
                $this->assertSame(REDLOCK_EINVAL, $e->getCode());
            }
            $theirs->readLock()->unlock();
        });
    }

    public function testASemaphoreLetsItsPermitsInAndWakesAWaiter(): void
    {
        $name = Nodes::name('swoole-semaphore');
        Coroutines::run(function () use ($name): void {
            $semaphore = Nodes::client(['watchdog_lease_ms' => 600])->getSemaphore($name, 2);
            $this->assertSame(2, $semaphore->availablePermits());
            $first = $semaphore->tryAcquire(0, 10.0);
            $this->assertInstanceOf(Permit::class, $first);
            $this->assertMatchesRegularExpression('/^[0-9a-f]{32}$/', $first->getId());
            $second = $semaphore->tryAcquire();   // kept by the keeper's coroutine
            $this->assertNotNull($second);
            $this->assertNotSame($first->getId(), $second->getId());
            $this->assertSame(0, $semaphore->availablePermits());
            $this->assertNull($semaphore->tryAcquire(0, 10.0));
            Coroutine::sleep(1.0);   // past the kept permit's lease
            $this->assertTrue($second->isHeld());
            $this->assertSame(0, $semaphore->availablePermits());
            // A waiter, woken by a release rather than its timer (a minute).
            $waiting = Nodes::client(['retry_delay_ms' => 60000, 'retry_jitter_ms' => 0])->getSemaphore($name, 2);
            Coroutine::create(static function () use ($first): void {
                Coroutine::sleep(0.2);
                $first->release();
            });
            $third = $waiting->tryAcquire(10.0, 10.0);
            $this->assertNotNull($third);
            $this->assertFalse($first->isHeld());
            $third->release();
            $second->release();
            $this->assertFalse($second->isLost());
            $this->assertSame(2, $semaphore->availablePermits());
        });
    }

    /**
     * The issue's case: 50 coroutines of one process contend for one lock
     * (each holds it across a coroutine sleep, and checks that nobody else
     * held it meanwhile) while a ticker coroutine, ticking every 5 ms,
     * records its longest gap: a lock call that blocked the worker would
     * show there.
     */
    public function testFiftyCoroutinesContendWhileTheWorkerKeepsTicking(): void
    {
        $name = Nodes::name('swoole-fifty');
        Coroutines::run(function () use ($name): void {
            $client = Nodes::client();
            // One lock first: the first connection to each node learns how
            // the library is called there (else every connection made before
            // then loads its scripts: CPU of this process and of the five
            // local nodes, on a shared machine, not a wait).
            $first = $client->getLock($name);
            $this->assertTrue($first->tryLock(0, 5.0));
            $first->unlock();

            $ticking = true;
            $longestMs = 0.0;
            $ticks = 0;
            $ticker = new WaitGroup(1);
            Coroutine::create(static function () use (&$ticking, &$longestMs, &$ticks, $ticker): void {
                $last = Coroutines::nowMs();
                while ($ticking) {
                    Coroutine::sleep(0.005);
                    $now = Coroutines::nowMs();
                    $longestMs = max($longestMs, $now - $last);
                    $last = $now;
                    $ticks++;
                }
                $ticker->done();
            });

            $inside = 0;      // holders inside the critical section now
            $overlaps = 0;    // times a holder found another inside
            $taken = 0;
            $group = new WaitGroup();
            for ($i = 0; $i < 50; $i++) {
                $group->add();
                Coroutine::create(static function () use ($client, $name, &$inside, &$overlaps, &$taken, $group): void {
                    $lock = $client->getLock($name);
                    if ($lock->tryLock(60.0, 10.0)) {
                        if ($inside !== 0) {
                            $overlaps++;
                        }
                        $inside++;
                        Coroutine::sleep(0.002);
                        if ($inside !== 1) {
                            $overlaps++;
                        }
                        $inside--;
                        $taken++;
                        $lock->unlock();
                    }
                    $group->done();
                });
            }
            $group->wait();
            $ticking = false;
            $ticker->wait();
            $this->assertSame(50, $taken, 'every coroutine had its turn');
            $this->assertSame(0, $overlaps, 'never two holders at once');
            $this->assertGreaterThan(10, $ticks);
            $this->assertLessThan(50.0, $longestMs, 'the ticker never waited 50 ms');
        });
    }
}
