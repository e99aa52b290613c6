<?php

declare(strict_types=1);

namespace Redlock;

use Redlock\Internal\Gate;

/**
 * A permit of a Semaphore, from its tryAcquire() or acquire(): a Lock taken
 * once (release(), extend(), getValidity(), isHeld(), isLost(), onLost()),
 * with getId(), the permit's id (its token). Without a lease it is kept
 * (renewed by the C library's thread) until released, and lost as a kept
 * lock is. The methods of a Lock that a permit has no use for (tryLock,
 * lock, isLocked, remainTimeToLive, forceUnlock) throw BadMethodCallException.
 * Inside a Swoole coroutine it is taken, renewed and released as a Lock is
 * there.
 */
final class Permit extends Lock
{
    private ?string $id = null;

    /** @internal made by Semaphore */
    public function __construct(Client $client, Gate $gate, private Semaphore $semaphore)
    {
        parent::__construct($client, $gate, [$semaphore->getName()]);
    }

    public function getSemaphore(): Semaphore
    {
        return $this->semaphore;
    }

    /** The permit's id: 32 hex characters (kept once released). */
    public function getId(): ?string
    {
        return $this->id;
    }

    /** Releases the permit on the nodes (Lock::unlock()). */
    public function release(): void
    {
        $this->unlock();
    }

    public function tryLock(float $wait = 0, ?float $lease = null): bool
    {
        throw new \BadMethodCallException('a Permit has no tryLock(): take a permit with Semaphore::tryAcquire()');
    }

    public function lock(?float $lease = null): void
    {
        throw new \BadMethodCallException('a Permit has no lock(): take a permit with Semaphore::acquire()');
    }

    public function isLocked(): bool
    {
        throw new \BadMethodCallException('a Permit has no isLocked(): ask Semaphore::availablePermits()');
    }

    public function remainTimeToLive(): ?float
    {
        throw new \BadMethodCallException('a Permit has no remainTimeToLive(): see its getValidity()');
    }

    public function forceUnlock(): bool
    {
        throw new \BadMethodCallException('a Permit has no forceUnlock(): release it');
    }

    protected function lockCall(mixed $ctx, int $leaseMs, int $waitMs): mixed
    {
        return redlock_acquire_permit($ctx, $this->names[0], $this->semaphore->getPermits(), $leaseMs, $waitMs);
    }

    protected function lockOp(mixed $ctx, int $leaseMs, int $waitMs, int $now): mixed
    {
        return redlock_op_acquire_permit($ctx, $this->names[0], $this->semaphore->getPermits(), $leaseMs,
            $waitMs, $now);
    }

    protected function acquired(mixed $handle): void
    {
        $this->id = redlock_handle_token($handle);
    }
}
