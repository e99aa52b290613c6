<?php

declare(strict_types=1);

namespace Redlock\Internal;

use Redlock\InvalidArgumentException;

/**
 * What the classes of the Redlock namespace read from the C library rather
 * than keep a copy of: the rules of arguments (redlock_arg_check), the
 * options' table, the fields of the nodes' health, lists of node URIs.
 * Internal: not part of the API.
 *
 * @internal
 */
final class Native
{
    /** "As long as it takes": the C library saturates a wait this long (2^62 ms). */
    public const FOREVER_MS = 4611686018427387904;

    /** Levels of events, PSR-3's names, from the library's (REDLOCK_LOG_*). */
    public const LEVELS = [
        'debug' => REDLOCK_LOG_DEBUG,
        'info' => REDLOCK_LOG_INFO,
        'notice' => REDLOCK_LOG_INFO,
        'warning' => REDLOCK_LOG_WARN,
        'error' => REDLOCK_LOG_ERROR,
    ];

    private function __construct()
    {
    }

    /** A time in seconds as the whole milliseconds the calls take, checked by the library's rule for $arg. */
    public static function millis(float $seconds, string $what, int $arg): int
    {
        return redlock_arg_check($arg, $what, $seconds * 1000);
    }

    public static function waitMs(float $wait, string $what = 'wait'): int
    {
        return self::millis($wait, $what, REDLOCK_ARG_WAIT);
    }

    public static function leaseMs(float $lease): int
    {
        return self::millis($lease, 'lease', REDLOCK_ARG_LEASE);
    }

    /** A semaphore's number of permits, checked by the library's rule (1 to REDLOCK_MAX_PERMITS). */
    public static function permits(int $permits): int
    {
        $number = (float) max(min($permits, 2 ** 53), -(2 ** 53));
        return redlock_arg_check(REDLOCK_ARG_PERMITS, 'permits', $number);
    }

    /**
     * The resources of a lock, checked: at least one, none twice.
     *
     * @param list<string> $names
     * @return list<string>
     */
    public static function names(array $names): array
    {
        if ($names === []) {
            throw new \ArgumentCountError('getMultiLock() needs at least one name');
        }
        $first = [];
        foreach (array_values($names) as $i => $name) {
            if (!is_string($name)) {
                throw new \TypeError('a lock name must be a string, not ' . get_debug_type($name));
            }
            if (isset($first[$name])) {
                throw new InvalidArgumentException(sprintf('name %d: %s is listed twice (as name %d)',
                    $i + 1, var_export($name, true), $first[$name]), REDLOCK_EINVAL);
            }
            $first[$name] = $i + 1;
        }
        return array_values($names);
    }

    /**
     * The node URIs of one string (an environment variable such as
     * REDLOCK_NODES): the library splits it, and refuses an empty URI.
     *
     * @return list<string>
     */
    public static function splitNodes(string $text): array
    {
        $uris = [];
        $count = redlock_uri_list_count($text);
        for ($i = 0; $i < $count; $i++) {
            $uris[] = redlock_uri_list_item($text, $i);
        }
        return $uris;
    }

    /**
     * Every option of the library with its default, as text, in the library's order.
     *
     * @return array<string, string>
     */
    public static function optionDefaults(): array
    {
        $defaults = [];
        $count = redlock_option_count();
        for ($i = 0; $i < $count; $i++) {
            $name = redlock_option_name($i);
            $defaults[$name] = redlock_option_default($name);
        }
        return $defaults;
    }

    /**
     * An option's value as the text the library takes, by the option's type
     * in the library's table (an unknown name: the library's message, which
     * lists the known ones).
     */
    public static function optionText(string $name, mixed $value): string
    {
        $type = redlock_option_type($name);
        if (is_string($value)) {
            return $value;
        }
        if (is_bool($value)) {
            if ($type !== REDLOCK_TYPE_BOOL) {
                throw new \TypeError("option $name is not a flag: give it an int, float or string");
            }
            return $value ? '1' : '0';
        }
        if (is_int($value) || is_float($value)) {
            return (string) $value;
        }
        throw new \TypeError("option $name must be a string, int, float or bool, not " . get_debug_type($value));
    }

    /**
     * What a client knows of each node (redlock_ctx_health), one array per
     * node, each field typed by the library: null where the node has none.
     *
     * @return list<array<string, string|int|float|null>>
     */
    public static function health(mixed $ctx): array
    {
        $text = redlock_swig_health($ctx);
        if ($text === null) {
            throw new \Redlock\OutOfMemoryException('redlock_ctx_health', REDLOCK_ENOMEM);
        }
        $fields = [];
        for ($i = 0; ($field = redlock_health_field($i)) !== null; $i++) {
            $fields[] = $field;
        }
        $nodes = [];
        $count = redlock_health_nodes($text);
        for ($node = 0; $node < $count; $node++) {
            $line = [];
            foreach ($fields as $field) {
                $value = redlock_health_value($text, $node, $field);
                $line[$field] = match (redlock_health_type($text, $node, $field)) {
                    REDLOCK_TYPE_NONE => null,
                    REDLOCK_TYPE_INT => (int) $value,
                    REDLOCK_TYPE_REAL => (float) $value,
                    default => $value,
                };
            }
            $nodes[] = $line;
        }
        return $nodes;
    }

    /** A time to live from the library's answer: null when not locked (-2), INF without expiry (-1), else seconds. */
    public static function timeToLive(int $ttlMs): ?float
    {
        if ($ttlMs === -2) {
            return null;
        }
        return $ttlMs < 0 ? INF : $ttlMs / 1000;
    }
}
