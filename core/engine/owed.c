/* owed.c - what a command leaves owed once nobody waits for it, and the
 * releases owed to nodes (see owed.h). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "node.h"
#include "owed.h"
#include "send.h"
#include "plain.h"

/* An owed release is dropped after its keys' lease plus this: by then they
 * have expired on any node that executed the acquire without a long stall. */
#define OWED_GRACE_MS 60000
#define OWED_MAX 10000
/* A delivery that could not send a release tries again this much later at
 * the soonest (the node's connect back-off may say later). */
#define RL_OWED_RETRY_MS 100

/* A release still owed to a node: a command, and the node to send it to. */
typedef struct rl_owed {
    struct rl_cmd *cmd;
    size_t node;
    int64_t not_before;       /* sent no sooner: what it undoes lands first */
    int64_t until;            /* given up after this (the keys expired anyway) */
    int64_t tried_at;         /* when a delivery last asked for its node (0: never) */
    struct rl_owed *next;
} rl_owed;

struct rl_owed_list {
    pthread_mutex_t mu;       /* guards head and n */
    rl_owed *head;            /* releases owed, oldest first */
    _Atomic size_t n;         /* read without the lock: is anything owed? */
};

/* Drops every release owed. */
static void clear(rl_owed_list *l)
{
    pthread_mutex_lock(&l->mu);
    rl_owed *o = l->head;
    l->head = NULL;
    l->n = 0;
    pthread_mutex_unlock(&l->mu);
    while (o) {
        rl_owed *next = o->next;
        rl_cmd_unref(o->cmd);
        free(o);
        o = next;
    }
}

rl_owed_list *rl_owed_list_new(void)
{
    rl_owed_list *l = calloc(1, sizeof *l);
    if (l)
        pthread_mutex_init(&l->mu, NULL);
    return l;
}

void rl_owed_list_free(rl_owed_list *l)
{
    if (!l)
        return;
    clear(l);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* ---- a command's fate once nobody waits ---- */

/* Queues a release of cmd's keys and token on c (as nobody's command). */
static void release_on(rl_cmd *cmd, rl_conn *c, int64_t now)
{
    rl_cmd *rel = rl_cmd_new(RL_CMD_RELEASE, cmd->keys, cmd->token, 0);
    if (!rel || rl_cmd_send(rel, c) != REDLOCK_OK)
        rl_owed_add(c->ctx, c->node, cmd->keys, cmd->token, false, now);
    rl_cmd_unref(rel);
}

void rl_cmd_late_reply(const rl_entry *e, rl_conn *c, const redisReply *reply, int64_t now)
{
    rl_cmd *cmd = e->cmd;
    if (rl_conn_unrun(c, e->form, reply)) {
        /* Not run for the way it was sent (the node lost its scripts, has no
         * library, refused a native command...). An acquire did not run; a
         * release must, and an extend should (it only ever extends a key
         * that still holds its token), so they follow again in a way that
         * runs, on this connection. */
        int rc = REDLOCK_OK;
        if (cmd->kind != RL_CMD_RELEASE && cmd->kind != RL_CMD_EXTEND)
            rl_cmd_native_refused(c, e->form, reply);
        else
            rc = rl_cmd_send_again(cmd, c, e->form, reply);
        /* Not owed where it needs a script the node cannot run: what it
         * releases could not have been taken there either. */
        if (rc != REDLOCK_OK && rc != REDLOCK_EUNSUPPORTED && cmd->kind == RL_CMD_RELEASE)
            rl_owed_add(c->ctx, c->node, cmd->keys, cmd->token, false, now);
        return;
    }
    /* A transaction's read or end (plain.h): a release goes on to take
     * effect, and an extend too (as above); the answer is nobody's. */
    rl_result plain;
    if ((e->form == RL_FORM_READ || e->form == RL_FORM_EXEC)
        && rl_plain_reply(cmd, c, e, reply, &plain))
        return;
    if (cmd->kind == RL_CMD_RELEASE)   /* its wake-up, after a DELIFEQ that deleted */
        rl_cmd_released(cmd, c, e->form, reply);
    if (cmd->kind != RL_CMD_ACQUIRE || e->covered || !rl_cmd_undone(cmd))
        return;
    rl_result res;
    rl_cmd_classify(cmd, e->form, reply, &res);
    if (res.vote == RL_VOTE_YES)
        release_on(cmd, c, now);
}

void rl_cmd_late_lost(const rl_entry *e, rl_client *ctx, size_t node, bool written,
                      int64_t now)
{
    rl_cmd *cmd = e->cmd;
    if (cmd->kind == RL_CMD_RELEASE || (cmd->kind == RL_CMD_ACQUIRE && written && !e->covered
                                         && rl_cmd_undone(cmd)))
        rl_owed_add(ctx, node, cmd->keys, cmd->token, false, now);
}

/* ---- releases owed to nodes ---- */

void rl_owed_add(rl_client *ctx, size_t node, rl_keys *keys, const char *token, bool landed,
                 int64_t now)
{
    int64_t until = now + rl_ctx_max_lease(ctx) + OWED_GRACE_MS;
    /* The command this release undoes may still be on its way on the lost
     * connection: the release waits one node deadline, so it lands after.
     * One whose command landed (its reply came) goes at once. */
    int64_t not_before = landed ? now : now + ctx->opt.node_timeout_ms;
    pthread_mutex_lock(&ctx->owed->mu);
    /* One release per node, token and keys is enough: it is idempotent. (A
     * lock whose keys span a Cluster node's slots owes one per slot.) */
    for (rl_owed *o = ctx->owed->head; o; o = o->next) {
        if (o->node == node && strcmp(o->cmd->token, token) == 0
            && rl_keys_same(o->cmd->keys, keys)) {
            o->until = until > o->until ? until : o->until;
            o->not_before = not_before < o->not_before ? not_before : o->not_before;
            pthread_mutex_unlock(&ctx->owed->mu);
            return;
        }
    }
    pthread_mutex_unlock(&ctx->owed->mu);
    rl_owed *o = calloc(1, sizeof *o);
    if (!o || !(o->cmd = rl_cmd_new(RL_CMD_RELEASE, keys, token, 0))) {
        free(o);
        return;   /* out of memory: the keys expire at the end of their lease */
    }
    o->node = node;
    o->not_before = not_before;
    o->until = until;
    pthread_mutex_lock(&ctx->owed->mu);
    o->next = ctx->owed->head;
    ctx->owed->head = o;
    ctx->owed->n++;
    rl_owed *oldest = NULL;
    if (ctx->owed->n > OWED_MAX) {
        /* Far too many for nodes that never answer: the oldest go (their
         * keys expire at the end of their lease). */
        rl_owed **p = &ctx->owed->head;
        while ((*p)->next)
            p = &(*p)->next;
        oldest = *p;
        *p = NULL;
        ctx->owed->n--;
    }
    pthread_mutex_unlock(&ctx->owed->mu);
    if (oldest) {
        rl_cmd_unref(oldest->cmd);
        free(oldest);
    }
}

void rl_owed_send(rl_client *ctx, rl_conn *c, int64_t now)
{
    if (!rl_owed_any(ctx, c->node))
        return;
    rl_owed *mine = NULL, **mine_tail = &mine;
    pthread_mutex_lock(&ctx->owed->mu);
    for (rl_owed **p = &ctx->owed->head; *p;) {
        rl_owed *o = *p;
        /* On a Cluster node, only releases of the slots c's master serves. */
        if ((o->node != c->node || o->not_before > now
             || !rl_conn_serves(c, o->cmd->keys->n ? o->cmd->keys->k[0] : NULL))
            && o->until > now) {
            p = &o->next;
            continue;
        }
        *p = o->next;
        ctx->owed->n--;
        o->next = NULL;
        *mine_tail = o;
        mine_tail = &o->next;
    }
    pthread_mutex_unlock(&ctx->owed->mu);
    while (mine) {
        rl_owed *o = mine;
        mine = o->next;
        int rc = o->node == c->node && o->until > now ? rl_cmd_send(o->cmd, c) : REDLOCK_OK;
        if (rc != REDLOCK_OK && rc != REDLOCK_EUNSUPPORTED)   /* see rl_cmd_late_reply */
            rl_owed_add(ctx, o->node, o->cmd->keys, o->cmd->token, true, now);   /* it was due */
        rl_cmd_unref(o->cmd);
        free(o);
    }
}

int rl_owed_slot(rl_client *ctx, size_t node)
{
    int slot = -1;
    if (ctx->nodes[node].addr.kind != RL_NODE_CLUSTER || !rl_owed_any(ctx, node))
        return slot;
    pthread_mutex_lock(&ctx->owed->mu);
    for (rl_owed *o = ctx->owed->head; o && slot < 0; o = o->next)
        if (o->node == node && o->cmd->keys->n > 0)
            slot = rl_key_slot(o->cmd->keys->k[0], strlen(o->cmd->keys->k[0]));
    pthread_mutex_unlock(&ctx->owed->mu);
    return slot;
}

int64_t rl_owed_next(rl_client *ctx, size_t node)
{
    int64_t first = INT64_MAX;
    if (atomic_load_explicit(&ctx->owed->n, memory_order_relaxed) == 0)
        return first;
    pthread_mutex_lock(&ctx->owed->mu);
    for (rl_owed *o = ctx->owed->head; o; o = o->next)
        if ((node == SIZE_MAX || o->node == node) && o->not_before < first)
            first = o->not_before;
    pthread_mutex_unlock(&ctx->owed->mu);
    return first;
}

bool rl_owed_try(rl_client *ctx, size_t node, int64_t now)
{
    if (atomic_load_explicit(&ctx->owed->n, memory_order_relaxed) == 0)
        return false;
    bool due = false;
    pthread_mutex_lock(&ctx->owed->mu);
    for (rl_owed *o = ctx->owed->head; o && !due; o = o->next)
        due = o->node == node && o->not_before <= now;
    for (rl_owed *o = ctx->owed->head; o && due; o = o->next)
        if (o->node == node && o->not_before <= now)
            o->tried_at = now;
    pthread_mutex_unlock(&ctx->owed->mu);
    return due;
}

int64_t rl_owed_at(rl_client *ctx, int64_t now)
{
    if (atomic_load_explicit(&ctx->owed->n, memory_order_relaxed) == 0)
        return INT64_MAX;
    /* Each node's first time, from its releases; then its back-off, read
     * without the list's lock held. */
    int64_t first[REDLOCK_MAX_NODES];
    for (size_t i = 0; i < ctx->n_nodes; i++)
        first[i] = INT64_MAX;
    rl_owed *expired = NULL;
    pthread_mutex_lock(&ctx->owed->mu);
    for (rl_owed **p = &ctx->owed->head; *p;) {
        rl_owed *o = *p;
        if (o->until <= now) {
            *p = o->next;
            ctx->owed->n--;
            o->next = expired;
            expired = o;
            continue;
        }
        int64_t at = o->not_before;
        if (o->tried_at != 0 && o->tried_at + RL_OWED_RETRY_MS > at)
            at = o->tried_at + RL_OWED_RETRY_MS;
        if (at < first[o->node])
            first[o->node] = at;
        p = &o->next;
    }
    pthread_mutex_unlock(&ctx->owed->mu);
    while (expired) {
        rl_owed *o = expired;
        expired = o->next;
        rl_cmd_unref(o->cmd);
        free(o);
    }
    int64_t next = INT64_MAX;
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        if (first[i] == INT64_MAX)
            continue;
        int64_t connectable = now + rl_node_connect_wait(&ctx->nodes[i], now);
        int64_t at = first[i] > connectable ? first[i] : connectable;
        if (at < next)
            next = at;
    }
    return next;
}

bool rl_owed_any(rl_client *ctx, size_t node)
{
    if (atomic_load_explicit(&ctx->owed->n, memory_order_relaxed) == 0)
        return false;
    bool any = false;
    pthread_mutex_lock(&ctx->owed->mu);
    for (rl_owed *o = ctx->owed->head; o && !any; o = o->next)
        any = node == SIZE_MAX || o->node == node;
    pthread_mutex_unlock(&ctx->owed->mu);
    return any;
}

void rl_owed_clear(rl_client *ctx)
{
    clear(ctx->owed);
}
