<?php
/*
 * The suite's nodes: five redis-server processes of its own, started with
 * the project's scripts/redis-nodes.sh (REDLOCK_NODES_SCRIPT names another)
 * on free loopback ports, and stopped when the run ends. Their URIs are in
 * REDLOCK_NODES for the tests (Nodes::uris()).
 */

declare(strict_types=1);

require __DIR__ . '/../autoload.php';
require __DIR__ . '/Nodes.php';

if (!extension_loaded('redlock')) {
    fwrite(STDERR, "the redlock extension is not loaded: run php -d extension=<build>/bindings/php/redlock.so\n");
    exit(1);
}
Nodes::start(5);
