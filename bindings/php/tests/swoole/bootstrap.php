<?php
/*
 * The Swoole suite's nodes, as the main suite's (../bootstrap.php): five
 * redis-server processes of its own. Without the swoole extension it says
 * so and exits 77, which CTest counts as skipped.
 */

declare(strict_types=1);

if (!extension_loaded('swoole')) {
    fwrite(STDERR, "php_swoole: skipped: the swoole extension is not loaded "
        . "(scripts/swoole.sh builds it from ../shared/third_party)\n");
    exit(77);
}
// Swoole hooks PHP's own I/O in its coroutines; its curl hooks would warn
// without PHP's curl extension, which nothing here uses.
Swoole\Coroutine::set(['hook_flags' => SWOOLE_HOOK_ALL & ~SWOOLE_HOOK_CURL & ~SWOOLE_HOOK_NATIVE_CURL]);

require __DIR__ . '/../bootstrap.php';
require __DIR__ . '/Coroutines.php';
