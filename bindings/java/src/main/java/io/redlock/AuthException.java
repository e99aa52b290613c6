package io.redlock;

/**
 * A node refused the credentials in its URI (REDLOCK_EAUTH). The message names the node, never
 * the password.
 */
public class AuthException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public AuthException(int code, String message) {
        super(code, message);
    }
}
