/* log.c - the client's events (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

void rl_log_emit(const rl_log *log, int level, const char *event, const char *fmt, ...)
{
    rl_log *c = (rl_log *)log;
    redlock_log_fn fn = atomic_load(&c->fn);
    if (!fn)
        return;
    char message[RL_ERRMSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    /* A resource name or a node's answer in the message may hold a newline
     * or another control byte: escaped, it cannot forge a line of the log. */
    if (rl_has_controls(message)) {
        char escaped[RL_ERRMSG_MAX];
        fn(atomic_load(&c->data), level, event,
           rl_escape_controls(escaped, sizeof escaped, message));
        return;
    }
    fn(atomic_load(&c->data), level, event, message);
}

void rl_log_owner(const char *token, char out[RL_OWNER_LEN + 1])
{
    size_t len = strnlen(token, RL_OWNER_LEN);
    memcpy(out, token, len);
    out[len] = '\0';
}

const char *rl_log_code(int code)
{
    switch (code) {
    case REDLOCK_OK:           return "ok";
    case REDLOCK_ELOCKED:      return "locked";
    case REDLOCK_ENOQUORUM:    return "noquorum";
    case REDLOCK_ENOTHELD:     return "notheld";
    case REDLOCK_EINVAL:       return "inval";
    case REDLOCK_ENOMEM:       return "nomem";
    case REDLOCK_EEXPIRED:     return "expired";
    case REDLOCK_EUNSUPPORTED: return "unsupported";
    case REDLOCK_EAUTH:        return "auth";
    case REDLOCK_EWRONGTYPE:   return "wrongtype";
    case REDLOCK_EREDIS:       return "redis";
    case REDLOCK_ESYSTEM:      return "system";
    case REDLOCK_ECANCELED:    return "canceled";
    case REDLOCK_ETLS:         return "tls";
    case REDLOCK_ENOPERM:      return "noperm";
    default:                   return "unknown";
    }
}
