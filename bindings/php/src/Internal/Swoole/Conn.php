<?php

declare(strict_types=1);

namespace Redlock\Internal\Swoole;

use Swoole\Coroutine\Socket;

/**
 * One connection of the driver to a node: the engine's redlock_conn (which
 * knows, for every byte, which command it belongs to) and the Swoole socket
 * that carries its bytes. A plain record: Driver moves its bytes.
 *
 * @internal
 */
final class Conn
{
    /** The socket once connected (and its TLS handshake done); null before, and once closed. */
    public ?Socket $sock = null;
    /** The operation it serves, while one does. */
    public ?Run $run = null;
    /** A coroutine connects it or reads its replies. */
    public bool $reader = false;
    /** The socket failed or the engine broke it: the engine was told. */
    public bool $dead = false;
    /** The engine's connection was freed: nothing more of it is told. */
    public bool $freed = false;
    /** Its operation ended while replies were still owed: its reader pools or closes it. */
    public bool $released = false;
    /** Taken from the idle pool rather than connected for its operation. */
    public bool $pooled = false;
    /** A new TLS connection that has read nothing yet (a refused session shows here). */
    public bool $tlsFresh = false;
    /** Idle until then (the engine's ms), then closed rather than used. */
    public int $idleUntil = 0;

    /**
     * @param mixed $conn the redlock_conn
     * @param array{0: string, 1: int}|string $addr host and port, or a unix socket's path
     */
    public function __construct(public mixed $conn, public int $node, public array|string $addr)
    {
    }
}
