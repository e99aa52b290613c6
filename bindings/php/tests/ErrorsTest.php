<?php

declare(strict_types=1);

use PHPUnit\Framework\TestCase;
use Redlock\Client;
use Redlock\InvalidArgumentException;
use Redlock\NoQuorumException;
use Redlock\RedlockException;

/** Bad input throws at once, with the library's code and message; nothing crashes. */
final class ErrorsTest extends TestCase
{
    private const LEASE_RULE = 'lease must be a time above 0 ms and at most 2147483647 ms, not ';

    protected function tearDown(): void
    {
        Nodes::closeAll();
    }

    /** @return array<string, array{0: callable(Client): mixed, 1: string}> */
    public static function badInputs(): array
    {
        return [
            'negative lease' => [fn (Client $c) => $c->getLock('x')->tryLock(0, -1.0), self::LEASE_RULE . '-1000 ms'],
            'zero lease' => [fn (Client $c) => $c->getLock('x')->tryLock(0, 0), self::LEASE_RULE . '0 ms'],
            'long lease' => [fn (Client $c) => $c->getLock('x')->tryLock(0, 30 * 24 * 3600), self::LEASE_RULE . '2592000000 ms'],
            'NaN lease' => [fn (Client $c) => $c->getLock('x')->lock(NAN), self::LEASE_RULE . 'NaN'],
            'negative wait' => [fn (Client $c) => $c->getLock('x')->tryLock(-1.0, 1.0),
                                'wait must be a finite time of 0 ms or more, not -1000 ms'],
            'infinite wait' => [fn (Client $c) => $c->getLock('x')->tryLock(INF, 1.0),
                                'wait must be a finite time of 0 ms or more, not infinity'],
            'negative extend' => [fn (Client $c) => $c->getLock('x')->extend(-1.0), self::LEASE_RULE . '-1000 ms'],
            'zero permits' => [fn (Client $c) => $c->getSemaphore('s', 0), 'permits must be a whole number from 1 to 10000, not 0'],
            'too many permits' => [fn (Client $c) => $c->getSemaphore('s', 10001),
                                   'permits must be a whole number from 1 to 10000, not 10001'],
            'negative semaphore lease' => [fn (Client $c) => $c->getSemaphore('s', 1)->tryAcquire(0, -1.0),
                                           self::LEASE_RULE . '-1000 ms'],
            'empty URI' => [fn (Client $c) => Client::splitNodes(' ,redis://a'), 'URI 1 of the list of nodes is empty'],
            'unknown option' => [fn (Client $c) => new Client(Nodes::uris(), ['no_such_option' => 1]),
                                 "unknown option 'no_such_option'"],
            'bad option value' => [fn (Client $c) => new Client(Nodes::uris(), ['node_timeout_ms' => -5]), 'node_timeout_ms'],
            'lease beyond max_lease_ms' => [fn (Client $c) => (new Client(Nodes::uris(), ['max_lease_ms' => 1000]))
                ->getLock('x')->tryLock(0, 2.0), 'max_lease_ms'],
        ];
    }

    /** @dataProvider badInputs */
    public function testBadInputThrowsTheLibrarysMessage(callable $call, string $message): void
    {
        $client = Nodes::client();
        try {
            $call($client);
            $this->fail('accepted');
        } catch (InvalidArgumentException $e) {
            $this->assertSame(REDLOCK_EINVAL, $e->getCode());
            $this->assertStringContainsString($message, $e->getMessage());
            $this->assertInstanceOf(RedlockException::class, $e);
            $this->assertInstanceOf(RuntimeException::class, $e);
        }
        $lock = $client->getLock(Nodes::name('after'));
        $this->assertTrue($lock->tryLock(0, 1.0), 'the client works after it');
        $lock->unlock();
    }

    public function testBadUrisAreRefusedByTheLibrary(): void
    {
        foreach (['bogus://x' => 'unknown URI scheme', 'redis://h:99999' => 'node 1',
                  'redis://127.0.0.1:1' => null] as $uri => $message) {
            if ($message === null) {
                $this->assertInstanceOf(Client::class, new Client([$uri]), 'no I/O until a call');
                continue;
            }
            try {
                new Client([$uri]);
                $this->fail("$uri was accepted");
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString($message, $e->getMessage());
            }
        }
        $uris = Nodes::uris();
        try {
            new Client([$uris[0], $uris[0]]);
            $this->fail('the same node twice was accepted');
        } catch (InvalidArgumentException $e) {
            $this->assertSame(REDLOCK_EINVAL, $e->getCode());
        }
    }

    public function testTypesThePhpWay(): void
    {
        $client = Nodes::client();
        $checks = [
            [fn () => new Client([1, 2]), TypeError::class],
            [fn () => new Client(Nodes::uris(), ['fencing' => []]), TypeError::class],
            [fn () => new Client(Nodes::uris(), ['node_timeout_ms' => true]), TypeError::class],
            [fn () => new Client(Nodes::uris(), ['logger' => new stdClass()]), TypeError::class],
            [fn () => new Client(Nodes::uris(), ['logger' => 'strlen', 'log_level' => 'loud']), InvalidArgumentException::class],
            [fn () => $client->getLock("a\0b")->tryLock(0, 1.0), ValueError::class],
            [fn () => $client->getMultiLock(), ArgumentCountError::class],
            [fn () => redlock_lock(null, 'x', 1000, 0), TypeError::class],
            [fn () => redlock_lock_multi(redlock_ctx_new(Nodes::uris()), ['a', 7], 1000, 0), TypeError::class],
            [fn () => redlock_handle_validity_ms(null), TypeError::class],
        ];
        foreach ($checks as $i => [$call, $class]) {
            try {
                $call();
                $this->fail("check $i was accepted");
            } catch (Throwable $e) {
                $this->assertInstanceOf($class, $e, "check $i: " . $e->getMessage());
            }
        }
    }

    public function testNoQuorumIsNotContention(): void
    {
        $ports = [];
        for ($i = 0; $i < 3; $i++) {
            $ports[] = 'redis://127.0.0.1:' . trim((string) shell_exec(escapeshellarg(Nodes::script()) . ' free-port'));
        }
        $client = new Client(array_unique($ports), ['connect_timeout_ms' => 50]);
        try {
            $client->getLock('x')->tryLock(0, 1.0);
            $this->fail('acquired without nodes');
        } catch (NoQuorumException $e) {
            $this->assertSame(REDLOCK_ENOQUORUM, $e->getCode());
            $this->assertStringContainsString('127.0.0.1', $e->getMessage());
        }
        $client->close();
    }

    public function testEveryCodeHasItsException(): void
    {
        $classes = [REDLOCK_ELOCKED => 'LockHeldException', REDLOCK_ENOQUORUM => 'NoQuorumException',
                    REDLOCK_ENOTHELD => 'LockNotHeldException', REDLOCK_EINVAL => 'InvalidArgumentException',
                    REDLOCK_ENOMEM => 'OutOfMemoryException', REDLOCK_EEXPIRED => 'LeaseExpiredException',
                    REDLOCK_EUNSUPPORTED => 'UnsupportedException', REDLOCK_EAUTH => 'AuthException',
                    REDLOCK_EWRONGTYPE => 'WrongTypeException', REDLOCK_EREDIS => 'RedisErrorException',
                    REDLOCK_ESYSTEM => 'SystemCallException', REDLOCK_ECANCELED => 'CancelledException',
                    REDLOCK_ETLS => 'TlsException', REDLOCK_ENOPERM => 'PermissionDeniedException'];
        foreach ($classes as $code => $class) {
            $e = RedlockException::forCode($code);
            $this->assertSame("Redlock\\$class", get_class($e));
            $this->assertSame($code, $e->getCode());
            $this->assertSame(redlock_strerror($code), $e->getMessage(), 'no detail: the description');
        }
        $this->assertSame(RedlockException::class, get_class(RedlockException::forCode(-999, 'later')));
    }
}
