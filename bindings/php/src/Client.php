<?php

declare(strict_types=1);

namespace Redlock;

use Redlock\Internal\Gate;
use Redlock\Internal\Native;
use Redlock\Internal\Swoole\Driver;

/**
 * A client for N independent Redis masters.
 *
 * $uris: redis://[[user]:password@]host[:port][/db] (rediss:// over TLS),
 * unix://[[user]:password@]/path.sock[?db=N], a Sentinel group
 * (redis-sentinel://host:port,host:port?sentinelMasterId=NAME) or a Cluster
 * (redis-cluster://h1:7000,h2:7000), each one node. $options are the C
 * library's, by name (docs/options.md; Client::optionDefaults() lists them
 * from the library's table), plus two of this binding's: 'logger', a PSR-3
 * logger (any object with log($level, $message, $context)) or a callable of
 * that shape, which gets the client's events (docs/logging.md), and
 * 'log_level', the least PSR-3 level sent ('info' by default). Nothing
 * connects until the first lock call.
 *
 * Times are seconds (float). Events and the losses of kept locks happen on
 * the C library's own thread; PHP has no other thread to run PHP on, so they
 * reach the logger and the onLost callbacks on the caller's thread, at its
 * next call into the client, one of its locks or semaphores (isLost() is
 * one).
 *
 * close() (or the client's destruction) releases, best effort, every lock
 * still held through the client and closes its connections; every call
 * after it throws ClientClosedException.
 */
final class Client
{
    private Gate $gate;
    private int $keptLeaseMs;

    /**
     * @param list<string> $uris
     * @param array<string, string|int|float|bool|object|callable|null> $options
     */
    public function __construct(array $uris, array $options = [])
    {
        $logger = $options['logger'] ?? null;
        $level = $options['log_level'] ?? 'info';
        unset($options['logger'], $options['log_level']);
        foreach ($uris as $uri) {
            if (!is_string($uri)) {
                throw new \TypeError('a node URI must be a string, not ' . get_debug_type($uri));
            }
        }
        if (!is_string($level)) {
            throw new \TypeError('log_level must be a string, not ' . get_debug_type($level));
        }
        $ctx = redlock_ctx_new(array_values($uris));
        try {
            foreach ($options as $name => $value) {
                redlock_ctx_set_option($ctx, (string) $name, Native::optionText((string) $name, $value));
            }
            $this->keptLeaseMs = (int) redlock_ctx_get_option($ctx, 'watchdog_lease_ms');
            $this->gate = new Gate($ctx, $logger, $level);
        } catch (\Throwable $e) {
            redlock_ctx_free($ctx);
            throw $e;
        }
    }

    public function __destruct()
    {
        if (!isset($this->gate)) {
            return;
        }
        if (Driver::inCoroutine()) {
            // No coroutine switch in a destructor: the close is a coroutine's.
            $gate = $this->gate;
            Driver::spawn('closing a client', static function () use ($gate): void {
                $gate->close();
            });
            return;
        }
        $this->gate->close();
    }

    /**
     * The node URIs of one string (an environment variable such as
     * REDLOCK_NODES): a comma followed by scheme:// starts the next URI, so
     * the commas between a Sentinel URI's sentinels stay in it. The library
     * splits it and refuses an empty URI (InvalidArgumentException).
     *
     * @return list<string>
     */
    public static function splitNodes(string $text): array
    {
        return Native::splitNodes($text);
    }

    /**
     * Every option of the library (docs/options.md) with its default, as the
     * text an option takes, in the library's order.
     *
     * @return array<string, string>
     */
    public static function optionDefaults(): array
    {
        return Native::optionDefaults();
    }

    /** A lock on one resource (not acquired yet). */
    public function getLock(string $name): Lock
    {
        $this->gate->ctx('getLock');
        return new Lock($this, $this->gate, [$name]);
    }

    /** A lock on several resources, acquired all together or not at all. */
    public function getMultiLock(string ...$names): Lock
    {
        $this->gate->ctx('getMultiLock');
        return new Lock($this, $this->gate, Native::names($names));
    }

    /**
     * A fair lock on one resource: its waiters get it in the order they
     * arrived, across clients and nodes. It is the plain lock of its name (a
     * plain lock of the name excludes it); no fence.
     */
    public function getFairLock(string $name): Lock
    {
        $this->gate->ctx('getFairLock');
        return new Lock($this, $this->gate, [$name], Lock::FAIR);
    }

    /** A read-write lock: readLock() held by any number of readers, writeLock() by one writer alone. */
    public function getReadWriteLock(string $name): ReadWriteLock
    {
        $this->gate->ctx('getReadWriteLock');
        return new ReadWriteLock($this, $this->gate, $name);
    }

    /**
     * A semaphore of $permits permits (1 to 10000): at most that many held
     * at once, by all its clients together. InvalidArgumentException at once
     * for a bad number.
     */
    public function getSemaphore(string $name, int $permits): Semaphore
    {
        $this->gate->ctx('getSemaphore');
        return new Semaphore($this, $this->gate, $name, Native::permits($permits));
    }

    /**
     * Runs $fn under the lock $name and returns its value, always unlocking
     * after (Laravel's Cache::lock()->get() habit). Without $wait, waits as
     * long as it takes; with it, LockHeldException when someone else still
     * held the lock after $wait seconds. Without $lease the lock is kept
     * (renewed) while $fn runs. When $fn throws, the lock is released and its
     * exception goes on; when it returns but the lock was lost meanwhile,
     * LockNotHeldException.
     */
    public function synchronized(string $name, callable $fn, ?float $wait = null, ?float $lease = null): mixed
    {
        $waitMs = $wait === null ? Native::FOREVER_MS : Native::waitMs($wait);
        $lock = $this->getLock($name);
        $lock->acquireOrThrow($waitMs, $lease);
        try {
            $result = $fn();
        } catch (\Throwable $e) {
            $lock->discard();
            throw $e;
        }
        $lock->unlock();
        return $result;
    }

    /** The current value of a library option, as text. */
    public function getOption(string $name): string
    {
        return redlock_ctx_get_option($this->gate->ctx('getOption'), $name);
    }

    /**
     * What the client knows of each node, in the order of $uris: one array
     * per node with the fields of docs/logging.md (node, state, for_ms,
     * rtt_ms, commands, failures, last_error, ...), each typed by the library
     * (int, float, string) and null where the node has no value. No I/O:
     * what the calls so far have seen (ping() refreshes it).
     *
     * @return list<array<string, string|int|float|null>>
     */
    public function health(): array
    {
        $this->gate->poll();
        return Native::health($this->gate->ctx('health'));
    }

    /**
     * Sends PING to every node and waits for their answers: how many
     * answered and count. NoQuorumException (or AuthException...) when too
     * few did, naming each failed node.
     */
    public function ping(): int
    {
        try {
            $ctx = $this->gate->ctx('ping');
            if (Driver::inCoroutine()) {
                return $this->gate->swoole()->run(redlock_op_ping($ctx, redlock_now_ms()))[2];
            }
            return redlock_ctx_ping($ctx);
        } finally {
            $this->gate->poll();
        }
    }

    /** Releases every lock still held through this client and frees it; once. */
    public function close(): void
    {
        $this->gate->close();
    }

    /** The lease of a kept lock, in ms: the client's watchdog_lease_ms. */
    public function keptLeaseMs(): int
    {
        return $this->keptLeaseMs;
    }
}
