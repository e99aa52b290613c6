/* errors.c - status code descriptions, and the calling thread's failure message (base.h). */
#include <stdarg.h>
#include <stdio.h>

#include "base.h"

const char *redlock_strerror(int code)
{
    switch (code) {
    case REDLOCK_OK:           return "success";
    case REDLOCK_ELOCKED:      return "the resource is held by someone else";
    case REDLOCK_ENOQUORUM:    return "too few nodes answered to reach a quorum";
    case REDLOCK_ENOTHELD:     return "the lock is not held (expired, lost or released)";
    case REDLOCK_EINVAL:       return "invalid argument";
    case REDLOCK_ENOMEM:       return "out of memory";
    case REDLOCK_EEXPIRED:     return "the lease ran out: while the lock was being acquired, or before a kept lock's renewal succeeded";
    case REDLOCK_EUNSUPPORTED: return "not supported by this build, the system or the nodes";
    case REDLOCK_EAUTH:        return "a node refused the credentials";
    case REDLOCK_EWRONGTYPE:   return "the key exists and does not hold a lock";
    case REDLOCK_EREDIS:       return "nodes answered with a Redis error";
    case REDLOCK_ESYSTEM:      return "an operating system call failed";
    case REDLOCK_ECANCELED:    return "the wait was cancelled";
    case REDLOCK_ETLS:         return "a TLS handshake or certificate check failed";
    case REDLOCK_ENOPERM:      return "a node's ACL does not allow a command or key the library uses";
    default:                   return "unknown status code";
    }
}

const char *redlock_errmsg(void)
{
    return rl_errmsg();
}
