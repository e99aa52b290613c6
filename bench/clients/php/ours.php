<?php
/*
 * The bench cycle (bench/README.md) through the redlock PHP binding: its
 * blocking calls (ours-php), or with --swoole the same calls inside a Swoole
 * coroutine, where they drive the engine over Swoole's coroutine sockets
 * (ours-php-swoole). Takes the bench command line (--nodes, --cycles,
 * --warmup, --lease, --keys, --prefix) and prints the JSON figures.
 * REDLOCK_PHP_LIB names the binding's PHP layer (the build's
 * bindings/php/lib; by default the source tree's).
 */

declare(strict_types=1);

$opts = getopt('', ['nodes:', 'cycles:', 'warmup:', 'lease:', 'keys:', 'prefix:', 'swoole']);
$lib = getenv('REDLOCK_PHP_LIB') ?: dirname(__DIR__, 3) . '/bindings/php';
require $lib . '/autoload.php';

$nodes = explode(',', $opts['nodes']);
$cycles = (int) ($opts['cycles'] ?? 1000);
$warmup = (int) ($opts['warmup'] ?? 100);
$leaseMs = (int) ($opts['lease'] ?? 10000);
$keys = (int) ($opts['keys'] ?? 1);
$prefix = $opts['prefix'] ?? 'bench';
$swoole = isset($opts['swoole']);

function cpu_us(): array
{
    $ru = getrusage();
    return [$ru['ru_utime.tv_sec'] * 1000000 + $ru['ru_utime.tv_usec'],
            $ru['ru_stime.tv_sec'] * 1000000 + $ru['ru_stime.tv_usec']];
}

$bench = static function () use ($nodes, $cycles, $warmup, $leaseMs, $keys, $prefix, $swoole): void {
    $client = new Redlock\Client($nodes, ['node_timeout_ms' => intdiv($leaseMs, 20)]);
    $names = [];
    for ($i = 0; $i < $keys; $i++) {
        $names[] = "$prefix:$i";
    }
    $lock = $keys === 1 ? $client->getLock($names[0]) : $client->getMultiLock(...$names);
    $lease = $leaseMs / 1000;
    $cycle = static function () use ($lock, $lease): ?array {
        $t0 = hrtime(true);
        if (!$lock->tryLock(0, $lease)) {
            return null;
        }
        $t1 = hrtime(true);
        $lock->unlock();
        return [$t1 - $t0, hrtime(true) - $t0];
    };
    for ($i = 0; $i < $warmup; $i++) {
        try {
            $cycle();
        } catch (Redlock\RedlockException) {
            // warming up: failures are not counted
        }
    }
    $out = ['client' => $swoole ? 'ours-php-swoole' : 'ours-php', 'mode' => 'cycle', 'n' => count($nodes),
            'keys' => $keys, 'threads' => 1, 'ok' => 0, 'failed' => 0, 'lock_ns' => [], 'cycle_ns' => []];
    [$u0, $s0] = cpu_us();
    $w0 = hrtime(true);
    for ($i = 0; $i < $cycles; $i++) {
        try {
            $times = $cycle();
        } catch (Redlock\RedlockException) {
            $times = null;
        }
        if ($times === null) {
            $out['failed']++;
            continue;
        }
        $out['ok']++;
        $out['lock_ns'][] = $times[0];
        $out['cycle_ns'][] = $times[1];
    }
    $out['wall_s'] = (hrtime(true) - $w0) / 1e9;
    [$u1, $s1] = cpu_us();
    $out['cpu_user_us'] = $u1 - $u0;
    $out['cpu_sys_us'] = $s1 - $s0;
    $client->close();
    echo json_encode($out), "\n";
};

if ($swoole) {
    if (!extension_loaded('swoole')) {
        fwrite(STDERR, "ours-php-swoole: the swoole extension is not loaded\n");
        exit(1);
    }
    Swoole\Coroutine::set(['hook_flags' => 0]);
    Swoole\Coroutine\run($bench);
} else {
    $bench();
}
