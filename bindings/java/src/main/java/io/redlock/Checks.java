package io.redlock;

import io.redlock.internal.RedlockNative;
import io.redlock.internal.RedlockNativeConstants;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The checks of arguments that the library makes for every language (redlock_arg_check): a
 * wait, a lease and a semaphore's permits, each with one rule and one message, such as "lease
 * must be a time above 0 ms and at most 2147483647 ms, not -1000 ms".
 */
final class Checks {
    private Checks() {
    }

    /**
     * A lease of leaseTime units, in the whole milliseconds the library takes (a fraction rounded
     * up); IllegalArgumentException with the library's message when out of its range.
     */
    static long leaseMs(long leaseTime, TimeUnit unit) {
        return ms(RedlockNativeConstants.REDLOCK_ARG_LEASE, "lease", leaseTime, unit);
    }

    /** A wait of waitTime units, likewise: 0 or more. */
    static long waitMs(long waitTime, TimeUnit unit) {
        return ms(RedlockNativeConstants.REDLOCK_ARG_WAIT, "wait", waitTime, unit);
    }

    /** A semaphore's permits: InvalidArgumentException with the library's message. */
    static int permits(int permits) {
        return (int) RedlockNative.redlock_java_arg_check(RedlockNativeConstants.REDLOCK_ARG_PERMITS,
                "permits", permits);
    }

    private static long ms(int arg, String what, long amount, TimeUnit unit) {
        Objects.requireNonNull(unit, "unit");
        // Milliseconds with their fraction: the library rounds them, as every language's.
        double ms = amount * (unit.toNanos(1) / 1e6);
        try {
            return RedlockNative.redlock_java_arg_check(arg, what, ms);
        } catch (InvalidArgumentException refused) {
            throw new IllegalArgumentException(refused.getMessage(), refused);
        }
    }
}
