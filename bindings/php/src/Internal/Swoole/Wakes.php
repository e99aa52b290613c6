<?php

declare(strict_types=1);

namespace Redlock\Internal\Swoole;

/**
 * Inside Swoole: waits that releases end (redlock_engine.h's wake-ups).
 *
 * A lock call that found the lock held elsewhere pauses (retry_delay_ms +-
 * retry_jitter_ms) before its next attempt; the release itself may end the
 * pause. Releases publish their token on a channel per key, and the library
 * says who is woken when, when each node's subscriber connection is made,
 * what it writes and when it is closed (redlock_waiters, the state machine
 * the blocking calls follow too): this class connects, writes, reads and
 * closes as it says, and wakes the calls it names.
 *
 * One per client (its Driver): a coroutine that tends the waiters while
 * calls wait (and for the linger the library gives after), and one per
 * subscriber connection that connects it and reads. A call registers when
 * its engine says it awaits a release, and leaves when it ends; its timed
 * retries stay.
 *
 * @internal
 */
final class Wakes
{
    private const READ_CHUNK = 65536;

    /** @var mixed the redlock_waiters, made on first use; null once freed */
    private mixed $waiters = null;
    /** @var array<int, Run> the waiting calls by id */
    private array $runs = [];
    private int $lastId = 0;
    /** @var array<int, Sub> the subscriber connections by node */
    private array $subs = [];
    private Signal $signal;
    private bool $running = false;
    private bool $closed = false;

    public function __construct(private Driver $driver)
    {
        $this->signal = new Signal();
    }

    /** Registers a run whose lock waits for a release; one that cannot be keeps its timed retries. */
    public function add(Run $run): void
    {
        if ($this->closed) {
            return;
        }
        try {
            $this->waiters ??= redlock_waiters_new($this->driver->ctx);
        } catch (\Redlock\RedlockException) {
            return;
        }
        $id = ++$this->lastId;
        if (redlock_waiters_add($this->waiters, $id, $run->op) !== REDLOCK_OK) {
            return;
        }
        $run->waitId = $id;
        $this->runs[$id] = $run;
        if ($this->running) {
            $this->signal->post();
            return;
        }
        $this->running = true;
        Driver::spawn('the Swoole wake-ups', function (): void {
            try {
                $this->tend();
            } finally {
                foreach ($this->subs as $node => $sub) {
                    $this->drop($sub);
                    if ($this->waiters !== null) {
                        redlock_waiters_lost($this->waiters, $node, redlock_now_ms());
                    }
                }
                $this->running = false;
                $this->driver->gate->release();
            }
        });
    }

    /** The run's lock is done ($op not freed yet: its message says so when a node refused the subscription). */
    public function stop(Run $run, mixed $op): void
    {
        redlock_waiters_remove($this->waiters, $run->waitId, $op, redlock_now_ms());
        unset($this->runs[$run->waitId]);
        $run->waitId = 0;
        $this->signal->post();
    }

    /** The client is closed: the subscribers go now. */
    public function close(): void
    {
        $this->closed = true;
        $this->signal->post();
    }

    public function idle(): bool
    {
        return !$this->running && $this->runs === [];
    }

    public function free(): void
    {
        if ($this->waiters !== null) {
            redlock_waiters_free($this->waiters);
            $this->waiters = null;
        }
    }

    /**
     * The tending coroutine: does what the library says for the waiting
     * calls until it has nothing left to tend, or the client is closed.
     */
    private function tend(): void
    {
        $w = $this->waiters;
        while (!$this->closed) {
            foreach ($this->subs as $node => $sub) {
                if ($sub->dead) {
                    $this->drop($sub);
                    redlock_waiters_lost($w, $node, redlock_now_ms());
                }
            }
            [$todo, $at] = redlock_waiters_drive($w, redlock_now_ms());
            if ($todo & REDLOCK_WAITERS_CLOSE) {
                while (($node = redlock_waiters_next_close($w)) >= 0) {
                    if (isset($this->subs[$node])) {
                        $this->drop($this->subs[$node]);
                    }
                }
            }
            if ($todo & REDLOCK_WAITERS_CONNECT) {
                while (($node = redlock_waiters_next_connect($w)) >= 0) {
                    $this->start($node);
                }
            }
            if ($todo & REDLOCK_WAITERS_WRITE) {
                $this->flush();
            }
            if ($todo & REDLOCK_WAITERS_WAKE) {
                $this->wakeWoken();
            }
            if ($at === Driver::NEVER && $this->subs === [] && $this->runs === []) {
                return;
            }
            $now = redlock_now_ms();
            $this->signal->wait(max(1, min($at, $now + 1000) - $now));
        }
    }

    /** Wakes the runs the library names: each tries again at once. */
    private function wakeWoken(): void
    {
        while ($this->waiters !== null && ($id = redlock_waiters_next($this->waiters)) !== 0) {
            $run = $this->runs[$id] ?? null;
            if ($run !== null) {
                redlock_op_wake($run->op, redlock_now_ms());
                $run->signal->post();
            }
        }
    }

    /** Writes what the library has each connected subscriber write. */
    private function flush(): void
    {
        foreach ($this->subs as $node => $sub) {
            if ($sub->sock === null || !$sub->connected) {
                continue;
            }
            $out = redlock_waiters_output($this->waiters, $node);
            if ($out === '') {
                continue;
            }
            if ($sub->sock->sendAll($out, $this->driver->nodeTimeoutMs / 1000) === strlen($out)) {
                redlock_waiters_wrote($this->waiters, $node, strlen($out));
            } else {
                $sub->dead = true;
                $this->signal->post();
            }
        }
    }

    /** A subscriber connection to $node, to its server now (a Sentinel node's master). */
    private function start(int $node): void
    {
        $ctx = $this->driver->ctx;
        $host = redlock_ctx_node_host($ctx, $node);
        $addr = $host !== null ? [$host, redlock_ctx_node_port($ctx, $node)] : (string) redlock_ctx_node_path($ctx, $node);
        $sub = new Sub($node, Driver::socket($addr));
        $this->subs[$node] = $sub;
        Driver::spawn('a subscriber of the Swoole wake-ups', function () use ($sub, $addr, $ctx, $node): void {
            $this->read($sub, $addr, redlock_ctx_node_server_name($ctx, $node),
                redlock_ctx_node_server_ip($ctx, $node) === 1);
        });
    }

    /**
     * A subscriber's coroutine: connects, then reads until the connection
     * fails, the library says to close it, or it is dropped. It closes
     * nothing: it marks the subscriber dead, and the tending coroutine
     * tells the library and closes it.
     *
     * @param array{0: string, 1: int}|string $addr
     */
    private function read(Sub $sub, array|string $addr, ?string $name, bool $isIp): void
    {
        $sock = $sub->sock;
        $failed = $this->driver->connect($sock, $addr, $sub->node, $name, $isIp);
        if ($sub->dropped) {
            return;
        }
        if ($failed !== null) {
            $sub->dead = true;
            $this->signal->post();
            return;
        }
        $sub->connected = true;
        redlock_waiters_connected($this->waiters, $sub->node);
        $this->signal->post();
        while (!$sub->dropped) {
            $data = $sock->recv(self::READ_CHUNK, -1);
            if ($sub->dropped || $this->waiters === null) {
                return;   // dropped, or the client's wake-ups freed, while it read
            }
            if (!is_string($data) || $data === '') {
                $sub->dead = true;
                $this->signal->post();
                return;
            }
            $rc = redlock_waiters_received($this->waiters, $sub->node, $data, redlock_now_ms());
            $this->wakeWoken();
            if ($rc !== REDLOCK_OK) {
                $this->signal->post();   // the library says to close it: the next drive does
                return;
            }
        }
    }

    /** Ends a subscriber: its socket (which ends its read or connect). */
    private function drop(Sub $sub): void
    {
        $sub->dropped = true;
        if (($this->subs[$sub->node] ?? null) === $sub) {
            unset($this->subs[$sub->node]);
        }
        $sock = $sub->sock;
        $sub->sock = null;
        $sock?->close();
    }
}
