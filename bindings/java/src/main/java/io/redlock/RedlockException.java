package io.redlock;

import io.redlock.internal.RedlockNativeConstants;
import java.nio.charset.StandardCharsets;

/**
 * A failure reported by the native library: its status code ({@link #getCode()}, one of the
 * {@code REDLOCK_E*} values of redlock.h) and the detail of the failure (which nodes, and why).
 *
 * <p>Each code with a meaning of its own has a subclass; codes without one (out of memory, a
 * failed system call, codes added by later versions) are thrown as a plain RedlockException.
 */
public class RedlockException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int code;

    public RedlockException(int code, String message) {
        super(message);
        this.code = code;
    }

    /** The library's status code, a negative {@code REDLOCK_E*} value. */
    public int getCode() {
        return code;
    }

    /**
     * The exception for a status code: the one table from codes to exceptions. Called by the JNI
     * layer with the thread's error detail as UTF-8.
     */
    static RedlockException fromNative(int code, byte[] message) {
        String text = new String(message, StandardCharsets.UTF_8);
        switch (code) {
            case RedlockNativeConstants.REDLOCK_ELOCKED:
                return new LockHeldException(code, text);
            case RedlockNativeConstants.REDLOCK_ENOQUORUM:
                return new NoQuorumException(code, text);
            case RedlockNativeConstants.REDLOCK_ENOTHELD:
                return new LockNotHeldException(code, text);
            case RedlockNativeConstants.REDLOCK_EINVAL:
                return new InvalidArgumentException(code, text);
            case RedlockNativeConstants.REDLOCK_EEXPIRED:
                return new LeaseExpiredException(code, text);
            case RedlockNativeConstants.REDLOCK_EUNSUPPORTED:
                return new UnsupportedException(code, text);
            case RedlockNativeConstants.REDLOCK_EAUTH:
                return new AuthException(code, text);
            case RedlockNativeConstants.REDLOCK_EWRONGTYPE:
                return new WrongTypeException(code, text);
            case RedlockNativeConstants.REDLOCK_EREDIS:
                return new RedisErrorException(code, text);
            case RedlockNativeConstants.REDLOCK_ECANCELED:
                return new CancelledException(code, text);
            case RedlockNativeConstants.REDLOCK_ETLS:
                return new TlsException(code, text);
            case RedlockNativeConstants.REDLOCK_ENOPERM:
                return new PermissionDeniedException(code, text);
            default:
                return new RedlockException(code, text);
        }
    }
}
