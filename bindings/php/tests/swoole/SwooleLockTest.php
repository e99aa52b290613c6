<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Redlock\ClientClosedException;
use Redlock\LockNotHeldException;
use Redlock\NoQuorumException;
use Redlock\RedlockException;
use Swoole\Coroutine;

/**
 * Plain locks inside Swoole coroutines: the same classes drive the engine
 * over Swoole's coroutine sockets. Exclusion with the blocking driver and
 * other processes, waits woken by releases, kept locks renewed by the
 * keeper's coroutine and their loss told from it.
 */
final class SwooleLockTest extends TestCase
{
    protected function tearDown(): void
    {
        Nodes::closeAll();
    }

    public function testACoroutineExcludesTheBlockingClientAndTheReverse(): void
    {
        $name = Nodes::name('swoole-exclusion');
        $blocking = Nodes::client()->getLock($name);
        $this->assertTrue($blocking->tryLock(0, 10.0), 'outside a coroutine: the blocking calls');
        Coroutines::run(function () use ($name): void {
            $lock = Nodes::client()->getLock($name);
            $this->assertFalse($lock->tryLock());
            $this->assertTrue($lock->isLocked());
            $ttl = $lock->remainTimeToLive();
            $this->assertGreaterThan(0.0, $ttl);
            $this->assertLessThanOrEqual(10.0, $ttl);
        });
        $blocking->unlock();

        // Taken in a coroutine, kept through the end of Swoole's scheduler,
        // then released by the blocking calls: the handle is the library's.
        $client = Nodes::client();
        $lock = $client->getLock($name);
        Coroutines::run(function () use ($lock): void {
            $this->assertTrue($lock->tryLock(0, 10.0));
        });
        $this->assertTrue($lock->isHeld());
        $this->assertFalse(Nodes::client()->getLock($name)->tryLock(), 'a blocking client is refused');
        $lock->unlock();
        $this->assertFalse($lock->isLost());
        $this->assertTrue(Nodes::client()->getLock($name)->tryLock(0, 1.0));
    }

    public function testACoroutineExcludesOtherProcesses(): void
    {
        $tool = getenv('REDLOCK_TOOL');
        $name = Nodes::name('swoole-processes');
        $holder = Nodes::holder($name, 'plain', -1);   // a PHP process of the blocking binding
        Coroutines::run(function () use ($name): void {
            $this->assertFalse(Nodes::client()->getLock($name)->tryLock());
        });
        $this->assertSame('released', Nodes::endHolder($holder));

        Coroutines::run(function () use ($name, $tool): void {
            $lock = Nodes::client()->getLock($name);
            $this->assertTrue($lock->tryLock(0, 10.0));
            $this->assertSame('refused', Nodes::runHolder($name, 'plain'));
            if ($tool) {
                // The command-line tool (C), where the build made it.
                $this->assertSame(75, self::tool($tool, $name), 'the tool is refused (exit 75)');
            }
            $lock->unlock();
            if ($tool) {
                $this->assertSame(0, self::tool($tool, $name), 'then it takes the lock');
            }
        });
    }

    public function testAWaitIsWokenByTheRelease(): void
    {
        $name = Nodes::name('swoole-wake');
        Coroutines::run(function () use ($name): void {
            // Without a wake-up the next attempt would come after a minute.
            $client = Nodes::client(['retry_delay_ms' => 60000, 'retry_jitter_ms' => 0]);
            $holder = $client->getLock($name);
            $this->assertTrue($holder->tryLock(0, 30.0));
            $released = false;
            Coroutine::create(function () use ($holder, &$released): void {
                Coroutine::sleep(0.3);
                $released = true;
                $holder->unlock();
            });
            $waiter = Nodes::client(['retry_delay_ms' => 60000, 'retry_jitter_ms' => 0])->getLock($name);
            $this->assertTrue($waiter->tryLock(10.0, 10.0), 'woken by the release, not by its timer');
            $this->assertTrue($released);
            $waiter->unlock();
        });
    }

    public function testAWaitForAnotherProcessIsWokenByItsRelease(): void
    {
        $name = Nodes::name('swoole-wake-process');
        $holder = Nodes::holder($name, 'plain', 300);
        Coroutines::run(function () use ($name): void {
            $lock = Nodes::client(['retry_delay_ms' => 60000, 'retry_jitter_ms' => 0])->getLock($name);
            $this->assertTrue($lock->tryLock(10.0, 10.0));
            $lock->unlock();
        });
        $this->assertSame('released', Nodes::endHolder($holder));
    }

    public function testTryLockGivesUpWhenTheWaitEnds(): void
    {
        $name = Nodes::name('swoole-give-up');
        Coroutines::run(function () use ($name): void {
            $holder = Nodes::client()->getLock($name);
            $this->assertTrue($holder->tryLock(0, 10.0));
            $this->assertFalse(Nodes::client()->getLock($name)->tryLock(0.3, 10.0));
            $holder->unlock();
        });
    }

    public function testAKeptLockIsRenewedByTheKeeperPastSeveralLeases(): void
    {
        $name = Nodes::name('swoole-kept');
        Coroutines::run(function () use ($name): void {
            $lock = Nodes::client(['watchdog_lease_ms' => 600])->getLock($name);
            $lost = [];
            $lock->onLost(static function ($lock, $error) use (&$lost): void {
                $lost[] = $error;
            });
            $lock->lock();   // no lease: kept, renewed every 200 ms by the keeper's coroutine
            Coroutine::sleep(2.0);   // 3 leases and more
            $this->assertTrue($lock->isHeld());
            $this->assertFalse($lock->isLost());
            $this->assertLessThanOrEqual(0.6, $lock->getValidity());
            $this->assertFalse(Nodes::client()->getLock($name)->tryLock());
            $lock->extend(5.0);   // the owner's extension, planned with the keeper's
            $this->assertGreaterThan(0.6, $lock->getValidity());
            $lock->unlock();
            $this->assertFalse($lock->isLost());
            $this->assertSame([], $lost);
            $this->assertTrue(Nodes::client()->getLock($name)->tryLock(0, 1.0));
        });
    }

    public function testAKeptLockWhoseKeyIsDeletedIsLostAndToldFromTheKeeper(): void
    {
        $name = Nodes::name('swoole-lost');
        Coroutines::run(function () use ($name): void {
            $lock = Nodes::client(['watchdog_lease_ms' => 600])->getLock($name);
            $told = new Coroutine\Channel(1);
            $lock->onLost(static function ($lock, $error) use ($told): void {
                $told->push([$error, Coroutine::getCid()]);
            });
            $lock->lock();
            $main = Coroutine::getCid();
            Coroutines::deleteEverywhere($name);
            // The next renewal (within 200 ms) finds the key gone.
            $message = $told->pop(5.0);
            $this->assertIsArray($message, 'onLost was told');
            [$error, $cid] = $message;
            $this->assertInstanceOf(LockNotHeldException::class, $error);
            $this->assertGreaterThan(0, $cid, 'told from a coroutine');
            $this->assertNotSame($main, $cid);
            $this->assertTrue($lock->isLost());
            $this->assertFalse($lock->isHeld() && !$lock->isLost());
            try {
                $lock->unlock();
                $this->fail('unlock of a lost lock');
            } catch (LockNotHeldException $e) {
                $this->assertSame(REDLOCK_ENOTHELD, $e->getCode());
            }
            $this->assertTrue($lock->isLost());
            // A later acquisition is kept anew.
            $lock->lock();
            $this->assertFalse($lock->isLost());
            $lock->unlock();
        });
    }

    public function testALeaseRunsOutAndTheLockIsLost(): void
    {
        Coroutines::run(function (): void {
            $lock = Nodes::client()->getLock(Nodes::name('swoole-lease'));
            $this->assertTrue($lock->tryLock(0, 0.3));
            $this->assertFalse($lock->isLost());
            Coroutine::sleep(0.45);
            $this->assertTrue($lock->isLost());
            $this->assertFalse($lock->isHeld());
            $this->assertFalse($lock->isLocked());
            $this->expectException(LockNotHeldException::class);
            $lock->unlock();
        });
    }

    public function testReentryForceUnlockAndPing(): void
    {
        $name = Nodes::name('swoole-misc');
        Coroutines::run(function () use ($name): void {
            $client = Nodes::client();
            $this->assertSame(count(Nodes::uris()), $client->ping());
            $lock = $client->getLock($name);
            $this->assertTrue($lock->tryLock(0, 10.0));
            $this->assertTrue($lock->tryLock(0, 10.0), 'the same object enters again');
            $this->assertSame(2, $lock->getHoldCount());
            $lock->unlock();
            $this->assertTrue($lock->isHeld());
            $this->assertTrue(Nodes::client()->getLock($name)->forceUnlock());
            $this->assertFalse($lock->isLocked());
            $this->assertFalse(Nodes::client()->getLock($name)->forceUnlock());
            $this->assertSame(42, $client->synchronized($name, static fn () => 42, 1.0, 5.0));
        });
    }

    public function testFailuresThrowAsOutsideSwoole(): void
    {
        Coroutines::run(function (): void {
            $port = trim((string) shell_exec(escapeshellarg(Nodes::script()) . ' free-port'));
            $client = new Redlock\Client(["redis://127.0.0.1:$port"]);
            try {
                $client->getLock(Nodes::name('swoole-down'))->tryLock(0, 5.0);
                $this->fail('a lock without any node');
            } catch (NoQuorumException $e) {
                $this->assertSame(REDLOCK_ENOQUORUM, $e->getCode());
                $this->assertStringContainsString("127.0.0.1:$port", $e->getMessage());
            } finally {
                $client->close();
            }
            try {
                Nodes::client()->getLock('x')->tryLock(-1.0);
                $this->fail('a negative wait');
            } catch (RedlockException $e) {
                $this->assertSame(REDLOCK_EINVAL, $e->getCode());
            }
        });
    }

    public function testAClientServesSeveralSchedulersAndCloses(): void
    {
        $client = Nodes::client();
        $name = Nodes::name('swoole-schedulers');
        for ($i = 0; $i < 2; $i++) {
            Coroutines::run(function () use ($client, $name): void {
                $lock = $client->getLock($name);
                $this->assertTrue($lock->tryLock(0, 5.0));
                $lock->unlock();
            });
        }
        $lock = $client->getLock($name);
        $this->assertTrue($lock->tryLock(0, 5.0), 'and the blocking calls between');
        $lock->unlock();
        Coroutines::run(function () use ($client, $name): void {
            $client->close();
            $this->expectException(ClientClosedException::class);
            $client->getLock($name)->tryLock();
        });
    }

    /** The command-line tool's exit for taking $name at once and running `true` under it. */
    private static function tool(string $tool, string $name): int
    {
        $command = [$tool, '--nodes', implode(',', Nodes::uris()), '--wait', '0', $name, '--', 'true'];
        exec(implode(' ', array_map('escapeshellarg', $command)) . ' 2>&1', $out, $rc);
        return $rc;
    }
}
