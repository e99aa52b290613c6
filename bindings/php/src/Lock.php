<?php

declare(strict_types=1);

namespace Redlock;

use Redlock\Internal\Gate;
use Redlock\Internal\Held;
use Redlock\Internal\Native;
use Redlock\Internal\Swoole\Driver;

/**
 * A distributed lock on one or more resources, from Client::getLock(),
 * getMultiLock() or getFairLock(), or a read-write lock's half.
 *
 * Times are seconds (float). Without a lease (the default) the lock is kept:
 * taken for the client's watchdog_lease_ms and renewed every third of it by
 * the C library's own thread (redlock_handle_watch) until it is unlocked,
 * whatever PHP does meanwhile. Should renewal fail for good, the lock is
 * lost: isLost() turns true and the onLost() callbacks run, on PHP's
 * thread, at the next call into the client (isLost() is one). With a lease,
 * nothing renews the lock: it expires when the lease runs out, and isLost()
 * turns true then if it was not unlocked first.
 *
 * Reentry, through the same object (PHP has one thread: the object is the
 * holder): taking a lock this object holds again counts one more hold and
 * keeps the first terms (the keys' lease, the renewal); each unlock() gives
 * one back and the last releases it on the nodes (docs/locks.md).
 *
 * A Lock destroyed while held is released on the nodes, best effort.
 *
 * Inside a Swoole coroutine (Swoole\Coroutine::getCid() > 0) every call
 * that talks to the nodes drives the library's engine over Swoole's
 * coroutine sockets instead of blocking the worker: waits, wake-ups on
 * release, and for a kept lock its renewals and the onLost callbacks run as
 * coroutines (README.md, "Swoole").
 */
class Lock
{
    /** @internal kinds of lock */
    public const PLAIN = 0;
    /** @internal */
    public const FAIR = 1;

    private ?Held $held = null;
    private ?Held $last = null;
    /** @var list<callable> */
    private array $onLost = [];

    /**
     * @internal made by Client
     * @param list<string> $names
     */
    public function __construct(protected Client $client, protected Gate $gate, protected array $names,
                                private int $kind = self::PLAIN)
    {
    }

    public function __destruct()
    {
        $held = $this->held;
        if ($held !== null && Driver::inCoroutine()) {
            // No coroutine switch in a destructor (PHP may run it anywhere,
            // the end of a coroutine included): the release is a coroutine's.
            $this->held = null;
            if (!$this->gate->closed()) {
                Driver::spawn('the release of a lock destroyed while held', static function () use ($held): void {
                    $held->discard();
                });
            }
            return;
        }
        $this->discard();
    }

    /** The first resource's name. */
    public function getName(): string
    {
        return $this->names[0];
    }

    /** @return list<string> the resources this lock covers */
    public function getNames(): array
    {
        return $this->names;
    }

    /**
     * Tries to acquire the lock for $lease seconds (null: kept, renewed until
     * unlocked), retrying for up to $wait seconds (0: one attempt). true when
     * acquired (or held by this object already: one more hold), false when
     * someone else held it all along. Failures throw: too few nodes answered
     * (NoQuorumException: an outage is not contention), bad credentials
     * (AuthException), a bad wait or lease (InvalidArgumentException, with
     * the library's message)...
     */
    public function tryLock(float $wait = 0, ?float $lease = null): bool
    {
        $waitMs = Native::waitMs($wait);
        $this->checkLease($lease);
        if ($this->reenter()) {
            return true;
        }
        try {
            $this->acquireOrThrow($waitMs, $lease);
        } catch (LockHeldException) {
            return false;
        }
        return true;
    }

    /**
     * Acquires the lock, waiting as long as it takes (ended by
     * NoQuorumException once the nodes have failed for the client's
     * unavailable_timeout_ms), for $lease seconds (null: kept until
     * unlocked).
     */
    public function lock(?float $lease = null): void
    {
        $this->checkLease($lease);
        if (!$this->reenter()) {
            $this->acquireOrThrow(Native::FOREVER_MS, $lease);
        }
    }

    /**
     * Gives back one hold; the last releases the lock on the nodes.
     * LockNotHeldException when it was not held, or had expired or been
     * lost (the critical section may not have been exclusive); it is not
     * held afterwards either way.
     */
    public function unlock(): void
    {
        $this->gate->ctx('unlock');
        $this->gate->poll();
        $held = $this->held;
        if ($held === null) {
            throw new LockNotHeldException('the lock is not held', REDLOCK_ENOTHELD);
        }
        if ($held->leave() > 0) {
            return;
        }
        $this->held = null;
        try {
            $held->release();
        } finally {
            $this->gate->poll();
        }
    }

    /** Renews the lease to $lease seconds from now. LockNotHeldException when expired, lost or released. */
    public function extend(float $lease): void
    {
        $leaseMs = Native::leaseMs($lease);
        $this->gate->ctx('extend');
        $this->gate->poll();
        if ($this->held === null) {
            throw new LockNotHeldException('the lock is not held', REDLOCK_ENOTHELD);
        }
        try {
            $this->held->extend($leaseMs);
        } finally {
            $this->gate->poll();
        }
    }

    /** Whether this object holds the lock with validity left (false once its lease ran out). */
    public function isHeld(): bool
    {
        return $this->getValidity() > 0;
    }

    /** Seconds of validity left; <= 0 when not held. */
    public function getValidity(): float
    {
        $this->gate->poll();
        return $this->held === null ? 0.0 : $this->held->validityMs() / 1000;
    }

    /** The random token of the current acquisition (32 hex characters), null when not held. */
    public function getToken(): ?string
    {
        return $this->held === null ? null : redlock_handle_token($this->held->handle());
    }

    /** How many holds this object has (reentry): 0 when not held. */
    public function getHoldCount(): int
    {
        return $this->held === null ? 0 : $this->held->holds();
    }

    /**
     * Whether the lock is held by anyone: asks the nodes (a multi-lock: any
     * of its resources). NoQuorumException when too few answer to tell.
     */
    public function isLocked(): bool
    {
        return $this->inspect()[0] === 1;
    }

    /**
     * Seconds for which a quorum of the nodes still has the lock, whoever
     * holds it (Redisson's remainTimeToLive): null when nobody holds it, INF
     * when its key has no expiry; a multi-lock's longest.
     */
    public function remainTimeToLive(): ?float
    {
        return Native::timeToLive($this->inspect()[1]);
    }

    /**
     * The fencing token of the current acquisition (client option fencing=1)
     * for resource $name (default: the first): larger for every later holder
     * of the resource. null when not held or taken without fencing.
     */
    public function getFence(?string $name = null): ?int
    {
        $fences = $this->getFences();
        return $fences[$name ?? $this->names[0]] ?? null;
    }

    /** @return array<string, int> the fence of each resource, by name; [] when not held or without fencing */
    public function getFences(): array
    {
        if ($this->held === null || $this->held->handle() === null) {
            return [];
        }
        $fences = [];
        foreach ($this->names as $i => $name) {
            $fences[$name] = redlock_handle_fence($this->held->handle(), $i);
        }
        return in_array(0, $fences, true) ? [] : $fences;
    }

    /**
     * Whether the latest acquisition was lost: its keys can have expired
     * while held (a kept lock whose renewal failed for good, a lease that ran
     * out before unlock()). It runs the onLost callbacks of a loss not told
     * yet.
     */
    public function isLost(): bool
    {
        if (!$this->gate->closed()) {
            $this->gate->poll();
        }
        return $this->last !== null && $this->last->lost();
    }

    /**
     * Calls $callback($lock, $error) when a kept acquisition of this lock is
     * lost ($error: LockNotHeldException when a quorum says the lock is no
     * longer ours, LeaseExpiredException when the nodes failed until its
     * validity ran out), for this and every later acquisition. It runs on
     * PHP's thread at the next call into the client after the loss (or in
     * isLost()); at once, here, when the current kept acquisition is lost
     * already.
     */
    public function onLost(callable $callback): void
    {
        $this->onLost[] = $callback;
        $this->gate->poll();
        $error = $this->held?->kept() ? $this->held->toldError() : null;
        if ($error !== null) {
            $callback($this, $error);
        }
    }

    /**
     * Deletes the lock on every node whatever its token, and wakes the
     * clients waiting for it: for an operator whose lock holder is known to
     * be gone. DANGEROUS: a holder still alive goes on as if it held it.
     * true when a lock was deleted on some node.
     */
    public function forceUnlock(): bool
    {
        $ctx = $this->gate->ctx('forceUnlock');
        $deleted = 0;
        try {
            foreach ($this->names as $name) {
                $deleted += Driver::inCoroutine()
                    ? $this->gate->swoole()->run(redlock_op_force_unlock($ctx, $name, redlock_now_ms()))[2]
                    : redlock_force_unlock($ctx, $name);
            }
        } finally {
            $this->gate->poll();
        }
        return $deleted > 0;
    }

    /** @internal what the onLost callbacks hear, from the client's poll */
    public function tellLost(RedlockException $error): void
    {
        foreach ($this->onLost as $callback) {
            try {
                $callback($this, $error);
            } catch (\Throwable $e) {
                error_log('redlock: an onLost callback failed: ' . $e->getMessage());
            }
        }
    }

    /**
     * @internal acquires for $lease seconds (null: kept), with the C library
     * retrying for $waitMs; throws the error of the last attempt
     * (LockHeldException when someone else held it all along).
     */
    public function acquireOrThrow(int $waitMs, ?float $lease): void
    {
        [$leaseMs, $keep] = $this->checkLease($lease);
        $ctx = $this->gate->ctx('acquire');
        $this->gate->poll();
        try {
            $handle = Driver::inCoroutine()
                ? $this->gate->swoole()->run($this->lockOp($ctx, $leaseMs, $waitMs, redlock_now_ms()))
                : $this->lockCall($ctx, $leaseMs, $waitMs);
            $held = new Held($this->gate, $this, $handle);
            if ($this->gate->closed()) {
                // The client was closed while this coroutine waited.
                $held->discard();
                throw new ClientClosedException('acquire');
            }
            $this->acquired($handle);
            if ($keep) {
                try {
                    $held->keep();
                } catch (\Throwable $e) {
                    $held->discard();
                    throw $e;
                }
            }
            $old = $this->held;
            $this->held = $this->last = $held;
            $old?->discard();   // an acquisition whose lease had run out
        } finally {
            $this->gate->poll();
        }
    }

    /** @internal unlocks on the nodes, ignoring failures, and frees the handle */
    public function discard(): void
    {
        $held = $this->held;
        $this->held = null;
        if ($held !== null && !$this->gate->closed()) {
            $held->discard();
        }
    }

    /** @internal the current acquisition's C handle, or null */
    public function currentHandle(): mixed
    {
        return $this->held?->handle();
    }

    /** @internal after an acquisition: a permit takes its id */
    protected function acquired(mixed $handle): void
    {
    }

    /** The engine's operation that acquires (in a Swoole coroutine): the kind's own. */
    protected function lockOp(mixed $ctx, int $leaseMs, int $waitMs, int $now): mixed
    {
        if ($this->kind === self::FAIR) {
            return redlock_op_lock_fair($ctx, $this->names[0], $leaseMs, $waitMs, $now);
        }
        return redlock_op_lock($ctx, $this->names, $leaseMs, $waitMs, $now);
    }

    /** The C call that acquires: the kind's own. */
    protected function lockCall(mixed $ctx, int $leaseMs, int $waitMs): mixed
    {
        if ($this->kind === self::FAIR) {
            return redlock_lock_fair($ctx, $this->names[0], $leaseMs, $waitMs);
        }
        if (count($this->names) === 1) {
            return redlock_lock($ctx, $this->names[0], $leaseMs, $waitMs);
        }
        return redlock_lock_multi($ctx, $this->names, $leaseMs, $waitMs);
    }

    /** @return array{0: int, 1: bool} the lease in ms, and whether the lock is kept (no lease) */
    private function checkLease(?float $lease): array
    {
        if ($lease === null) {
            return [$this->client->keptLeaseMs(), true];
        }
        return [Native::leaseMs($lease), false];
    }

    /** true when this object holds the lock and one more hold was counted. */
    private function reenter(): bool
    {
        $this->gate->ctx('acquire');
        $this->gate->poll();
        return $this->held !== null && $this->held->reenter();
    }

    /** @return array{0: int, 1: int} redlock_inspect_multi's answer: locked, ttl_ms */
    private function inspect(): array
    {
        $ctx = $this->gate->ctx('isLocked');
        try {
            if (!Driver::inCoroutine()) {
                return redlock_inspect_multi($ctx, $this->names);
            }
            // One query per resource, merged by the library's rule.
            $ttlMs = -2;
            foreach ($this->names as $name) {
                [$locked, $ttl] = $this->gate->swoole()->run(redlock_op_inspect($ctx, $name, redlock_now_ms()));
                $ttlMs = redlock_inspect_merge($ttlMs, $locked === 1 ? $ttl : -2);
            }
            return [$ttlMs === -2 ? 0 : 1, $ttlMs];
        } finally {
            $this->gate->poll();
        }
    }
}
