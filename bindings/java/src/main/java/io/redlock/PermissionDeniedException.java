package io.redlock;

/**
 * A node's ACL does not allow a command or key the library uses (REDLOCK_ENOPERM, the node's
 * NOPERM reply). The message names each such node and what it refused, e.g. "no permissions to
 * run the 'incr' command": the ACL user needs that permission (see docs/guarantees.md, least-privilege
 * ACL).
 */
public class PermissionDeniedException extends RedlockException {
    private static final long serialVersionUID = 1L;

    public PermissionDeniedException(int code, String message) {
        super(code, message);
    }
}
