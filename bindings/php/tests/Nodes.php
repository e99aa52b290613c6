<?php

declare(strict_types=1);

use Redlock\Client;

/** The suite's redis-server nodes (scripts/redis-nodes.sh), and helpers the tests share. */
final class Nodes
{
    private static string $dir = '';
    /** @var list<string> */
    private static array $uris = [];
    /** @var list<Client> */
    private static array $clients = [];

    public static function script(): string
    {
        return getenv('REDLOCK_NODES_SCRIPT') ?: dirname(__DIR__, 3) . '/scripts/redis-nodes.sh';
    }

    public static function start(int $n): void
    {
        self::$dir = sys_get_temp_dir() . '/redlock-php-' . getmypid() . '-' . bin2hex(random_bytes(4));
        exec(escapeshellarg(self::script()) . ' start ' . escapeshellarg(self::$dir) . " $n", $out, $rc);
        if ($rc !== 0) {
            fwrite(STDERR, "could not start the nodes: " . implode("\n", $out) . "\n");
            exit(1);
        }
        self::$uris = preg_split('/\s+/', trim(file_get_contents(self::$dir . '/uris')));
        putenv('REDLOCK_NODES=' . implode(',', self::$uris));
        register_shutdown_function(static function (): void {
            self::$clients = [];
            gc_collect_cycles();
            exec(escapeshellarg(self::script()) . ' stop ' . escapeshellarg(self::$dir));
            exec('rm -rf ' . escapeshellarg(self::$dir));
        });
    }

    /** @return list<string> */
    public static function uris(): array
    {
        return self::$uris;
    }

    public static function dir(): string
    {
        return self::$dir;
    }

    /** A client of the nodes with these options, closed when the test ends (Nodes::closeAll). */
    public static function client(array $options = []): Client
    {
        return self::$clients[] = new Client(self::$uris, $options);
    }

    public static function closeAll(int $from = 0): void
    {
        foreach (array_slice(self::$clients, $from) as $client) {
            $client->close();
        }
        self::$clients = array_slice(self::$clients, 0, $from);
    }

    /** How many clients Nodes::client() made and closeAll() did not close yet. */
    public static function clientCount(): int
    {
        return count(self::$clients);
    }

    /** A name no other test uses. */
    public static function name(string $what): string
    {
        return "php:$what:" . bin2hex(random_bytes(4));
    }

    /**
     * Another PHP process running tests/holder.php: it takes $name (kind
     * plain, read, write, fair or permits=N) and prints "acquired", holds it
     * $holdMs then releases it and prints "released".
     *
     * @return array{0: resource, 1: array<int, resource>}
     */
    public static function holder(string $name, string $kind, int $holdMs): array
    {
        $argv = [PHP_BINARY, '-d', 'extension=' . self::extensionPath(), __DIR__ . '/holder.php',
                 implode(',', self::$uris), $name, $kind, (string) $holdMs];
        $proc = proc_open($argv, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        if (!is_resource($proc)) {
            throw new RuntimeException('could not start holder.php');
        }
        $first = trim((string) fgets($pipes[1]));
        if ($first !== 'acquired') {
            throw new RuntimeException("holder.php did not acquire $name: $first " . stream_get_contents($pipes[2]));
        }
        return [$proc, $pipes];
    }

    /**
     * Runs tests/holder.php for $name (kind as holder()) to its end, holding
     * nothing long: what it printed first ("refused" when another held it).
     */
    public static function runHolder(string $name, string $kind): string
    {
        $argv = [PHP_BINARY, '-d', 'extension=' . self::extensionPath(), __DIR__ . '/holder.php',
                 implode(',', self::$uris), $name, $kind, '0'];
        exec(implode(' ', array_map('escapeshellarg', $argv)) . ' 2>&1', $out, $rc);
        return trim($out[0] ?? "exit $rc");
    }

    /** Waits for a holder to end; what it printed after "acquired". */
    public static function endHolder(array $holder): string
    {
        [$proc, $pipes] = $holder;
        fclose($pipes[0]);
        $rest = trim(stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]));
        proc_close($proc);
        return $rest;
    }

    /** The extension's file for child processes: REDLOCK_PHP_EXTENSION (CTest sets it), else PHP's own "redlock". */
    public static function extensionPath(): string
    {
        return getenv('REDLOCK_PHP_EXTENSION') ?: 'redlock';
    }
}
