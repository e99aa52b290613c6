<?php

declare(strict_types=1);

use Swoole\Coroutine;

/** Runs a test's body inside Swoole's scheduler. */
final class Coroutines
{
    /**
     * Runs $fn in a coroutine of Swoole\Coroutine\run() and returns what it
     * returned, once every coroutine ended; what it threw (a failed
     * assertion too) is thrown here, outside Swoole. The clients made in it
     * (Nodes::client) are closed inside, so their coroutines end.
     */
    public static function run(callable $fn): mixed
    {
        $result = null;
        $error = null;
        $clients = Nodes::clientCount();
        Coroutine\run(static function () use ($fn, &$result, &$error, $clients): void {
            try {
                $result = $fn();
            } catch (\Throwable $e) {
                $error = $e;
            } finally {
                Nodes::closeAll($clients);
            }
        });
        if ($error !== null) {
            throw $error;
        }
        return $result;
    }

    /** Milliseconds of the monotonic clock. */
    public static function nowMs(): float
    {
        return hrtime(true) / 1e6;
    }

    /**
     * Deletes $key on every node of the suite, over coroutine sockets: the
     * lock is gone without its holder knowing.
     */
    public static function deleteEverywhere(string $key): void
    {
        foreach (Nodes::uris() as $uri) {
            $url = parse_url($uri);
            $sock = new Coroutine\Socket(AF_INET, SOCK_STREAM, 0);
            if (!$sock->connect($url['host'], $url['port'], 2)) {
                throw new RuntimeException("cannot reach $uri: " . $sock->errMsg);
            }
            $sock->sendAll(sprintf("*2\r\n$3\r\nDEL\r\n$%d\r\n%s\r\n", strlen($key), $key));
            $sock->recv(64, 2);
            $sock->close();
        }
    }
}
