<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Redlock\Client;
use Redlock\LockHeldException;
use Redlock\LockNotHeldException;

/** The client: synchronized(), health(), ping(), events, options, node lists. */
final class ClientTest extends TestCase
{
    protected function tearDown(): void
    {
        Nodes::closeAll();
    }

    public function testSynchronizedReturnsTheValueAndUnlocks(): void
    {
        $name = Nodes::name('sync');
        $client = Nodes::client();
        $other = Nodes::client()->getLock($name);
        $seen = null;
        $value = $client->synchronized($name, function () use ($other, &$seen) {
            $seen = $other->isLocked();
            return 42;
        });
        $this->assertSame(42, $value);
        $this->assertTrue($seen, 'held while the function ran');
        $this->assertFalse($other->isLocked(), 'released after');
    }

    public function testSynchronizedUnlocksWhenTheFunctionThrows(): void
    {
        $name = Nodes::name('sync-throws');
        $client = Nodes::client();
        try {
            $client->synchronized($name, function (): void {
                throw new DomainException('the critical section failed');
            }, 1.0, 10.0);
            $this->fail('the exception was swallowed');
        } catch (DomainException $e) {
            $this->assertSame('the critical section failed', $e->getMessage());
        }
        $this->assertFalse(Nodes::client()->getLock($name)->isLocked());
    }

    public function testSynchronizedWithAWaitThrowsWhenHeldElsewhere(): void
    {
        $name = Nodes::name('sync-held');
        $holder = Nodes::client()->getLock($name);
        $this->assertTrue($holder->tryLock(0, 10.0));
        $ran = false;
        try {
            Nodes::client()->synchronized($name, function () use (&$ran): void {
                $ran = true;
            }, 0.2);
            $this->fail('ran beside the holder');
        } catch (LockHeldException $e) {
            $this->assertSame(REDLOCK_ELOCKED, $e->getCode());
        }
        $this->assertFalse($ran);
        $holder->unlock();
    }

    public function testSynchronizedTellsALockLostMeanwhile(): void
    {
        $name = Nodes::name('sync-lost');
        $this->expectException(LockNotHeldException::class);
        Nodes::client()->synchronized($name, fn () => usleep(400_000), null, 0.2);
    }

    public function testHealthHasEveryNodeTypedByTheLibrary(): void
    {
        $client = Nodes::client();
        $before = $client->health();
        $this->assertCount(5, $before);
        $this->assertSame('unknown', $before[0]['state']);
        $this->assertNull($before[0]['rtt_ms']);
        $this->assertSame(5, $client->ping());
        $health = $client->health();
        $fields = [];
        for ($i = 0; ($field = redlock_health_field($i)) !== null; $i++) {
            $fields[] = $field;
        }
        foreach ($health as $i => $node) {
            $this->assertSame($fields, array_keys($node));
            $this->assertSame(preg_replace('#^redis://#', '', Nodes::uris()[$i]), $node['node']);
            $this->assertSame('up', $node['state']);
            $this->assertIsInt($node['commands']);
            $this->assertGreaterThan(0, $node['commands']);
            $this->assertIsFloat($node['rtt_ms']);
            $this->assertNull($node['last_error']);
        }
    }

    public function testPingCountsTheNodesThatAnswer(): void
    {
        $uris = Nodes::uris();
        $uris[4] = 'redis://127.0.0.1:' . trim((string) shell_exec(escapeshellarg(Nodes::script()) . ' free-port'));
        $client = new Client($uris, ['connect_timeout_ms' => 100]);
        $this->assertSame(4, $client->ping());
        $down = $client->health()[4];
        $this->assertSame('down', $down['state']);
        $this->assertIsString($down['last_error']);
        $client->close();
    }

    public function testEventsReachAPsr3ShapedLogger(): void
    {
        $logger = new class {
            /** @var list<array{0: string, 1: string, 2: array}> */
            public array $records = [];

            public function log($level, string|Stringable $message, array $context = []): void
            {
                $this->records[] = [$level, (string) $message, $context];
            }
        };
        $client = Nodes::client(['logger' => $logger, 'log_level' => 'debug']);
        $name = Nodes::name('events');
        $lock = $client->getLock($name);
        $this->assertTrue($lock->tryLock(0, 5.0));
        $lock->unlock();
        $events = array_map(fn ($r) => $r[2]['event'], $logger->records);
        $this->assertSame(['acquired', 'released'], $events);
        [$level, $message, $context] = $logger->records[0];
        $this->assertSame('debug', $level);
        $this->assertStringStartsWith("acquired op=lock resource=$name ", $message);
        $this->assertSame(REDLOCK_LOG_DEBUG, $context['level']);

        $calls = [];
        $quiet = Nodes::client(['logger' => function (string $level, string $message, array $context) use (&$calls): void {
            $calls[] = $context['event'];
        }]);   // info and above by default
        $this->assertTrue($quiet->getLock($name)->tryLock(0, 5.0));
        $uris = Nodes::uris();
        $uris[4] = 'redis://127.0.0.1:' . trim((string) shell_exec(escapeshellarg(Nodes::script()) . ' free-port'));
        $warned = [];
        $down = new Client($uris, ['logger' => function (string $level, string $message) use (&$warned): void {
            $warned[] = "$level $message";
        }, 'connect_timeout_ms' => 100]);
        $down->ping();
        $this->assertSame([], $calls, 'no debug events below info');
        $this->assertNotEmpty(array_filter($warned, fn ($w) => str_starts_with($w, 'warning node_down ')));
        $down->close();
    }

    public function testOptionsAreTheLibrarys(): void
    {
        $defaults = Client::optionDefaults();
        $this->assertCount(redlock_option_count(), $defaults);
        $this->assertSame('30000', $defaults['watchdog_lease_ms']);
        $client = Nodes::client(['node_timeout_ms' => 75, 'fencing' => true, 'drift_factor' => 0.02,
                                 'key_prefix' => 'php:']);
        $this->assertSame('75', $client->getOption('node_timeout_ms'));
        $this->assertSame('1', $client->getOption('fencing'));
        $this->assertSame('0.02', $client->getOption('drift_factor'));
        $this->assertSame('php:', $client->getOption('key_prefix'));
    }

    public function testSplitNodesKeepsASentinelUriWhole(): void
    {
        $this->assertSame(
            ['redis://a:1', 'redis-sentinel://s1:26379,s2:26379?sentinelMasterId=m', 'redis://b'],
            Client::splitNodes(' redis://a:1 , redis-sentinel://s1:26379,s2:26379?sentinelMasterId=m,redis://b'));
        $this->assertSame([], Client::splitNodes('  '));
    }
}
