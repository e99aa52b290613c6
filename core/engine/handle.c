/* handle.c - a lock's handle (see handle.h): its names checked, sorted
 * and split by slot for a Cluster node, and its lease checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "check.h"
#include "client.h"
#include "log.h"
#include "node.h"
#include "handle.h"
#include "owed.h"
#include "quorum.h"
#include "slots.h"

void rl_handle_free(redlock_handle *h)
{
    if (!h)
        return;
    rl_cmd_unref(h->acquired_by);
    rl_keys_unref(h->keys);
    for (size_t g = 0; g < h->n_parts; g++)
        rl_keys_unref(h->parts[g]);
    free(h->parts);
    free(h->fences);
    free(h);
}

static int compare_keys(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Fails when two keys are the same. */
static int check_distinct(const rl_client *ctx, const rl_keys *keys)
{
    if (keys->n < 2)
        return REDLOCK_OK;
    char **sorted = malloc(keys->n * sizeof *sorted);
    if (!sorted)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    memcpy(sorted, keys->k, keys->n * sizeof *sorted);
    qsort(sorted, keys->n, sizeof *sorted, compare_keys);
    int rc = REDLOCK_OK;
    for (size_t i = 1; i < keys->n && rc == REDLOCK_OK; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0)
            rc = rl_fail(REDLOCK_EINVAL, "resource '%.200s' is listed twice",
                         sorted[i] + ctx->opt.key_prefix_len);
    free(sorted);
    return rc;
}

/* Whether a node of the client is a Cluster. */
bool rl_handle_has_cluster(const rl_client *ctx)
{
    for (size_t i = 0; i < ctx->n_nodes; i++)
        if (ctx->nodes[i].addr.kind == RL_NODE_CLUSTER)
            return true;
    return false;
}

/* On a Cluster node, one command's keys must share a slot (a script's keys
 * must: CROSSSLOT), and so must a lock's fencing counter: the key, a zero
 * byte and "fence" when the key has a hash tag, else the same with the key
 * as its tag ({key}), which needs a key without a '}'. A multi-lock whose
 * keys span slots is taken one slot at a time there (split), but not with
 * fencing: its counters' second round is one command per node. */
static int check_cluster(const rl_client *ctx, const rl_keys *keys)
{
    if (keys->n == 0 || !rl_handle_has_cluster(ctx))
        return REDLOCK_OK;
    const char *first = keys->k[0];
    int first_slot = rl_key_slot(first, strlen(first));
    size_t p = ctx->opt.key_prefix_len;
    for (size_t i = 1; ctx->opt.fencing && i < keys->n; i++)
        if (rl_key_slot(keys->k[i], strlen(keys->k[i])) != first_slot)
            return rl_fail(REDLOCK_EINVAL,
                           "resources '%.100s' and '%.100s' hash to different slots of a "
                           "Cluster node: with fencing, the names of one multi-lock must share "
                           "a hash tag there (the part in braces, as in {order:7}:items)",
                           first + p, keys->k[i] + p);
    for (size_t i = 0; ctx->opt.fencing && i < keys->n; i++)
        if (!rl_key_has_tag(keys->k[i]) && strchr(keys->k[i], '}'))
            return rl_fail(REDLOCK_EINVAL,
                           "resource '%.100s': with fencing on a Cluster node, a name with a "
                           "'}' needs a hash tag (the part in braces, as in {order:7}), so "
                           "that its fencing counter lives in its slot", keys->k[i] + p);
    return REDLOCK_OK;
}

/* The slot of a lock's keys (of its first part when it has parts), for a
 * Cluster node's connection; -1 for none. */
int rl_handle_keys_slot(const rl_keys *keys)
{
    return keys && keys->n > 0 ? rl_key_slot(keys->k[0], strlen(keys->k[0])) : -1;
}

typedef struct slotted {
    int slot;
    size_t at;
} slotted;

static int compare_slotted(const void *a, const void *b)
{
    const slotted *x = a, *y = b;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* On a client with a Cluster node, the keys of a multi-lock that hash to
 * several slots are sorted by slot (in their order within one), and each
 * slot's keys become a part of the handle (op.h). */
static int split(const rl_client *ctx, redlock_handle *h)
{
    rl_keys *keys = h->keys;
    if (keys->n < 2 || !rl_handle_has_cluster(ctx))
        return REDLOCK_OK;
    slotted *order = malloc(keys->n * sizeof *order);
    char **sorted = malloc(keys->n * sizeof *sorted);
    if (!order || !sorted) {
        free(order);
        free(sorted);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    size_t n_parts = 1;
    for (size_t i = 0; i < keys->n; i++) {
        order[i] = (slotted){ .slot = rl_key_slot(keys->k[i], strlen(keys->k[i])), .at = i };
        n_parts += i > 0 && order[i].slot != order[0].slot;
    }
    if (n_parts == 1) {
        free(order);
        free(sorted);
        return REDLOCK_OK;
    }
    qsort(order, keys->n, sizeof *order, compare_slotted);
    n_parts = 1;
    for (size_t i = 0; i < keys->n; i++) {
        sorted[i] = keys->k[order[i].at];
        n_parts += i > 0 && order[i].slot != order[i - 1].slot;
    }
    memcpy(keys->k, sorted, keys->n * sizeof *sorted);
    free(sorted);
    int rc = REDLOCK_OK;
    if (!(h->parts = calloc(n_parts, sizeof *h->parts)))
        rc = REDLOCK_ENOMEM;
    for (size_t i = 0, start = 0; rc == REDLOCK_OK && i < keys->n; i++) {
        if (i + 1 < keys->n && order[i + 1].slot == order[i].slot)
            continue;
        rl_keys *part = rl_keys_new(i + 1 - start);
        if (!part) {
            rc = REDLOCK_ENOMEM;
            break;
        }
        h->parts[h->n_parts++] = part;
        for (size_t k = start; k <= i; k++)
            if (!(part->k[k - start] = strdup(keys->k[k])))
                rc = REDLOCK_ENOMEM;
        start = i + 1;
    }
    free(order);
    return rc == REDLOCK_OK ? rc : rl_fail(rc, "out of memory");
}

/* A handle for the given resources, their keys prefixed; names checked. */
int rl_handle_new(redlock_handle **out, rl_client *ctx, const char *const *names, size_t n)
{
    const rl_options *o = &ctx->opt;
    redlock_handle *h = calloc(1, sizeof *h);
    if (!h || !(h->keys = rl_keys_new(n))) {
        free(h);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    h->ctx = ctx;
    int rc = REDLOCK_OK;
    for (size_t i = 0; i < n && rc == REDLOCK_OK; i++) {
        size_t len = names[i] ? strnlen(names[i], REDLOCK_MAX_NAME_BYTES + 1) : 0;
        if (!names[i])
            rc = rl_fail(REDLOCK_EINVAL, "resource name %zu is NULL", i);
        else if (len == 0)
            rc = rl_fail(REDLOCK_EINVAL, "resource name %zu is empty", i);
        else if (o->key_prefix_len + len > REDLOCK_MAX_NAME_BYTES)
            rc = rl_fail(REDLOCK_EINVAL, "resource name %zu is too long (key_prefix and name "
                         "together may have at most 4096 bytes)", i);
        else if (!(h->keys->k[i] = malloc(o->key_prefix_len + len + 1)))
            rc = rl_fail(REDLOCK_ENOMEM, "out of memory");
        else {
            memcpy(h->keys->k[i], o->key_prefix, o->key_prefix_len);
            memcpy(h->keys->k[i] + o->key_prefix_len, names[i], len + 1);
        }
    }
    if (rc == REDLOCK_OK)
        rc = check_distinct(ctx, h->keys);
    if (rc == REDLOCK_OK)
        rc = check_cluster(ctx, h->keys);
    if (rc == REDLOCK_OK)
        rc = split(ctx, h);
    if (rc != REDLOCK_OK) {
        rl_handle_free(h);
        return rc;
    }
    *out = h;
    return REDLOCK_OK;
}

/* A lease must not be longer than max_lease_ms: the guard of a node that
 * may have lost keys lasts that long, and holds only if no lease outlives
 * it. */
int rl_handle_check_lease(const rl_client *ctx, int64_t ttl_ms)
{
    int rc = rl_check_arg(NULL, REDLOCK_ARG_LEASE, NULL, (double)ttl_ms);
    if (rc != REDLOCK_OK)
        return rc;
    if (ttl_ms > ctx->opt.max_lease_ms)
        return rl_fail(REDLOCK_EINVAL,
                       "a lease of %lld ms is longer than max_lease_ms (%lld ms), the longest "
                       "lease any client of these nodes may use; raise max_lease_ms on every "
                       "client, or use a shorter lease (a kept lock's is watchdog_lease_ms)",
                       (long long)ttl_ms, (long long)ctx->opt.max_lease_ms);
    return REDLOCK_OK;
}
