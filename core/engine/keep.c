/* keep.c - the renewal of a kept lock (see keep.h). */
#include <stdio.h>

#include "client.h"
#include "keep.h"
#include "log.h"
#include "op.h"

#define ENOMEM_PAUSE_MS 10

/* When the lock is next due after a success at now: a third of its lease,
 * less its own spread (up to a twelfth of the lease, from its token). */
static int64_t due_after(const redlock_handle *h, int64_t now)
{
    int64_t lease = h->lease_ms;
    uint32_t hash = 2166136261u;   /* FNV-1a of the token */
    for (const char *p = h->token; *p; p++)
        hash = (hash ^ (unsigned char)*p) * 16777619u;
    int64_t spread = lease / 12 > 0 ? (int64_t)(hash % (uint32_t)(lease / 12 + 1)) : 0;
    return now + lease / 3 - spread;
}

void rl_keep_init(rl_keep *k, redlock_handle *h, int64_t now)
{
    *k = (rl_keep){ .h = h, .next_at = due_after(h, now), .early = RL_KEEP_WINDOW(h->lease_ms),
                    .until = h->expires_at };
}

/* "resource=... owner=...": which lock an event is about. */
static void describe(const redlock_handle *h, char *buf, size_t len)
{
    char resources[256], owner[RL_OWNER_LEN + 1];
    rl_log_resources(h->ctx, h->keys, resources, sizeof resources);
    rl_log_owner(h->token, owner);
    snprintf(buf, len, "resource=%s owner=%s", resources, owner);
}

/* Prepares ev as event `name` about k's lock when the hook takes level:
 * its text is "resource=... owner=..." then fields. */
static void prepare(const rl_keep *k, rl_keep_event *ev, int level, const char *name,
                    const char *fields, const char *message)
{
    if (!rl_logging(&k->h->ctx->log, level))
        return;
    char which[RL_KEEP_WHICH_LEN];
    describe(k->h, which, sizeof which);
    ev->level = level;
    ev->name = name;
    snprintf(ev->text, sizeof ev->text, "%s %s: %s", which, fields, message);
}

void rl_keep_tell(const rl_client *ctx, const rl_keep_event *ev)
{
    if (ev->name)
        rl_log_emit(&ctx->log, ev->level, ev->name, "%s", ev->text);
}

static void lose(rl_keep *k, int status, const char *message, rl_keep_event *ev)
{
    k->status = status;
    snprintf(k->message, sizeof k->message, "%s", message);
    char fields[RL_KEEP_FIELDS_LEN];
    snprintf(fields, sizeof fields, "code=%s", rl_log_code(status));
    prepare(k, ev, REDLOCK_LOG_ERROR, "lost", fields, k->message);
}

int rl_keep_next(rl_keep *k, int64_t now, int64_t *at, rl_keep_event *ev)
{
    int64_t expires_at = k->h->expires_at;
    *at = INT64_MAX;
    if (k->status == REDLOCK_OK && expires_at <= now) {
        char why[160];
        snprintf(why, sizeof why, "the lock's validity ran out %lld ms ago before an extension "
                 "succeeded", (long long)(now - expires_at));
        lose(k, REDLOCK_EEXPIRED, why, ev);
    }
    if (k->status != REDLOCK_OK)
        return RL_KEEP_LOST;
    *at = expires_at;
    if (k->extending)
        return RL_KEEP_WAIT;
    if (now >= k->next_at - k->early) {
        rl_keep_start(k);
        return RL_KEEP_EXTEND;
    }
    if (k->next_at < *at)
        *at = k->next_at;
    return RL_KEEP_WAIT;
}

void rl_keep_start(rl_keep *k)
{
    k->extending = true;
    k->until = k->h->expires_at;
}

int64_t rl_keep_when(const rl_keep *k)
{
    int64_t expires_at = k->h->expires_at;
    if (k->status != REDLOCK_OK)
        return INT64_MAX;
    return k->extending || expires_at < k->next_at ? expires_at : k->next_at;
}

void rl_keep_extended(rl_keep *k, int status, const char *message, int64_t now,
                      rl_keep_event *ev)
{
    k->extending = false;
    if (k->status != REDLOCK_OK)
        return;   /* lost meanwhile: a late success does not bring it back */
    rl_client *ctx = k->h->ctx;
    switch (status) {
    case REDLOCK_OK:
        if (now >= k->until) {
            /* Lost at that moment, whatever the nodes did since. */
            char why[160];
            snprintf(why, sizeof why, "the lock's validity ran out %lld ms before an extension "
                     "succeeded", (long long)(now - k->until));
            lose(k, REDLOCK_EEXPIRED, why, ev);
            return;
        }
        k->until = k->h->expires_at;
        k->next_at = due_after(k->h, now);
        k->early = RL_KEEP_WINDOW(k->h->lease_ms);
        return;
    case REDLOCK_ENOMEM:
        k->next_at = now + ENOMEM_PAUSE_MS;
        k->early = 0;
        return;
    case REDLOCK_ENOTHELD:
    case REDLOCK_EWRONGTYPE:
        lose(k, REDLOCK_ENOTHELD, message, ev);
        return;
    case REDLOCK_EEXPIRED:
    case REDLOCK_EINVAL:
        lose(k, status, message, ev);   /* it could not even start: nothing to retry */
        return;
    default:
        break;
    }
    /* The nodes failed: again after a pause, while validity lasts. */
    int64_t pause = ctx->opt.retry_delay_ms > ENOMEM_PAUSE_MS ? ctx->opt.retry_delay_ms
                                                              : ENOMEM_PAUSE_MS;
    k->next_at = now + pause;
    k->early = 0;
    char fields[RL_KEEP_FIELDS_LEN];
    snprintf(fields, sizeof fields, "code=%s retry_in_ms=%lld validity_ms=%lld",
             rl_log_code(status), (long long)pause, (long long)(k->h->expires_at - now));
    prepare(k, ev, REDLOCK_LOG_WARN, "renewal_failed", fields, message);
}
