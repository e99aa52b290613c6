<?php
/*
 * The autoloader of the Redlock PHP layer (PSR-4: namespace Redlock\ from
 * src/). require it once; Composer users may name src/ in their own
 * "autoload": {"psr-4": {"Redlock\\": ".../bindings/php/src/"}} instead
 * (composer.json here says the same). The classes need the extension
 * (extension=redlock in an ini file: README.md).
 */

declare(strict_types=1);

spl_autoload_register(static function (string $class): void {
    $prefix = 'Redlock\\';
    if (strncmp($class, $prefix, strlen($prefix)) !== 0) {
        return;
    }
    $file = __DIR__ . '/src/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    if (is_file($file)) {
        require $file;
    }
});
