<?php

declare(strict_types=1);

namespace Redlock\Internal\Swoole;

use Redlock\Internal\Gate;
use Redlock\RedlockException;
use Swoole\Coroutine;
use Swoole\Coroutine\Socket;

/**
 * Inside a Swoole coroutine: the library's engine (redlock_engine.h) driven
 * over Swoole's coroutine sockets, so that no lock call blocks the worker.
 * The engine decides everything (votes, retries, pauses, what a late reply
 * means, which releases are owed and when to send them); this class moves
 * bytes and wakes an operation when it asked to be woken, as the OpenResty
 * driver does over cosockets (bindings/lua/redlock/_cosocket.lua and
 * _drive.lua).
 *
 * One Driver per client (its Gate), made by its first call in a coroutine.
 * An operation runs in the coroutine that called: it connects every node it
 * wants at once, each connection's connect and reads in a coroutine of its
 * own (its reader), while the calling coroutine alone writes (Swoole's
 * sockets are full duplex). Idle connections are pooled per node (at most
 * pool_size), with the engine's state of each (its handshake done); only
 * one with no reply owed goes back to the pool. The releases owed to nodes
 * that did not answer are delivered by a coroutine of the driver's, when the
 * engine says (redlock_ctx_owed_at). Wake-ups on release are Wakes', kept
 * locks Keeper's.
 *
 * @internal
 */
final class Driver
{
    /** The engine's "never" (INT64_MAX). */
    public const NEVER = PHP_INT_MAX;
    private const READ_CHUNK = 65536;
    /** An idle connection is used again within this time, else closed (ms). */
    private const IDLE_MS = 50000;
    private const AF_UNIX = 1;
    private const AF_INET = 2;
    private const SOCK_STREAM = 1;
    private const IPPROTO_TCP = 6;
    private const TCP_NODELAY = 1;
    private const ETIMEDOUT = 110;

    public int $connectTimeoutMs;
    public int $nodeTimeoutMs;
    /** Connections whose engine state is not freed yet. */
    public int $live = 0;
    /** Operations under way. */
    public int $runs = 0;
    private int $poolSize;
    /** @var array<int, list<Conn>> idle connections by node */
    private array $idle = [];
    /** @var array<int, array{0: string, 1: int}|string> each node's address (host and port, or a unix path) */
    private array $addr = [];
    /** @var array<int, bool> rediss:// nodes */
    private array $tls = [];
    private Tls $tlsSettings;
    private bool $delivering = false;
    private ?Signal $deliverSignal = null;
    private ?Wakes $wakes = null;
    private ?Keeper $keeper = null;
    /** @var list<Run> finished runs, for the next */
    private array $spareRuns = [];

    /** Whether the calling code runs in a Swoole coroutine: the lock calls then drive the engine here. */
    public static function inCoroutine(): bool
    {
        static $loaded = null;
        $loaded ??= extension_loaded('swoole');
        return $loaded && Coroutine::getCid() > 0;
    }

    /** @param mixed $ctx the redlock_ctx, which the gate frees only once this driver is idle */
    public function __construct(public Gate $gate, public mixed $ctx)
    {
        $this->poolSize = (int) redlock_ctx_get_option($ctx, 'pool_size');
        $this->connectTimeoutMs = (int) redlock_ctx_get_option($ctx, 'connect_timeout_ms');
        $this->nodeTimeoutMs = (int) redlock_ctx_get_option($ctx, 'node_timeout_ms');
        $this->tlsSettings = new Tls($ctx);
        for ($node = 0, $n = redlock_ctx_node_count($ctx); $node < $n; $node++) {
            $this->idle[$node] = [];
            $host = redlock_ctx_node_host($ctx, $node);
            $this->addr[$node] = $host !== null ? [$host, redlock_ctx_node_port($ctx, $node)]
                : (string) redlock_ctx_node_path($ctx, $node);
            $this->tls[$node] = redlock_ctx_node_tls($ctx, $node) === 1;
        }
    }

    public function wakes(): Wakes
    {
        return $this->wakes ??= new Wakes($this);
    }

    public function keeper(): Keeper
    {
        return $this->keeper ??= new Keeper($this);
    }

    /** The keeper, if the client keeps locks under Swoole. */
    public function currentKeeper(): ?Keeper
    {
        return $this->keeper;
    }

    /**
     * Drives $op to its end in this coroutine and frees it; throws its
     * failure (the exception of its status, with the engine's message).
     *
     * @return mixed a lock's handle, else the answer [locked, ttl_ms, deleted, available]
     */
    public function run(mixed $op, ?callable $beforeFree = null): mixed
    {
        [$status, $message, $result] = $this->drive($op, $beforeFree);
        if ($status < 0) {
            throw RedlockException::forCode($status, $message);
        }
        return $result;
    }

    /**
     * Drives $op to its end in this coroutine, doing what the engine says
     * (redlock_op_drive), then takes its connections back and frees it
     * ($beforeFree($op) just before).
     *
     * @return array{0: int, 1: string, 2: mixed} its status, its message, and
     *   a lock's handle, else its answer [locked, ttl_ms, deleted, available]
     */
    public function drive(mixed $op, ?callable $beforeFree = null): array
    {
        $run = array_pop($this->spareRuns) ?? new Run();
        $run->op = $op;
        $this->runs++;
        try {
            while (true) {
                $now = redlock_now_ms();
                [$what, $at] = redlock_op_drive($op, $now);
                while ($what & REDLOCK_DRIVE_CONNECT) {
                    $this->attachWanted($run, $now);
                    [$what, $at] = redlock_op_drive($op, $now);
                }
                // A write that failed changed the operation: it is driven again at once.
                $written = !($what & REDLOCK_DRIVE_WRITE) || $this->flush($run);
                if ($what & REDLOCK_DRIVE_DONE) {
                    if ($run->waitId !== 0) {
                        $this->wakes()->stop($run, $op);
                    }
                    // Decided at a quorum; while TAIL, every node reachable
                    // in time still gets the command.
                    if (!($what & REDLOCK_DRIVE_TAIL)) {
                        break;
                    }
                } elseif ($run->mayWait && ($what & REDLOCK_DRIVE_AWAITS)) {
                    $run->mayWait = false;
                    $this->wakes()->add($run);
                }
                if ($written) {
                    $this->pause($run, $at, $now);
                }
            }
            $status = redlock_op_status($op);
            $message = (string) redlock_op_message($op);
            $result = redlock_op_take_handle($op);
            if ($result === null) {
                $result = redlock_op_answer($op);
                $result[] = redlock_op_available($op);
            }
        } finally {
            if ($run->waitId !== 0) {
                $this->wakes()->stop($run, $op);
            }
            while (redlock_op_take_conn($op) !== null) {
                // each comes back to the driver: its Conn, in giveBack
            }
            if ($beforeFree !== null) {
                // A renewal reads each lock's outcome from it (given up when
                // it was not done).
                $beforeFree($op);
            }
            redlock_op_free($op);
            $this->runs--;
            $this->giveBack($run);
            // Its signal serves the next run (a Swoole channel is no small
            // allocation), once no post is left in it.
            $run->op = null;
            $run->mayWait = true;
            if (count($this->spareRuns) < 64 && !$run->signal->posted()) {
                $this->spareRuns[] = $run;
            }
        }
        if (!$this->gate->closed() && redlock_ctx_owes($this->ctx) === 1) {
            $this->startDelivery();
        }
        if (!is_object($result)) {
            // (A lock's handle holds the ctx until its Held frees it.)
            $this->gate->release();
        }
        return [$status, $message, $result];
    }

    /** The client is closed: idle connections go, renewals stop, the other coroutines end. */
    public function close(): void
    {
        foreach ($this->idle as $node => $pool) {
            $this->idle[$node] = [];
            foreach ($pool as $io) {
                $this->closeIo($io, null);
            }
        }
        $this->wakes?->close();
        $this->keeper?->halt();
        $this->deliverSignal?->post();
    }

    /** Whether nothing of the driver uses the ctx any more (its coroutines ended). */
    public function idle(): bool
    {
        return $this->live === 0 && $this->runs === 0 && !$this->delivering
            && ($this->wakes === null || $this->wakes->idle())
            && ($this->keeper === null || $this->keeper->idle());
    }

    /** Frees the engine objects of an idle driver, before the ctx. */
    public function free(): void
    {
        $this->wakes?->free();
        $this->keeper?->free();
    }

    /**
     * Connects $sock (made by socket()) to $addr, over TLS to a rediss://
     * node with a certificate for $name: null when done, else
     * [why, whether TLS failed].
     *
     * @param array{0: string, 1: int}|string $addr
     * @return array{0: string, 1: bool}|null
     */
    public function connect(Socket $sock, array|string $addr, int $node, ?string $name, bool $isIp): ?array
    {
        $timeout = $this->connectTimeoutMs / 1000;
        $ok = is_array($addr) ? $sock->connect($addr[0], $addr[1], $timeout) : $sock->connect($addr, 0, $timeout);
        if (!$ok) {
            return ['cannot connect: ' . $sock->errMsg, false];
        }
        if (is_array($addr)) {
            $sock->setOption(self::IPPROTO_TCP, self::TCP_NODELAY, 1);
        }
        if ($this->tls[$node]) {
            $why = $this->tlsSettings->handshake($sock, (string) $name, $isIp, $this->connectTimeoutMs);
            if ($why !== null) {
                return [$why, true];
            }
        }
        return null;
    }

    /** A new coroutine socket for $addr. */
    public static function socket(array|string $addr): Socket
    {
        if (!is_array($addr)) {
            return new Socket(\defined('AF_UNIX') ? \AF_UNIX : self::AF_UNIX, self::SOCK_STREAM, 0);
        }
        $v6 = filter_var($addr[0], FILTER_VALIDATE_IP, FILTER_FLAG_IPV6) !== false;
        $family = $v6 ? (\defined('AF_INET6') ? \AF_INET6 : 10) : (\defined('AF_INET') ? \AF_INET : self::AF_INET);
        return new Socket($family, self::SOCK_STREAM, 0);
    }

    /** Runs $fn in a new coroutine; what it throws is logged, never the process's end. */
    public static function spawn(string $what, callable $fn): void
    {
        Coroutine::create(static function () use ($what, $fn): void {
            try {
                $fn();
            } catch (\Throwable $e) {
                error_log("redlock: $what failed: " . $e);
            }
        });
    }

    // ---- an operation's connections

    private function attachWanted(Run $run, int $now): void
    {
        $node = redlock_op_next_wanted($run->op, 0);
        while ($node >= 0) {
            $this->attach($run, $node, $now);
            $node = redlock_op_next_wanted($run->op, $node + 1);
        }
    }

    /**
     * Gives the run's operation a connection to $node: an idle one, or a new
     * one unless the engine says none may be made now (it then fails the
     * node itself).
     */
    private function attach(Run $run, int $node, int $now): void
    {
        $op = $run->op;
        $io = redlock_op_wants_fresh($op, $node) === 0 ? $this->takeIdle($op, $node, $now) : null;
        if ($io !== null) {
            redlock_op_attach($op, $node, $io->conn, $now);
        } else {
            $conn = redlock_op_connect($op, $node, $now);
            if ($conn === null) {
                return;
            }
            $this->live++;
            // Where it goes: the node's address, or for a Sentinel node its
            // master or one of its sentinels, as the engine chose.
            $host = redlock_conn_host($conn);
            $io = new Conn($conn, $node, $host !== null ? [$host, redlock_conn_port($conn)] : $this->addr[$node]);
        }
        $io->run = $run;
        $io->released = false;
        $run->conns[] = $io;
        if (!$io->pooled) {
            $this->spawnReader($io);   // it connects, then the run writes
        }
        // A pooled one: its command goes out with the run's next flush,
        // which starts its reader.
    }

    /** The last idle connection to $node that fits the operation (on a Cluster node: one to its slot's master). */
    private function takeIdle(mixed $op, int $node, int $now): ?Conn
    {
        $pool = &$this->idle[$node];
        for ($i = count($pool) - 1; $i >= 0; $i--) {
            $io = $pool[$i];
            // Not one whose Sentinel node's master moved (not poolable), nor
            // one the node closed while it was idle.
            if ($now >= $io->idleUntil || redlock_conn_broken($io->conn) !== 0
                || redlock_conn_poolable($io->conn) !== 1 || !$io->sock?->checkLiveness()) {
                array_splice($pool, $i, 1);
                $this->closeIo($io, null);
            } elseif (redlock_op_fits($op, $node, $io->conn) === 1) {
                array_splice($pool, $i, 1);
                return $io;
            }
        }
        return null;
    }

    /**
     * Writes what the engine queued on each connection of the run (the
     * calling coroutine is their only writer), and sees that each that owes
     * replies has a reader. False when a socket failed (the engine was told).
     */
    private function flush(Run $run): bool
    {
        $ok = true;
        foreach ($run->conns as $io) {
            if ($io->sock !== null && !$io->dead && !$io->freed) {
                $ok = $this->write($io) && $ok;
            }
        }
        // Readers after all the writes: the first replies may be in by then,
        // and their readers take them without waiting.
        foreach ($run->conns as $io) {
            if (!$io->reader && $io->sock !== null && !$io->dead && !$io->freed
                && redlock_conn_owed($io->conn) > 0) {
                $this->spawnReader($io);
            }
        }
        return $ok;
    }

    /** Waits until $at (at most a second), or until an event wakes the run. */
    private function pause(Run $run, int $at, int $now): void
    {
        $ms = min($at - $now, 1000);
        if ($ms <= 0) {
            return;
        }
        $run->waiting = $at;
        $run->signal->wait($ms);
        $run->waiting = null;
    }

    /** The run is over: each connection goes back to the pool, or is closed, or its reader does so after the replies owed. */
    private function giveBack(Run $run): void
    {
        foreach ($run->conns as $io) {
            $io->run = null;
            if ($io->freed) {
                continue;
            }
            if ($io->reader) {
                $io->released = true;
            } elseif ($io->dead || $io->sock === null) {
                $this->closeIo($io, 'closed by the client');
            } else {
                $this->keep($io);
            }
        }
        $run->conns = [];
    }

    // ---- a connection

    /** Writes what the engine queued on a connection; false when the socket failed. */
    private function write(Conn $io): bool
    {
        $out = redlock_conn_output($io->conn);
        if ($out === '') {
            return true;
        }
        $sent = $io->sock->sendAll($out, $this->nodeTimeoutMs / 1000);
        if ($io->freed) {
            return false;
        }
        if ($sent !== strlen($out)) {
            redlock_conn_lost($io->conn, 'connection lost: ' . $io->sock->errMsg, redlock_now_ms());
            $io->dead = true;
            return false;
        }
        redlock_conn_wrote($io->conn, strlen($out));
        return true;
    }

    /**
     * Wakes the run of a connection, if it has one, after an event. A reply
     * ($replied: when it was read) only wakes it when the operation then has
     * something for it to do: it is decided, wants to be woken at another
     * time, or the reply queued a command.
     */
    private function poke(Conn $io, ?int $replied): void
    {
        $run = $io->run;
        if ($run === null) {
            return;
        }
        if (!$io->dead && $replied !== null && $run->waiting !== null
            && redlock_op_react($run->op, $io->conn, $replied, $run->waiting) === 0) {
            return;
        }
        $run->signal->post();
    }

    private function spawnReader(Conn $io): void
    {
        $io->reader = true;
        // (A method, not closures: one is started for every command.)
        Coroutine::create([$this, 'readerMain'], $io);
    }

    /** @internal a connection's reader coroutine (spawnReader) */
    public function readerMain(Conn $io): void
    {
        try {
            $this->reader($io);
        } catch (\Throwable $e) {
            error_log('redlock: a connection of the Swoole driver failed: ' . $e);
        } finally {
            $io->reader = false;
        }
    }

    /** Replies the connection still owes (0 once dead or freed). */
    private function owed(Conn $io): int
    {
        return $io->dead || $io->freed ? 0 : redlock_php_conn_reading($io->conn);
    }

    /**
     * A connection's reader: connects a new one first (and wakes its run,
     * which writes), then reads while replies are owed. It ends when none is
     * (a later command starts another), or the socket does.
     */
    private function reader(Conn $io): void
    {
        $conn = $io->conn;
        if ($io->sock === null) {
            if (!$this->open($io) && $io->freed) {
                return;
            }
            $this->poke($io, null);
        }
        $owed = $this->owed($io);
        while ($owed > 0 && !$io->freed && $io->sock !== null) {
            // Once the run let go of it, the reader also writes: a late reply
            // may queue a command (the release of an acquire that came too late).
            if ($io->released && !$this->write($io)) {
                break;
            }
            $data = $io->sock->recv(self::READ_CHUNK, $this->nodeTimeoutMs / 1000);
            if ($io->freed || $io->sock === null) {
                break;
            }
            $now = redlock_now_ms();
            if (is_string($data) && $data !== '') {
                $io->tlsFresh = false;
                if (redlock_php_conn_feed($conn, $data, $now) < 0) {
                    $io->dead = true;
                }
                $this->poke($io, $now);
                $owed = $this->owed($io);   // the run, woken at once, may have written more
                continue;
            }
            $timedOut = $data === false && $io->sock->errCode === self::ETIMEDOUT;
            $why = $data === '' ? 'closed by the server' : $io->sock->errMsg;
            if ($io->tlsFresh && !$timedOut) {
                // A TLS 1.3 node refuses a session (a client certificate
                // required) after the handshake: cut before any reply.
                redlock_conn_tls_failed($conn, "TLS session refused: the node cut it before any reply ($why); "
                    . 'does it require a client certificate (tls_cert_file)?', $now);
            } else {
                // A read timeout is the node's timeout: the connection is
                // given up, and the engine decides what its commands mean.
                redlock_conn_lost($conn, $timedOut ? "no answer within {$this->nodeTimeoutMs} ms"
                    : "connection lost: $why", $now);
            }
            $io->dead = true;
            $this->poke($io, null);
            break;
        }
        if ($io->released) {
            if ($io->dead || $io->freed) {
                $this->closeIo($io, null);
                // What it still owed may be releases owed now: delivered in time.
                if (!$this->gate->closed() && redlock_ctx_owes($this->ctx) === 1) {
                    $this->startDelivery();
                }
                $this->gate->release();
            } else {
                $io->reader = false;
                $this->keep($io);
            }
        } elseif ($io->dead && $io->sock !== null) {
            // The engine let go of it; its run frees it.
            $sock = $io->sock;
            $io->sock = null;
            $sock->close();
        }
    }

    /** Connects a new connection's socket (and its TLS); false when it failed, the engine told. */
    private function open(Conn $io): bool
    {
        $conn = $io->conn;
        $sock = self::socket($io->addr);
        $failed = $this->connect($sock, $io->addr, $io->node, redlock_conn_server_name($conn),
            redlock_conn_server_ip($conn) === 1);
        if ($io->freed) {
            $sock->close();
            return false;
        }
        if ($failed !== null) {
            $sock->close();
            [$why, $tls] = $failed;
            if ($tls) {
                redlock_conn_tls_failed($conn, $why, redlock_now_ms());
            } else {
                redlock_conn_lost($conn, $why, redlock_now_ms());
            }
            $io->dead = true;
            return false;
        }
        $io->sock = $sock;
        $io->tlsFresh = $this->tls[$io->node];
        redlock_conn_connected($conn, redlock_now_ms());
        return true;
    }

    /** A connection with nothing owed goes back to the idle pool; any other is closed. */
    private function keep(Conn $io): void
    {
        if ($io->sock !== null && !$io->freed && !$this->gate->closed()
            && count($this->idle[$io->node]) < $this->poolSize
            && redlock_conn_poolable($io->conn) === 1 && redlock_conn_owed($io->conn) === 0) {
            $io->pooled = true;
            $io->idleUntil = redlock_now_ms() + self::IDLE_MS;
            $this->idle[$io->node][] = $io;
            return;
        }
        $this->closeIo($io, 'closed by the client');
    }

    /**
     * Ends a connection: the engine is told how ($why; null when it knows)
     * and frees its state (what it still owed is settled), then the socket
     * is closed (which ends a read under way: its reader sees it freed).
     */
    private function closeIo(Conn $io, ?string $why): void
    {
        if (!$io->freed) {
            if ($why !== null) {
                redlock_conn_lost($io->conn, $why, redlock_now_ms());
            }
            $io->freed = true;
            redlock_conn_free($io->conn);
            $this->live--;
        }
        $sock = $io->sock;
        $io->sock = null;
        $sock?->close();
    }

    // ---- releases owed

    /**
     * Delivers the releases owed to nodes that did not answer, from a
     * coroutine of the driver's, while the client is open, when the engine
     * says (redlock_ctx_owed_at); a run that leaves more owed wakes it.
     */
    public function startDelivery(): void
    {
        if ($this->delivering) {
            $this->deliverSignal?->post();
            return;
        }
        $this->delivering = true;
        $this->deliverSignal ??= new Signal();
        self::spawn('the delivery of releases owed', function (): void {
            try {
                $this->deliver();
            } finally {
                $this->delivering = false;
                $this->gate->release();
            }
        });
    }

    private function deliver(): void
    {
        while (!$this->gate->closed()) {
            $now = redlock_now_ms();
            $at = redlock_ctx_owed_at($this->ctx, $now);
            if ($at === self::NEVER) {
                return;
            }
            if ($at > $now) {
                $this->deliverSignal->wait(min($at - $now, 1000));
                continue;
            }
            $this->drive(redlock_op_deliver($this->ctx, $now));
            $this->gate->poll();
        }
    }
}
