<?php

declare(strict_types=1);

namespace Redlock\Internal\Swoole;

use Redlock\Internal\Held;
use Redlock\LockNotHeldException;
use Redlock\RedlockException;

/**
 * Inside Swoole: kept locks (taken with no lease), renewed until unlocked,
 * and their loss told.
 *
 * The library's keeper (redlock_keeper) decides everything: when each lock
 * is due (a third of its lease after each success, again after a pause when
 * the nodes fail), which renewals go together and how many run at once, and
 * which locks were lost (a quorum says the key is not ours, or validity ran
 * out first). One coroutine per client, while it keeps locks, drives it:
 * runs each renewal it hands out in a coroutine of its own (over the
 * Driver), marks lost the locks it reports, and tells their onLost
 * callbacks, each from a coroutine of its own. The events renewal_failed and
 * lost come from it. As the OpenResty driver's bindings/lua/redlock/_keeper.lua.
 *
 * @internal
 */
final class Keeper
{
    /** The keeper looks at its locks at least this often (ms). */
    private const WATCH_MS = 1000;

    /** @var mixed the redlock_keeper while its coroutine runs */
    private mixed $keeper = null;
    /** @var array<int, Held> the locks in it by id, until removed and no renewal of them runs */
    private array $holds = [];
    /** @var array<int, true> ids removed from the keeper (renewed no more) */
    private array $removed = [];
    /** @var list<Held> locks lost whose callbacks are still to run */
    private array $untold = [];
    /** @var array<int, mixed> handles to free once their renewal ended (released outside a coroutine) */
    private array $freeWhenEnded = [];
    private int $lastId = 0;
    private Signal $signal;
    /** @var list<Signal> coroutines waiting for a renewal to end */
    private array $changed = [];
    private bool $running = false;

    public function __construct(private Driver $driver)
    {
        $this->signal = new Signal();
    }

    /** Keeps $held's lock ($handle, held now) under a new id, which it returns; throws when it cannot. */
    public function add(Held $held, mixed $handle): int
    {
        if (!$this->running) {
            $this->keeper ??= redlock_keeper_new($this->driver->ctx);
        }
        $id = ++$this->lastId;
        redlock_keeper_add($this->keeper, $id, $handle, redlock_now_ms());
        $this->holds[$id] = $held;
        if ($this->running) {
            $this->signal->post();
        } else {
            $this->running = true;
            Driver::spawn('the Swoole keeper of kept locks', function (): void {
                try {
                    $this->watch();
                } finally {
                    $this->running = false;
                    $this->free();
                    $this->driver->gate->release();
                }
            });
        }
        return $id;
    }

    /**
     * Stops keeping $id: no renewal of it starts from now on. In a
     * coroutine, returns once no renewal of it runs; outside one (a release
     * from outside Swoole's coroutines), true when one still runs: $handle
     * is then freed once it ended.
     */
    public function remove(int $id, mixed $handle = null): bool
    {
        $this->stopRenewing($id);
        if (!isset($this->holds[$id])) {
            return false;
        }
        if (Driver::inCoroutine()) {
            while (isset($this->holds[$id])) {
                $this->waitChange();
            }
            return false;
        }
        if ($handle !== null) {
            $this->freeWhenEnded[$id] = $handle;
        }
        return true;
    }

    /**
     * The owner's extension of kept $id by $leaseMs, over the driver,
     * through the keeper (which plans the renewals from it). It waits for a
     * renewal of the lock under way first: one at a time.
     */
    public function extend(Held $held, int $id, int $leaseMs): void
    {
        while ($this->keeper !== null && !isset($this->removed[$id]) && redlock_keeper_busy($this->keeper, $id) === 1) {
            $this->waitChange();
        }
        $this->checkKept($held, $id);
        $failure = null;
        try {
            // When it cannot start, the keeper knows already.
            $op = redlock_keeper_extend($this->keeper, $id, $leaseMs, redlock_now_ms());
            [$status, $message] = $this->runKept($op);
            if ($status < 0) {
                $failure = RedlockException::forCode($status, $message);
            }
        } catch (RedlockException $e) {
            $failure = $e;
        }
        $this->look($id);
        $this->checkKept($held, $id);
        if ($failure !== null) {
            throw $failure;
        }
    }

    /** The lock's validity ran out: the keeper finds it lost now, and why. */
    public function ask(int $id): void
    {
        if ($this->keeper === null || isset($this->removed[$id])) {
            return;
        }
        redlock_keeper_drive($this->keeper, redlock_now_ms());
        $this->driver->gate->poll();
        $this->look($id);
        $this->signal->post();   // the keeper's coroutine takes what it has to say
    }

    /** The client is closed: no renewal starts from now on. */
    public function halt(): void
    {
        if ($this->keeper !== null) {
            redlock_keeper_halt($this->keeper);
        }
        $this->signal->post();
    }

    public function idle(): bool
    {
        return !$this->running;
    }

    public function free(): void
    {
        if ($this->keeper !== null && !$this->running) {
            redlock_keeper_free($this->keeper);
            $this->keeper = null;
        }
    }

    /** Takes $id out of the keeper (once); it stays among the holds while a renewal of it runs. */
    private function stopRenewing(int $id): void
    {
        if (isset($this->removed[$id]) || !isset($this->holds[$id])) {
            return;
        }
        $this->removed[$id] = true;
        if ($this->keeper === null || redlock_keeper_remove($this->keeper, $id) !== 1) {
            $this->ended($id);
        }
        $this->signal->post();
    }

    /** No renewal of $id runs any more: it leaves the holds. */
    private function ended(int $id): void
    {
        unset($this->holds[$id], $this->removed[$id]);
        if (isset($this->freeWhenEnded[$id])) {
            redlock_handle_free($this->freeWhenEnded[$id]);
            unset($this->freeWhenEnded[$id]);
        }
    }

    /** Marks $id's lock lost when the keeper says it is. */
    private function look(int $id): void
    {
        if ($this->keeper !== null && isset($this->holds[$id]) && !isset($this->removed[$id])) {
            $status = redlock_keeper_status($this->keeper, $id);
            if ($status !== REDLOCK_OK) {
                $this->lose($id, $status, (string) redlock_keeper_message($this->keeper, $id));
            }
        }
    }

    /** Marks $id's lock lost (once), its callbacks to be told from a coroutine of their own. */
    private function lose(int $id, int $status, string $message): void
    {
        $held = $this->holds[$id] ?? null;
        if ($held !== null && $held->markLost($status, $message)) {
            $this->untold[] = $held;
            $this->signal->post();
        }
    }

    /** LockNotHeldException when $held's kept lock was lost or released. */
    private function checkKept(Held $held, int $id): void
    {
        $error = $held->lostError();
        if ($error !== null) {
            throw new LockNotHeldException('the kept lock was lost: ' . $error->getMessage(), REDLOCK_ENOTHELD);
        }
        if (isset($this->removed[$id]) || !isset($this->holds[$id])) {
            throw new LockNotHeldException('the lock was released', REDLOCK_ENOTHELD);
        }
    }

    /** Waits until a renewal ended (or a second passed). */
    private function waitChange(): void
    {
        $signal = new Signal();
        $this->changed[] = $signal;
        $signal->wait(self::WATCH_MS);
    }

    private function changed(): void
    {
        $waiting = $this->changed;
        $this->changed = [];
        foreach ($waiting as $signal) {
            $signal->post();
        }
    }

    /**
     * An operation of the keeper's run over the driver, its end told to the
     * keeper (given up when it failed first).
     *
     * @return array{0: int, 1: string} its status and message
     */
    private function runKept(mixed $op): array
    {
        $keeper = $this->keeper;
        try {
            [$status, $message] = $this->driver->drive($op, static function (mixed $done) use ($keeper): void {
                redlock_keeper_op_ended($keeper, $done, redlock_now_ms());
            });
        } finally {
            $this->driver->gate->poll();
            $this->changed();
            $this->signal->post();
        }
        return [$status, $message];
    }

    /**
     * The keeper's coroutine: while the client keeps locks (once it is
     * closed it renews no more, and still tells the losses when the validity
     * runs out), then it frees the keeper.
     */
    private function watch(): void
    {
        $k = $this->keeper;
        while (true) {
            if ($this->driver->gate->closed()) {
                redlock_keeper_halt($k);
            }
            $now = redlock_now_ms();
            [$what, $at] = redlock_keeper_drive($k, $now);
            $this->driver->gate->poll();
            if ($what & REDLOCK_KEEPER_LOST) {
                while (($id = redlock_keeper_next_lost($k)) !== 0) {
                    $this->lose($id, redlock_keeper_status($k, $id), (string) redlock_keeper_message($k, $id));
                    $this->stopRenewing($id);
                }
            }
            if ($what & REDLOCK_KEEPER_ENDED) {
                while (($id = redlock_keeper_next_ended($k)) !== 0) {
                    $this->ended($id);
                }
                $this->changed();
            }
            // Coroutines run at once until they first wait, so they start
            // once the keeper was asked (a callback may keep a new lock).
            if ($what & REDLOCK_KEEPER_RUN) {
                while (($op = redlock_keeper_take_op($k)) !== null) {
                    Driver::spawn('a renewal of kept locks', function () use ($op): void {
                        $this->runKept($op);
                    });
                }
            }
            $untold = $this->untold;
            $this->untold = [];
            foreach ($untold as $held) {
                Driver::spawn('an onLost callback', static function () use ($held): void {
                    $held->tellLost();
                });
            }
            if ($this->holds === [] && $this->untold === []) {
                return;
            }
            $this->signal->wait(max(1, min($at, $now + self::WATCH_MS) - redlock_now_ms()));
        }
    }
}
