/*
 * hold.c - the rules of a hold that every binding follows: what acquiring
 * a held lock again does (reentry), when a lock counts as lost, and what a
 * multi-lock answers to "is it locked, and for how long". redlock.h states
 * them; the bindings call these functions rather than deciding for
 * themselves.
 *
 * Reentry keeps the first terms: a second acquisition by the holder counts
 * a hold and changes neither the keys' TTL nor the renewal. So a kept lock
 * is never left on a lease shorter than its renewal's period, and a lock
 * with a lease is never given a new TTL that nothing renews.
 */
#include <stdio.h>

#include "clock.h"
#include "op.h"

/* Why h cannot be held any more (its keys can have expired), or NULL. */
static const char *gone(const redlock_handle *h, int64_t now, char *buf, size_t len)
{
    if (h->released)
        return h->ran_out ? "it was lost before it was released" : "it was released";
    if (h->lost)
        return "its renewal failed: it was lost";
    if (!h->held)
        return "the nodes no longer have it: it was lost";
    if (h->expires_at <= now) {
        snprintf(buf, len, "its lease ran out %lld ms ago", (long long)(now - h->expires_at));
        return buf;
    }
    return NULL;
}

int redlock_handle_lost(const redlock_handle *h)
{
    if (!h)
        return 0;
    if (h->released)
        return h->ran_out ? 1 : 0;
    char buf[64];
    return gone(h, rl_now_ms(), buf, sizeof buf) ? 1 : 0;
}

int redlock_handle_reenter(redlock_handle *h)
{
    rl_clear_error();
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "redlock_handle_reenter: h is NULL");
    char buf[64];
    const char *why = gone(h, rl_now_ms(), buf, sizeof buf);
    if (why)
        return rl_fail(REDLOCK_ENOTHELD, "acquiring again: the lock is not held: %s", why);
    atomic_fetch_add(&h->reentries, 1);
    return REDLOCK_OK;
}

int redlock_handle_holds(const redlock_handle *h)
{
    if (!h || h->released)
        return 0;
    return 1 + atomic_load(&h->reentries);
}

int redlock_handle_leave(redlock_handle *h, int *left)
{
    rl_clear_error();
    if (left)
        *left = 0;
    if (!h)
        return rl_fail(REDLOCK_EINVAL, "redlock_handle_leave: h is NULL");
    if (h->released)
        return rl_fail(REDLOCK_ENOTHELD, "leave: the lock was already released");
    int more = atomic_load(&h->reentries);
    if (more > 0)
        atomic_store(&h->reentries, more - 1);
    if (left)
        *left = more;
    return REDLOCK_OK;
}

int64_t redlock_inspect_merge(int64_t ttl_ms, int64_t more_ttl_ms)
{
    if (ttl_ms == -2)
        return more_ttl_ms < -2 ? -2 : more_ttl_ms;
    if (more_ttl_ms <= -2)
        return ttl_ms;
    if (ttl_ms == -1 || more_ttl_ms == -1)
        return -1;
    return ttl_ms > more_ttl_ms ? ttl_ms : more_ttl_ms;
}

int redlock_inspect_multi(redlock_ctx *ctx, const char *const *resources, size_t n_resources,
                          int *locked, int64_t *ttl_ms)
{
    if (locked)
        *locked = 0;
    if (ttl_ms)
        *ttl_ms = -2;
    rl_clear_error();
    if (!ctx)
        return rl_fail(REDLOCK_EINVAL, "ctx is NULL");
    if (!resources || n_resources == 0)
        return rl_fail(REDLOCK_EINVAL, "redlock_inspect_multi: %s",
                       resources ? "no resources" : "resources is NULL");
    if (n_resources > REDLOCK_MAX_RESOURCES)
        return rl_fail(REDLOCK_EINVAL, "redlock_inspect_multi: %zu resources, at most %d",
                       n_resources, REDLOCK_MAX_RESOURCES);
    for (size_t i = 0; i < n_resources; i++)
        if (!resources[i])
            return rl_fail(REDLOCK_EINVAL, "redlock_inspect_multi: resource %zu is NULL", i);
    int64_t answer = -2;
    for (size_t i = 0; i < n_resources; i++) {
        int one_locked = 0;
        int64_t one = -2;
        int rc = redlock_inspect(ctx, resources[i], &one_locked, &one);
        if (rc != REDLOCK_OK)
            return rc;
        answer = redlock_inspect_merge(answer, one_locked ? one : -2);
    }
    if (locked)
        *locked = answer != -2;
    if (ttl_ms)
        *ttl_ms = answer;
    return REDLOCK_OK;
}
