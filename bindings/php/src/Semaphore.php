<?php

declare(strict_types=1);

namespace Redlock;

use Redlock\Internal\Gate;
use Redlock\Internal\Native;
use Redlock\Internal\Swoole\Driver;

/**
 * A semaphore, from Client::getSemaphore($name, $permits): at most $permits
 * permits of it held at once, across every client and machine (as
 * Redisson's RPermitExpirableSemaphore). Each permit is a Permit with an id
 * and a lease of its own, kept (renewed) when no lease is given. Every
 * client of the semaphore must give the same number of permits: a node that
 * has it under another number refuses with InvalidArgumentException, whose
 * message names both. A semaphore and a lock of the same name do not
 * exclude each other.
 */
final class Semaphore
{
    /** @internal made by Client */
    public function __construct(private Client $client, private Gate $gate, private string $name,
                                private int $permits)
    {
    }

    public function getName(): string
    {
        return $this->name;
    }

    /** How many permits it has: at most this many held at once. */
    public function getPermits(): int
    {
        return $this->permits;
    }

    /**
     * Tries to take a permit for $lease seconds (null: kept until released),
     * retrying for up to $wait seconds (0: one attempt). The Permit, or null
     * when every permit stayed taken until the wait ended; other failures
     * throw as Lock::tryLock()'s do.
     */
    public function tryAcquire(float $wait = 0, ?float $lease = null): ?Permit
    {
        $waitMs = Native::waitMs($wait);
        $permit = new Permit($this->client, $this->gate, $this);
        try {
            $permit->acquireOrThrow($waitMs, $lease);
        } catch (LockHeldException) {
            return null;
        }
        return $permit;
    }

    /** Takes a permit for $lease seconds (null: kept until released), waiting as long as it takes. */
    public function acquire(?float $lease = null): Permit
    {
        $permit = new Permit($this->client, $this->gate, $this);
        $permit->acquireOrThrow(Native::FOREVER_MS, $lease);
        return $permit;
    }

    /**
     * How many permits could be taken now: those free on a permit's quorum
     * of the nodes. For display: it may be stale as soon as it is given.
     * NoQuorumException when too few nodes answered.
     */
    public function availablePermits(): int
    {
        $ctx = $this->gate->ctx('availablePermits');
        try {
            if (Driver::inCoroutine()) {
                $op = redlock_op_permits($ctx, $this->name, $this->permits, redlock_now_ms());
                return $this->gate->swoole()->run($op)[3];
            }
            return redlock_permits_available($ctx, $this->name, $this->permits);
        } finally {
            $this->gate->poll();
        }
    }
}
