/* op.c - acquire, extend and release as state machines (see op.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client.h"
#include "log.h"
#include "node.h"
#include "op.h"
#include "owed.h"
#include "quorum.h"
#include "slots.h"

typedef enum slot_state {
    SLOT_IDLE,        /* nothing asked of this node in this round */
    SLOT_WANT_CONN,   /* the round's command waits for a connection */
    SLOT_WAITING,     /* the command is queued; its reply is awaited */
    SLOT_DONE         /* the vote is in */
} slot_state;

typedef struct slot {
    rl_conn *conn;        /* the connection to this node, kept across rounds */
    slot_state state;
    bool sent;            /* this round's command was queued on conn */
    bool maybe_ran;       /* ... on a connection lost after writing it */
    bool retried;         /* a stale pooled connection was replaced this round */
    uint8_t redirects;    /* connections ended this round because the master moved */
    int key_slot;         /* a Cluster node: the slot of the command's keys; -1 any */
    int ask_server;       /* a Cluster node: the master a -ASK named this round; -1 none */
    bool ask;             /* its next connection asks a sentinel whether the master moved */
    bool counting;        /* a fenced SET answered: its vote waits for the INCR's reply */
    bool written;         /* the command's last byte was written: its deadline runs */
    bool parked;          /* SLOT_WANT_CONN: the node's connections are all in use */
    bool paused;          /* its connection counted in the node's paused ones (let_go) */
    rl_result set;        /* ... and is this */
    uint64_t end;         /* the connection's bytes queued up to the command's end */
    int64_t deadline;     /* written: node_timeout_ms after; else when to look again */
    int64_t queued_at;    /* when the command was queued: unwritten, its bound runs from it */
    int64_t tail_until;   /* once decided, how long its bytes are still written */
    int64_t retry_at;     /* parked: when to ask for a connection again */
    int64_t park_until;   /* parked: when to stop asking (0: not parked this round) */
    /* A Cluster node's chain (a lock whose keys span slots: chained below):
     * the part whose command is the current one, the first answer of the
     * chain that was not a yes (an unlock goes on through every part), and
     * how many of its connections were set aside for other masters, counted
     * as paused until the operation ends. */
    size_t part;
    rl_result chain;
    unsigned aside;
} slot;

/* How often an operation that waits for a connection (its node has
 * pool_size + RL_CONN_SPARE of them, all in use) asks again. */
#define PARK_RETRY_MS 1

typedef enum phase {
    PHASE_ROUND,          /* a command is out to the nodes */
    PHASE_PAUSE,          /* between two acquire attempts */
    PHASE_DONE
} phase;

typedef enum op_kind {
    OP_LOCK,
    OP_EXTEND,
    OP_UNLOCK,
    OP_DELIVER,     /* releases owed to nodes, and nothing else */
    OP_INSPECT,     /* a query: is the lock held, by anyone, and how long */
    OP_FORCE,       /* a forced unlock: the key deleted whatever its token */
    OP_PING,        /* a PING of every node: how many answer */
    OP_EXTEND_MANY  /* the renewal of many locks, one command per node (extend_many below) */
} op_kind;

/* Extend many: what one lock of the batch came to. */
typedef struct many_end {
    bool decided;
    int rc;
    int64_t old_expires_at;   /* its expiry before the renewal */
    char *msg;                /* why it failed (owned), or NULL */
} many_end;

struct redlock_op {
    rl_client *ctx;
    op_kind kind;
    redlock_handle *h;
    bool owns_handle;     /* lock: the handle is the op's until taken */
    int64_t ttl_ms;
    int64_t give_up;      /* lock: no attempt starts after this */
    int64_t unavailable_since;  /* lock: start of the attempts that all lacked answers */
    int64_t round_start;
    int64_t started;      /* when the operation was made */
    unsigned attempts;    /* lock: acquire rounds started */
    int64_t wake_at;      /* pause: when the next attempt starts */
    phase phase;
    rl_cmd *cmd;          /* the current round's command */
    rl_cmd *attempt;      /* lock: the acquire of the current attempt */
    bool fenced;          /* lock: with fencing */
    char joins[RL_TOKEN_LEN + 1];   /* a read lock: the caller's write lock it may join */
    /* A fair lock: its waiter's id, its ticket (0 until the first attempt
     * refused gave it one), and the channel its wake-up comes on (the key,
     * ":waiter:" and the id), which rl_op_keys names. */
    char waiter[RL_TOKEN_LEN + 1];
    int64_t ticket;
    rl_keys *channel;
    int64_t *got;         /* fenced lock: each node's counters, node by node */
    bool saw_noscript;    /* a node had lost its scripts, or its library: this round
                           * waits for all */
    bool was_held;        /* unlock: the lock as it was when unlock began */
    int64_t old_expires_at;
    rl_verdict answer;    /* inspect, force: what the nodes said */
    int rc;
    char what[300];
    char msg[RL_ERRMSG_MAX];
    size_t next_conn;     /* rl_op_take_conn's cursor */
    rl_conn **dropped;    /* broken connections let go of, for the driver to close */
    size_t n_dropped;
    rl_conn **spare;      /* let go of in a pause, for the driver to pool (rl_op_spare_conn) */
    size_t n_spare;
    bool lends;           /* its driver takes them (rl_op_lend) */
    /* A lock whose keys span slots on a client with a Cluster node (the
     * handle's parts, or a renewal of one such lock): a Cluster node takes
     * one command per part (parts[g] with part_cmds[g]), one after another
     * on its chain, and votes yes only when every part was a yes; a lock's
     * parts taken before a no are released there, so that the node holds
     * all of the lock or none of it. Other nodes take cmd, every key. */
    size_t n_parts;
    rl_keys **parts;      /* the handle's */
    rl_cmd **part_cmds;   /* this round's, one per part */
    slot *slots;          /* one per node, allocated with the op */
    rl_result *results;   /* one per node, allocated with the op */
    /* extend many: the locks (not owned), where each one's keys start in
     * the command's (first_key[n_many] is the number of keys), each node's
     * answer for each key (node by node; valid where results[node] is a
     * yes), and each lock's outcome */
    redlock_handle **many;
    size_t n_many, n_undecided;
    size_t *first_key;
    signed char *key_votes;
    many_end *ends;
};

static rl_verb verb_of(const rl_op *op)
{
    switch (op->kind) {
    case OP_LOCK:    return RL_VERB_ACQUIRE;
    case OP_EXTEND:  return RL_VERB_EXTEND;
    case OP_INSPECT: return RL_VERB_INSPECT;
    case OP_FORCE:   return RL_VERB_FORCE;
    case OP_PING:    return RL_VERB_PING;
    case OP_EXTEND_MANY: return RL_VERB_EXTEND;
    default:         return RL_VERB_RELEASE;
    }
}

/* ---- handles ---- */

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
static bool has_cluster(const rl_client *ctx)
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
    if (keys->n == 0 || !has_cluster(ctx))
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
static int keys_slot(const rl_keys *keys)
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
    if (keys->n < 2 || !has_cluster(ctx))
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
static int handle_new(redlock_handle **out, rl_client *ctx, const char *const *names, size_t n)
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
static int check_lease(const rl_client *ctx, int64_t ttl_ms)
{
    if (ttl_ms <= 0)
        return rl_fail(REDLOCK_EINVAL, "ttl_ms must be positive, got %lld", (long long)ttl_ms);
    if (ttl_ms > REDLOCK_MAX_TTL_MS)
        return rl_fail(REDLOCK_EINVAL, "ttl_ms must be at most %d, got %lld", REDLOCK_MAX_TTL_MS,
                       (long long)ttl_ms);
    if (ttl_ms > ctx->opt.max_lease_ms)
        return rl_fail(REDLOCK_EINVAL,
                       "a lease of %lld ms is longer than max_lease_ms (%lld ms), the longest "
                       "lease any client of these nodes may use; raise max_lease_ms on every "
                       "client, or use a shorter lease (a kept lock's is watchdog_lease_ms)",
                       (long long)ttl_ms, (long long)ctx->opt.max_lease_ms);
    return REDLOCK_OK;
}

/* "lock 'orders'" or "lock 'orders' and 2 more", for messages. */
static void describe(rl_op *op, const char *verb)
{
    const rl_keys *k = op->h->keys;
    if (k->n != 1) {
        snprintf(op->what, sizeof op->what, "%s '%.200s' and %zu more", verb, k->k[0], k->n - 1);
        return;
    }
    /* One resource, on every call: put together without snprintf's cost
     * (a verb of at most 60 bytes and 200 of the name fit in what). */
    size_t v = strnlen(verb, 60), r = strnlen(k->k[0], 200);
    memcpy(op->what, verb, v);
    op->what[v] = ' ';
    op->what[v + 1] = '\'';
    memcpy(op->what + v + 2, k->k[0], r);
    op->what[v + 2 + r] = '\'';
    op->what[v + 3 + r] = '\0';
}

/* ---- a Cluster node's chain of parts ---- */

/* Whether node i takes the round one part at a time. */
static bool chained(const rl_op *op, size_t i)
{
    return op->n_parts > 1 && op->ctx->nodes[i].addr.kind == RL_NODE_CLUSTER;
}

/* The command node i waits for (or is to be sent) now. */
static rl_cmd *cmd_of(const rl_op *op, size_t i)
{
    return chained(op, i) && op->part_cmds ? op->part_cmds[op->slots[i].part] : op->cmd;
}

static int part_slot(const rl_op *op, size_t g)
{
    return keys_slot(op->parts[g]);
}

/* No operation waits for the round's commands any more: their replies are
 * late (owed.h). */
static void detach_cmds(rl_op *op)
{
    if (op->cmd)
        op->cmd->op = NULL;
    for (size_t g = 0; op->part_cmds && g < op->n_parts; g++)
        if (op->part_cmds[g])
            op->part_cmds[g]->op = NULL;
}

/* A release of the lock's keys owed to node i: of its parts from `from` on
 * for a chained node, else of all of them. */
static void owe(rl_op *op, size_t i, size_t from, int64_t now)
{
    redlock_handle *h = op->h;
    if (!chained(op, i)) {
        rl_owed_add(op->ctx, i, h->keys, h->token, false, now);
        return;
    }
    for (size_t g = from; g < op->n_parts; g++)
        rl_owed_add(op->ctx, i, op->parts[g], h->token, false, now);
}

/* Node i's vote is in (op->results[i]). A chained node's lock parts taken
 * before a part said no are released there (the node holds all of a lock
 * or none of it); an unlock's parts its chain did not reach are owed. */
static void chain_ended(rl_op *op, size_t i, int64_t now)
{
    if (!chained(op, i))
        return;
    slot *s = &op->slots[i];
    if (op->kind == OP_LOCK && op->cmd->kind == RL_CMD_ACQUIRE
        && op->results[i].vote != RL_VOTE_YES)
        for (size_t g = 0; g < s->part; g++)   /* each said yes: they landed */
            rl_owed_add(op->ctx, i, op->parts[g], op->h->token, true, now);
    else if (op->kind == OP_UNLOCK)
        owe(op, i, s->part + 1, now);
}

/* Node i's connection serves another master than its next part's: it goes
 * to the driver, as a pausing lock's do (let_go), or when the driver does
 * not take them back, it stays with the op and counts as paused. */
static bool set_aside(rl_op *op, size_t i)
{
    slot *s = &op->slots[i];
    rl_conn **grown = realloc(op->spare, (op->n_spare + 1) * sizeof *grown);
    if (!grown)
        return false;
    op->spare = grown;
    op->spare[op->n_spare++] = s->conn;
    s->conn->op = NULL;
    s->conn = NULL;
    if (!op->lends) {
        s->aside++;
        atomic_fetch_add(&op->ctx->conns[i].paused, 1);
    }
    return true;
}

static void end_aside(rl_op *op)
{
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (s->aside) {
            atomic_fetch_sub(&op->ctx->conns[i].paused, (int)s->aside);
            s->aside = 0;
        }
    }
}

/* This round's command for each part (with cmd as their parent: a lock
 * given up is given up in every part, owed.h). */
static int new_part_cmds(rl_op *op, rl_cmd_kind kind)
{
    if (op->n_parts < 2)
        return REDLOCK_OK;
    if (!op->part_cmds && !(op->part_cmds = calloc(op->n_parts, sizeof *op->part_cmds)))
        return REDLOCK_ENOMEM;
    rl_cmd *whole = op->cmd;
    for (size_t g = 0, start = 0; g < op->n_parts; g++) {
        rl_cmd_unref(op->part_cmds[g]);
        rl_cmd *c = kind == RL_CMD_EXTEND_MANY ? rl_cmd_new_many(op->parts[g])
                  : rl_cmd_new(kind, op->parts[g], whole->token, whole->ttl_ms);
        op->part_cmds[g] = c;
        if (!c)
            return REDLOCK_ENOMEM;
        size_t n = op->parts[g]->n;
        if (kind == RL_CMD_EXTEND_MANY) {
            memcpy(c->tokens, whole->tokens + start, n * sizeof *c->tokens);
            memcpy(c->leases, whole->leases + start, n * sizeof *c->leases);
        }
        start += n;
        c->parent = rl_cmd_ref(whole);
        c->op = op;
        c->cacheable = true;
    }
    return REDLOCK_OK;
}

/* ---- rounds ---- */

static int new_token(rl_client *ctx, char out[RL_TOKEN_LEN + 1])
{
    unsigned char raw[RL_TOKEN_BYTES];
    if (ctx->random(ctx->random_data, raw, sizeof raw) != 0)
        return REDLOCK_ESYSTEM;
    rl_token_hex(out, raw);
    return REDLOCK_OK;
}

static const char *const op_names[] = {
    [OP_LOCK] = "lock", [OP_EXTEND] = "extend", [OP_UNLOCK] = "unlock", [OP_DELIVER] = "deliver",
    [OP_INSPECT] = "inspect", [OP_FORCE] = "force_unlock", [OP_PING] = "ping",
    [OP_EXTEND_MANY] = "renew",
};

/* The event of a finished operation (log.h): one per call, never per attempt. */
static void report(const rl_op *op, int64_t now)
{
    if (op->kind == OP_EXTEND_MANY)
        return;   /* each lock's outcome is its keeper's to tell (keep.h) */
    int rc = op->rc, level = REDLOCK_LOG_WARN;
    const char *event = "failed";
    if (rc == REDLOCK_OK) {
        static const char *const done[] = {
            [OP_LOCK] = "acquired", [OP_EXTEND] = "extended", [OP_UNLOCK] = "released",
            [OP_FORCE] = "force_unlocked",
        };
        event = op->kind < sizeof done / sizeof done[0] ? done[op->kind] : NULL;
        level = op->kind == OP_FORCE ? REDLOCK_LOG_INFO : REDLOCK_LOG_DEBUG;
        if (!event)
            return;   /* queries, pings and deliveries succeed quietly */
    } else if (rc == REDLOCK_ELOCKED) {
        event = "refused";
        level = REDLOCK_LOG_DEBUG;
    } else if (rc == REDLOCK_ENOQUORUM) {
        event = "no_quorum";
    } else if (rc == REDLOCK_EAUTH || rc == REDLOCK_ENOPERM) {
        level = REDLOCK_LOG_ERROR;
    } else if (rc == REDLOCK_ECANCELED) {
        level = REDLOCK_LOG_DEBUG;
    }
    if (op->kind == OP_DELIVER || !rl_logging(&op->ctx->log, level))
        return;

    const redlock_handle *h = op->h;
    size_t n = op->ctx->n_nodes, yes = 0;
    for (size_t i = 0; i < n; i++)
        yes += op->results[i].vote == RL_VOTE_YES;
    char fields[512], resources[256] = "", owner[RL_OWNER_LEN + 1] = "";
    if (h && h->keys->n > 0)
        rl_log_resources(op->ctx, h->keys, resources, sizeof resources);
    /* A lock has an owner once taken; extend and unlock are the owner's. */
    if (h && ((op->kind == OP_LOCK && rc == REDLOCK_OK) || op->kind == OP_EXTEND
              || op->kind == OP_UNLOCK))
        rl_log_owner(h->token, owner);
    int w = snprintf(fields, sizeof fields, "op=%s", op_names[op->kind]);
    if (resources[0])
        w += snprintf(fields + w, sizeof fields - (size_t)w, " resource=%s", resources);
    if (owner[0])
        w += snprintf(fields + w, sizeof fields - (size_t)w, " owner=%s", owner);
    w += snprintf(fields + w, sizeof fields - (size_t)w, " nodes=%zu/%zu", yes, n);
    if (rc == REDLOCK_ENOQUORUM)
        w += snprintf(fields + w, sizeof fields - (size_t)w, " need=%zu",
                      rl_quorum_of(n, h ? h->keys->permits : 0));
    if (op->kind == OP_FORCE)
        w += snprintf(fields + w, sizeof fields - (size_t)w, " deleted=%zu", op->answer.deleted);
    w += snprintf(fields + w, sizeof fields - (size_t)w, " ms=%lld", (long long)(now - op->started));
    if (op->kind == OP_LOCK)
        w += snprintf(fields + w, sizeof fields - (size_t)w, " attempts=%u", op->attempts);
    if (rc == REDLOCK_OK && (op->kind == OP_LOCK || op->kind == OP_EXTEND))
        w += snprintf(fields + w, sizeof fields - (size_t)w, " validity_ms=%lld",
                      (long long)(h->expires_at - now));
    if (rc == REDLOCK_OK && op->kind == OP_LOCK && h->fences)
        w += snprintf(fields + w, sizeof fields - (size_t)w, " fence=%lld", (long long)h->fences[0]);
    if (rc != REDLOCK_OK && rc != REDLOCK_ELOCKED && rc != REDLOCK_ENOQUORUM)
        snprintf(fields + w, sizeof fields - (size_t)w, " code=%s", rl_log_code(rc));
    if (rc == REDLOCK_OK)
        rl_log_emit(&op->ctx->log, level, event, "%s", fields);
    else
        rl_log_emit(&op->ctx->log, level, event, "%s: %s", fields, op->msg[0] ? op->msg
                    : rl_log_code(rc));
}

static void resume(rl_op *op);

static void finish(rl_op *op, int rc, const char *msg, int64_t now)
{
    /* Replies still to come are late from now on; this must happen before
     * the connections go back to a pool where another thread reads them. */
    detach_cmds(op);
    /* An unlock decided while a node still waited for a connection (at the
     * cap, conn.h): its release is owed there. */
    for (size_t i = 0; op->kind == OP_UNLOCK && op->phase == PHASE_ROUND
                       && i < op->ctx->n_nodes; i++) {
        if (op->slots[i].state == SLOT_WANT_CONN)
            owe(op, i, op->slots[i].part, now);
        else if (op->slots[i].state == SLOT_WAITING && chained(op, i))
            owe(op, i, op->slots[i].part + 1, now);   /* the parts its chain did not reach */
    }
    resume(op);
    end_aside(op);
    op->phase = PHASE_DONE;
    op->rc = rc;
    /* An unlock that found the keys gone tells a loss (redlock_handle_lost). */
    if (op->kind == OP_UNLOCK && rc == REDLOCK_ENOTHELD && op->h)
        op->h->ran_out = true;
    if (msg != op->msg && msg && msg[0])
        snprintf(op->msg, sizeof op->msg, "%s", msg);
    else if (msg != op->msg)
        op->msg[0] = '\0';   /* none: no snprintf on a success's path */
    report(op, now);
}

/* Gives the entry just queued on c its budget, node_timeout_ms from when it
 * is written, for the node's health (conn.h). */
static void stamp(rl_conn *c, int64_t budget)
{
    size_t last = rl_conn_owed(c) - 1;
    rl_entry *e = rl_conn_entry(c, last);
    if (e->kind == RL_ENTRY_CMD && e->form == RL_FORM_COUNT && last > 0)
        e = rl_conn_entry(c, last - 1);   /* a fenced SET's INCR: the SET is timed */
    rl_conn_budget(c, e, budget);
}

/* How long a command may wait to be written, behind bytes of the client's
 * own, before the operation counts its node failed: as long as an answer
 * may be of use (a lock's or an extension's lease), and at least as long as
 * a connect and an answer take. */
static int64_t patience(const rl_op *op)
{
    const rl_options *o = &op->ctx->opt;
    int64_t p = o->connect_timeout_ms + o->node_timeout_ms;
    int64_t lease = op->ttl_ms > 0 ? op->ttl_ms : op->h ? atomic_load(&op->h->lease_ms) : 0;
    return lease > p ? lease : p;
}

/* Node i is busy: the client cannot keep up with it (its connections all in
 * use, or one owing too many replies). Told once (node_busy) when it was not
 * busy the second before; the health says "busy" for a second after. */
static void busy(rl_op *op, size_t i, const char *why, int64_t now)
{
    _Atomic int64_t *until = &op->ctx->conns[i].busy_until;
    int64_t was = atomic_exchange(until, now + 1000);
    if (was < now)
        RL_LOG(op->ctx, REDLOCK_LOG_WARN, "node_busy", "node=%s conns=%d: %s",
               op->ctx->nodes[i].addr.label, rl_conn_count(op->ctx, i), why);
}

/* A round's command is queued on s's connection, ending at its byte `end`:
 * its deadline runs from when that byte is written (rl_op_conn_wrote).
 * Until then the slot is looked at every node_timeout_ms (a connect's
 * deadline first), as drivers expect a wake-up that soon, and fails only
 * past the wait's bound (patience) from when it was queued. */
static void queued(rl_op *op, size_t i, int64_t now)
{
    const rl_options *o = &op->ctx->opt;
    slot *s = &op->slots[i];
    s->end = s->conn->queued;
    s->written = false;
    s->queued_at = now;
    /* A command of many keys gets an allowance for its work on the node. */
    rl_cmd *cmd = cmd_of(op, i);
    int64_t work = cmd ? rl_cmd_work_ms(cmd) : 0;
    s->deadline = now + (s->conn->state == RL_CONN_CONNECTING ? o->connect_timeout_ms
                                                              : o->node_timeout_ms) + work;
    s->tail_until = now + o->connect_timeout_ms + o->node_timeout_ms + work;
    stamp(s->conn, o->node_timeout_ms + work);
}

/* Marks late the entries of cmd on c still owed, once: their deadline passed. */
static void mark_late(rl_conn *c, const rl_cmd *cmd)
{
    for (size_t k = 0; k < rl_conn_owed(c); k++) {
        rl_entry *e = rl_conn_entry(c, k);
        if (e->cmd == cmd)
            e->late = true;
    }
}

/* Queues the round's command on the slot's connection. */
static void send_on(rl_op *op, size_t i, int64_t now)
{
    slot *s = &op->slots[i];
    char why[160];
    int refused = rl_conn_refuses(s->conn, now, op->ctx->opt.node_timeout_ms,
                                  op->kind == OP_UNLOCK, why, sizeof why);
    if (refused) {
        /* Its node is stalled (its state says slow), or far behind (the
         * client cannot keep up: busy): nothing more is queued there (a
         * release is owed instead), and the connection stays. */
        s->state = SLOT_DONE;
        if (refused == RL_CONN_FAR_BEHIND)
            busy(op, i, why, now);
        rl_node_failed(&op->ctx->nodes[i], RL_NODE_KEEP, NULL, now);
        if (op->kind == OP_UNLOCK)
            owe(op, i, s->part, now);
        rl_result r;
        rl_result_fail(&r, REDLOCK_ENOQUORUM, "%s", why);
        op->results[i] = r;
        chain_ended(op, i, now);
        return;
    }
    int rc = s->ask_server >= 0 ? rl_conn_asking(s->conn) : REDLOCK_OK;
    if (rc == REDLOCK_OK)
        rc = rl_cmd_send(cmd_of(op, i), s->conn);
    if (rc != REDLOCK_OK) {
        s->state = SLOT_DONE;
        rl_result_fail(&op->results[i], rc, "%s", rc == REDLOCK_ENOMEM ? "out of memory"
                       : "connection unusable");
        chain_ended(op, i, now);
        return;
    }
    s->sent = true;
    s->counting = false;
    s->state = SLOT_WAITING;
    queued(op, i, now);
    rl_node_sent(&op->ctx->nodes[i]);
}

/* Lets go of a slot's broken connection (its connect timed out): the
 * driver gets it back from rl_op_take_conn, to close it. */
static void drop(rl_op *op, slot *s)
{
    rl_conn **grown = realloc(op->dropped, (op->n_dropped + 1) * sizeof *grown);
    if (!grown)
        return;   /* out of memory: it stays in the slot until the op ends */
    op->dropped = grown;
    op->dropped[op->n_dropped++] = s->conn;
    s->conn = NULL;
}

/* A lock pausing between attempts lets go of its connections (their
 * attempt's release queued behind its acquire): held through the pause,
 * they would keep other calls waiting at the cap of connections (conn.h). */
static void let_go(rl_op *op)
{
    for (size_t i = 0; !op->lends && i < op->ctx->n_nodes; i++) {
        /* Its driver does not take them back (rl_op_lend): they are kept,
         * and counted apart, so that they keep no other call waiting. */
        slot *s = &op->slots[i];
        if (s->conn && !s->paused) {
            s->paused = true;
            atomic_fetch_add(&op->ctx->conns[i].paused, 1);
        }
    }
    for (size_t i = 0; op->lends && i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (!s->conn)
            continue;
        rl_conn **grown = realloc(op->spare, (op->n_spare + 1) * sizeof *grown);
        if (!grown)
            return;   /* out of memory: kept until the op ends */
        op->spare = grown;
        op->spare[op->n_spare++] = s->conn;
        s->conn->op = NULL;
        s->conn = NULL;
    }
}

/* The pause is over (another attempt, or the end): its connections count
 * as any other again. */
static void resume(rl_op *op)
{
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        if (op->slots[i].paused) {
            op->slots[i].paused = false;
            atomic_fetch_sub(&op->ctx->conns[i].paused, 1);
        }
    }
}

void rl_op_lend(rl_op *op)
{
    op->lends = true;
}

rl_conn *rl_op_spare_conn(rl_op *op)
{
    return op->n_spare > 0 ? op->spare[--op->n_spare] : NULL;
}

/* How long the nodes keep a fair lock's waiter in its place without a new
 * attempt: two of its longest pauses and rounds. A waiter that died or gave
 * up leaves every queue that long after its last attempt. */
static int64_t queue_ms(const rl_client *ctx)
{
    const rl_options *o = &ctx->opt;
    return 2 * ((int64_t)o->retry_delay_ms + o->retry_jitter_ms + o->node_timeout_ms);
}

static int start_round(rl_op *op, rl_cmd_kind kind, int64_t now)
{
    redlock_handle *h = op->h;
    resume(op);
    if (kind == RL_CMD_ACQUIRE) {
        int rc = new_token(op->ctx, h->token);
        if (rc != REDLOCK_OK)
            return rl_fail(rc, "the operating system's random source failed");
    }
    rl_cmd_unref(op->cmd);
    op->cmd = rl_cmd_new(kind, h->keys, h->token, op->ttl_ms);
    if (!op->cmd)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->cmd->op = op;
    op->cmd->cacheable = true;
    if (new_part_cmds(op, kind) != REDLOCK_OK)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    if (kind == RL_CMD_RELEASE && op->kind == OP_UNLOCK)
        memcpy(op->cmd->waiter, h->waiter, sizeof h->waiter);
    if (kind == RL_CMD_ACQUIRE) {
        op->attempts++;
        op->cmd->fenced = op->fenced;
        memcpy(op->cmd->joins, op->joins, sizeof op->joins);
        memcpy(op->cmd->waiter, op->waiter, sizeof op->waiter);
        op->cmd->ticket = op->ticket;
        op->cmd->queue_ms = queue_ms(op->ctx);
        rl_cmd_unref(op->attempt);
        op->attempt = rl_cmd_ref(op->cmd);
    }
    op->phase = PHASE_ROUND;
    op->round_start = now;
    op->saw_noscript = false;
    int key_slot = has_cluster(op->ctx) ? keys_slot(h->keys) : -1;   /* only a Cluster node's */
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        op->results[i].vote = RL_VOTE_PENDING;
        s->sent = s->maybe_ran = s->retried = s->parked = false;
        s->redirects = 0;
        s->park_until = 0;
        s->key_slot = key_slot;
        s->ask_server = -1;
        s->part = 0;
        s->chain.vote = RL_VOTE_YES;
        if (kind == RL_CMD_RELEASE && op->kind == OP_UNLOCK
            && (h->unreached >> i & 1)) {
            s->state = SLOT_DONE;
            rl_result_fail(&op->results[i], REDLOCK_ENOQUORUM,
                           "the lock's acquire never reached this node");
            continue;
        }
        if (s->conn && s->conn->state == RL_CONN_BROKEN)
            drop(op, s);
        /* A chain's connection of the last attempt may serve another
         * master than its first part's. */
        if (s->conn && chained(op, i) && !rl_conn_serves(s->conn, op->parts[0]->k[0]))
            set_aside(op, i);
        /* A poll of the sentinels that is due goes first, on a connection
         * of its own, on later attempts too (node.c, rl_node_confirmed). */
        bool ask = rl_node_poll_due(&op->ctx->nodes[i], op->ctx->opt.sentinel_poll_ms, now);
        if (s->conn && ask && !set_aside(op, i))
            ask = false;
        if (s->conn) {
            send_on(op, i, now);
        } else {
            s->state = SLOT_WANT_CONN;
            s->ask = ask;
        }
    }
    return REDLOCK_OK;
}

static int64_t retry_pause_ms(rl_op *op)
{
    const rl_options *o = &op->ctx->opt;
    int64_t pause = o->retry_delay_ms;
    uint32_t r = 0;
    if (o->retry_jitter_ms > 0 && op->ctx->random(op->ctx->random_data, &r, sizeof r) == 0)
        pause += (int64_t)(r % (uint32_t)(2 * o->retry_jitter_ms + 1)) - o->retry_jitter_ms;
    return pause < 0 ? 0 : pause;
}

/* Codes for which another attempt may succeed. */
static bool retryable(int rc)
{
    return rc == REDLOCK_ELOCKED || rc == REDLOCK_ENOQUORUM || rc == REDLOCK_EEXPIRED
        || rc == REDLOCK_EREDIS;
}

/* Whether a lock's wait is to end for an outage: every attempt for
 * unavailable_timeout_ms failed for want of answers. */
static bool unavailable_too_long(const rl_op *op, int64_t now)
{
    int64_t limit = op->ctx->opt.unavailable_timeout_ms;
    return limit > 0 && op->unavailable_since != INT64_MAX
        && now - op->unavailable_since >= limit;
}

/* A failed attempt: its release goes wherever the acquire may have run. */
static void undo_attempt(rl_op *op, int64_t now)
{
    rl_cmd *rel = rl_cmd_new(RL_CMD_RELEASE, op->h->keys, op->h->token, 0);
    if (rel)
        rel->cacheable = true;
    if (rel && op->h->keys->kind == RL_LOCK_FAIR && op->ticket > 0) {
        /* Where the attempt took the lock, it left the queue: the waiter,
         * still waiting, gets its place back, ahead of those behind it. */
        memcpy(rel->waiter, op->waiter, sizeof rel->waiter);
        rel->ticket = op->ticket;
        rel->queue_ms = queue_ms(op->ctx);
    }
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (chained(op, i)) {
            /* The parts before the current one were taken; the current
             * one's release goes behind it, as below. */
            for (size_t g = 0; g < s->part; g++)
                rl_owed_add(op->ctx, i, op->parts[g], op->h->token, true, now);
            rl_cmd *part = rl_cmd_new(RL_CMD_RELEASE, op->parts[s->part], op->h->token, 0);
            bool queued = s->sent && s->conn && part
                        && rl_cmd_send(part, s->conn) == REDLOCK_OK;
            if ((s->sent && !queued) || s->maybe_ran)
                rl_owed_add(op->ctx, i, op->parts[s->part], op->h->token, false, now);
            rl_cmd_unref(part);
            continue;
        }
        bool queued = s->sent && s->conn && rel && rl_cmd_send(rel, s->conn) == REDLOCK_OK;
        if ((s->sent && !queued) || s->maybe_ran)
            rl_owed_add(op->ctx, i, op->h->keys, op->h->token, false, now);
    }
    rl_cmd_unref(rel);
}

/* Fencing, once a quorum took the lock: its fence for each key is the
 * largest counter among the nodes that took it. When a quorum counted that
 * much already, that is all (0); otherwise it is written back, guarded by
 * our token, to the nodes that counted less, and that round decides the
 * lock instead, with the acquire's start, so validity runs to its end (1).
 * REDLOCK_ENOMEM when it could not be made. */
static int start_fence(rl_op *op, int64_t now)
{
    redlock_handle *h = op->h;
    size_t n_keys = h->keys->n, n_nodes = op->ctx->n_nodes;
    bool *behind = calloc(n_nodes, sizeof *behind);
    rl_cmd *fence = behind ? rl_cmd_new(RL_CMD_FENCE, h->keys, h->token, 0) : NULL;
    if (fence)
        fence->fences = malloc(n_keys * sizeof *fence->fences);
    if (!fence || !fence->fences) {
        free(behind);
        rl_cmd_unref(fence);
        return REDLOCK_ENOMEM;
    }
    size_t agree = rl_quorum_fences(op->results, n_nodes, op->got, n_keys, fence->fences,
                                    behind);
    memcpy(h->fences, fence->fences, n_keys * sizeof *h->fences);
    if (agree >= rl_quorum(n_nodes)) {
        free(behind);
        rl_cmd_unref(fence);
        return 0;
    }
    rl_cmd_unref(op->cmd);
    op->cmd = fence;
    fence->op = op;
    fence->cacheable = true;
    op->saw_noscript = false;
    for (size_t i = 0; i < n_nodes; i++) {
        slot *s = &op->slots[i];
        rl_result *r = &op->results[i];
        if (behind[i] && s->conn && s->conn->state != RL_CONN_BROKEN) {
            r->vote = RL_VOTE_PENDING;
            send_on(op, i, now);
            continue;
        }
        s->state = SLOT_DONE;
        if (behind[i])
            rl_result_fail(r, REDLOCK_ENOQUORUM, "connection lost before its fence was written");
        else if (r->vote == RL_VOTE_PENDING)
            rl_result_fail(r, REDLOCK_ENOQUORUM, "no answer before the others decided");
    }
    free(behind);
    return 1;
}

static void try_decide(rl_op *op, int64_t now);

/* A fair lock's ticket after its first attempt was refused: the largest the
 * nodes that answered gave. (A round is decided once a quorum can no longer
 * say yes: then more than N minus a quorum answered, and among them is a
 * node of the quorum that queued any waiter before this one arrived.) */
static int64_t ticket_of(const rl_op *op)
{
    int64_t ticket = 0;
    for (size_t i = 0; i < op->ctx->n_nodes; i++)
        if (op->results[i].vote == RL_VOTE_NO && op->results[i].ticket > ticket)
            ticket = op->results[i].ticket;
    return ticket;
}

/* The nodes the decided acquire never reached (redlock_handle's unreached). */
static uint64_t unreached(const rl_op *op)
{
    uint64_t none = 0;
    if (op->h->keys->kind == RL_LOCK_FAIR)
        return 0;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        if (s->state == SLOT_DONE && !s->sent && !s->maybe_ran && !chained(op, i))
            none |= UINT64_C(1) << i;
    }
    return none;
}

static void end_round(rl_op *op, const rl_verdict *v, int64_t now)
{
    redlock_handle *h = op->h;
    detach_cmds(op);   /* later replies are late: owed.h's rules */
    switch (op->kind) {
    case OP_LOCK:
        if (v->rc == REDLOCK_OK && op->cmd->kind == RL_CMD_ACQUIRE)
            h->unreached = unreached(op);
        if (v->rc == REDLOCK_OK && op->fenced && op->cmd->kind == RL_CMD_ACQUIRE) {
            int fence = start_fence(op, now);
            if (fence == 1) {
                /* The write-back may have been sent to no node (every
                 * behind node's connection was lost): decide it now, as no
                 * reply will. */
                try_decide(op, now);
                return;
            }
            if (fence != 0) {
                undo_attempt(op, now);
                finish(op, REDLOCK_ENOMEM, "out of memory", now);
                return;
            }
        }
        if (v->rc == REDLOCK_OK) {
            h->held = true;
            memcpy(h->waiter, op->waiter, sizeof h->waiter);
            h->expires_at = v->expires_at;
            h->lease_ms = op->ttl_ms;
            h->acquired_by = rl_cmd_ref(op->attempt);
            finish(op, REDLOCK_OK, "", now);
            return;
        }
        if (h->keys->kind == RL_LOCK_FAIR && op->ticket == 0)
            op->ticket = ticket_of(op);
        undo_attempt(op, now);
        /* Nodes the restart guard holds back are not an outage: the guard's
         * end is known, and the wait goes on to it (guard_wait). */
        bool only_guards = false;
        int64_t guard_wait = v->rc != REDLOCK_ENOQUORUM ? 0
            : rl_quorum_guard_wait(op->results, op->ctx->n_nodes,
                                   rl_quorum_of(op->ctx->n_nodes, h->keys->permits), &only_guards);
        if (v->rc != REDLOCK_ENOQUORUM || guard_wait > 0)
            op->unavailable_since = INT64_MAX;
        else if (op->unavailable_since == INT64_MAX)
            op->unavailable_since = op->round_start;
        if (unavailable_too_long(op, now)) {
            size_t len = strlen(op->msg);
            snprintf(op->msg + len, sizeof op->msg - len, " (every attempt for %lld ms: the "
                     "nodes are failing, not refusing; see unavailable_timeout_ms)",
                     (long long)(now - op->unavailable_since));
            finish(op, REDLOCK_ENOQUORUM, op->msg, now);
            return;
        }
        if (retryable(v->rc) && now < op->give_up) {
            int64_t pause = retry_pause_ms(op), left = op->give_up - now;
            /* Held back by guards alone, no attempt can succeed before the
             * guard ends (but through a release, which wakes a waiter):
             * the next one is then, or a second from now if that is
             * sooner: the attempt reads a guard's record again
             * (rl_node_guard_stale), and a record deleted or corrected ends
             * it. With nodes failing too, the attempts go on as usual, the
             * next one no later than the guard's end. */
            if (guard_wait > 0 && (only_guards || guard_wait < pause))
                pause = guard_wait < RL_GUARD_REREAD_MS ? guard_wait : RL_GUARD_REREAD_MS;
            op->phase = PHASE_PAUSE;
            op->wake_at = now + (pause < left ? pause : left);
            op->rc = v->rc;
            for (size_t i = 0; i < op->ctx->n_nodes; i++)
                op->slots[i].state = SLOT_IDLE;
            let_go(op);
            return;
        }
        finish(op, v->rc, op->msg, now);
        return;
    case OP_EXTEND:
        if (h->lost) {
            /* Declared lost (its validity ran out) while this extension was
             * out: a late success does not bring it back. */
            h->held = false;
            finish(op, REDLOCK_ENOTHELD, "the lock was lost while it was being extended", now);
            return;
        }
        h->held = v->held && !h->released;   /* an unlock started meanwhile wins */
        if (v->held || v->expires_at < h->expires_at)
            h->expires_at = v->expires_at;
        if (v->held)
            h->lease_ms = op->ttl_ms;
        finish(op, v->rc, op->msg, now);
        return;
    case OP_UNLOCK:
        h->held = false;
        finish(op, v->rc, op->msg, now);
        return;
    case OP_INSPECT:
    case OP_FORCE:
    case OP_PING:
        op->answer = *v;
        finish(op, v->rc, op->msg, now);
        return;
    case OP_DELIVER:   /* decided by step_deliver, never by a verdict */
    case OP_EXTEND_MANY:   /* each lock decided by decide_many */
        return;
    }
}

static void decide_many(rl_op *op, bool final, int64_t now);

/* Decides the round if it can be decided now. */
static void try_decide(rl_op *op, int64_t now)
{
    bool final = true;
    for (size_t i = 0; i < op->ctx->n_nodes; i++)
        if (op->slots[i].state == SLOT_WAITING || op->slots[i].state == SLOT_WANT_CONN)
            final = false;
    /* After a NOSCRIPT the other nodes have likely lost their scripts too:
     * the round waits for every node, to send each the script now rather
     * than leave it to a reply nobody reads. */
    if (op->saw_noscript && !final)
        return;
    /* A poll of the sentinels under way in this round (a connection that
     * still asks one where the master is) is waited for, up to its node's
     * deadline. Decided without it, the connection would be closed
     * unanswered; and as the other nodes answer sooner than a sentinel and
     * a new master connection can, a client would go on unconfirmed with an
     * old master, its polls lost one after another. */
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        if (s->state == SLOT_WAITING && s->conn && s->conn->to.sentinel
            && op->ctx->nodes[i].addr.kind == RL_NODE_SENTINEL)
            return;
    }
    if (op->kind == OP_EXTEND_MANY) {
        decide_many(op, final, now);
        return;
    }
    rl_round round = {
        .verb = verb_of(op), .results = op->results, .start = op->round_start, .now = now,
        .ttl_ms = op->ttl_ms, .permits = op->h ? op->h->keys->permits : 0, .final = final,
        .was_held = op->was_held,
        .expires_at = op->old_expires_at, .old_expires_at = op->old_expires_at,
    };
    rl_verdict v;
    if (op->kind == OP_INSPECT || op->kind == OP_FORCE || op->kind == OP_PING)
        rl_quorum_query(op->ctx, &round, op->what, &v, op->msg, sizeof op->msg);
    else
        rl_quorum_decide(op->ctx, &round, op->what, &v, op->msg, sizeof op->msg);
    if (v.decided)
        end_round(op, &v, now);
}

static void vote(rl_op *op, size_t i, const rl_result *r, int64_t now)
{
    op->results[i] = *r;
    rl_quorum_admit(op->ctx, i, verb_of(op), &op->results[i], now);
    /* A Sentinel node's master that no sentinel named in the last
     * sentinel_poll_ms before the round began: its yes does not count for a
     * new lock (node.c). The next attempt asks the sentinels first. */
    rl_verb verb = verb_of(op);
    if (op->results[i].vote == RL_VOTE_YES && (verb == RL_VERB_ACQUIRE || verb == RL_VERB_PING)
        && !rl_node_confirmed(&op->ctx->nodes[i], op->round_start))
        rl_result_fail(&op->results[i], REDLOCK_ENOQUORUM,
                       "no sentinel has named its master in the last sentinel_poll_ms (%lld ms): "
                       "not counted for a new lock until one does",
                       (long long)op->ctx->opt.sentinel_poll_ms);
    op->slots[i].state = SLOT_DONE;
    chain_ended(op, i, now);
}

/* ---- making operations ---- */

static rl_op *op_new(rl_client *ctx, op_kind kind, int64_t now)
{
    size_t n = ctx->n_nodes;
    rl_op *op = malloc(sizeof *op + n * (sizeof *op->slots + sizeof *op->results));
    if (!op)
        return NULL;
    memset(op, 0, sizeof *op);
    op->slots = (slot *)(op + 1);
    op->results = (rl_result *)(op->slots + n);
    memset(op->slots, 0, n * sizeof *op->slots);
    for (size_t i = 0; i < n; i++)
        op->slots[i].key_slot = op->slots[i].ask_server = -1;
    op->ctx = ctx;
    op->kind = kind;
    op->started = now;
    return op;
}

static int fair_waiter(rl_op *op);

/* A lock operation: a plain lock of names, a read-write lock's read or
 * write lock of names[0] (kind), whose read lock may join the caller's
 * write lock of token joins (a downgrade; "" none), or a permit of the
 * semaphore names[0] of `permits`. */
static int lock_new(rl_op **out, rl_client *ctx, const char *const *names, size_t n,
                    rl_lock_kind kind, const char *joins, int permits, int64_t ttl_ms,
                    int64_t wait_ms, int64_t now)
{
    int rc = check_lease(ctx, ttl_ms);
    if (rc != REDLOCK_OK)
        return rc;
    if (wait_ms < 0)
        return rl_fail(REDLOCK_EINVAL, "wait_ms must not be negative, got %lld",
                       (long long)wait_ms);
    redlock_handle *h = NULL;
    if ((rc = handle_new(&h, ctx, names, n)) != REDLOCK_OK)
        return rc;
    h->keys->kind = kind;
    h->keys->permits = permits;
    const char *key = h->keys->k[0];
    if (kind != RL_LOCK_PLAIN && has_cluster(ctx) && !rl_key_has_tag(key) && strchr(key, '}')) {
        rl_handle_free(h);
        return rl_fail(REDLOCK_EINVAL, "%s '%.100s': on a Cluster node, a name with a '}' "
                       "needs a hash tag (the part in braces, as in {order:7}), so that the "
                       "key beside its own (%s) lives in its slot",
                       kind == RL_LOCK_PERMIT ? "semaphore"
                       : kind == RL_LOCK_FAIR ? "fair lock" : "read-write lock",
                       key + ctx->opt.key_prefix_len,
                       kind == RL_LOCK_PERMIT ? "its permits"
                       : kind == RL_LOCK_FAIR ? "its queue" : "its readers");
    }
    rl_op *op = op_new(ctx, OP_LOCK, now);
    if (!op) {
        rl_handle_free(h);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->h = h;
    op->owns_handle = true;
    op->n_parts = h->n_parts;
    op->parts = h->parts;
    snprintf(op->joins, sizeof op->joins, "%s", joins);
    /* Fencing counts writers: a read lock, and a permit, have no fence. */
    op->fenced = ctx->opt.fencing && (kind == RL_LOCK_PLAIN || kind == RL_LOCK_WRITE);
    if (op->fenced && (!(h->fences = calloc(n, sizeof *h->fences))
                       || !(op->got = calloc(n * ctx->n_nodes, sizeof *op->got)))) {
        rl_op_free(op);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->ttl_ms = ttl_ms;
    op->give_up = wait_ms > INT64_MAX - now ? INT64_MAX : now + wait_ms;
    op->unavailable_since = INT64_MAX;
    describe(op, kind == RL_LOCK_READ ? "read lock" : kind == RL_LOCK_WRITE ? "write lock"
                 : kind == RL_LOCK_PERMIT ? "permit of semaphore"
                 : kind == RL_LOCK_FAIR ? "fair lock" : "lock");
    if (kind == RL_LOCK_FAIR && (rc = fair_waiter(op)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    rl_ctx_note_lease(ctx, ttl_ms);
    if ((rc = start_round(op, RL_CMD_ACQUIRE, now)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

int rl_op_lock(rl_op **out, rl_client *ctx, const char *const *names, size_t n,
               int64_t ttl_ms, int64_t wait_ms, int64_t now)
{
    return lock_new(out, ctx, names, n, RL_LOCK_PLAIN, "", 0, ttl_ms, wait_ms, now);
}

int rl_op_lock_rw(rl_op **out, rl_client *ctx, const char *name, int mode,
                  const redlock_handle *held, int64_t ttl_ms, int64_t wait_ms, int64_t now)
{
    if (mode != REDLOCK_READ && mode != REDLOCK_WRITE)
        return rl_fail(REDLOCK_EINVAL, "mode must be REDLOCK_READ or REDLOCK_WRITE, got %d",
                       mode);
    bool write = mode == REDLOCK_WRITE;
    const char *joins = "";
    if (held) {
        size_t p = ctx->opt.key_prefix_len;
        if (held->ctx != ctx || held->keys->kind == RL_LOCK_PLAIN || !name
            || strcmp(held->keys->k[0] + p, name) != 0)
            return rl_fail(REDLOCK_EINVAL, "the lock held must be a read or write lock of the "
                           "same resource, from the same client");
        if (write && held->keys->kind == RL_LOCK_READ)
            return rl_fail(REDLOCK_EINVAL, "read-write lock '%.200s': a read lock cannot be "
                           "upgraded to the write lock (release it, then take the write lock)",
                           name);
        if (!write && held->keys->kind == RL_LOCK_WRITE && held->held && !held->released)
            joins = held->token;   /* its own write lock: a downgrade */
    }
    return lock_new(out, ctx, &name, 1, write ? RL_LOCK_WRITE : RL_LOCK_READ, joins, 0, ttl_ms,
                    wait_ms, now);
}

/* A fair lock's waiter: its id, and the channel of its wake-up. */
static int fair_waiter(rl_op *op)
{
    int rc = new_token(op->ctx, op->waiter);
    if (rc != REDLOCK_OK)
        return rl_fail(rc, "the operating system's random source failed");
    const char *key = op->h->keys->k[0];
    size_t len = strlen(key) + sizeof ":waiter:" + RL_TOKEN_LEN;
    op->channel = rl_keys_new(1);
    if (!op->channel || !(op->channel->k[0] = malloc(len)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    snprintf(op->channel->k[0], len, "%s:waiter:%s", key, op->waiter);
    return REDLOCK_OK;
}

int rl_op_lock_fair(rl_op **out, rl_client *ctx, const char *name, int64_t ttl_ms,
                    int64_t wait_ms, int64_t now)
{
    return lock_new(out, ctx, &name, 1, RL_LOCK_FAIR, "", 0, ttl_ms, wait_ms, now);
}

static int check_permits(const char *name, int permits)
{
    if (permits < 1 || permits > REDLOCK_MAX_PERMITS)
        return rl_fail(REDLOCK_EINVAL, "semaphore '%.200s': permits must be from 1 to %d, "
                       "got %d", name ? name : "", REDLOCK_MAX_PERMITS, permits);
    return REDLOCK_OK;
}

int rl_op_acquire_permit(rl_op **out, rl_client *ctx, const char *name, int permits,
                         int64_t ttl_ms, int64_t wait_ms, int64_t now)
{
    int rc = check_permits(name, permits);
    if (rc != REDLOCK_OK)
        return rc;
    return lock_new(out, ctx, &name, 1, RL_LOCK_PERMIT, "", permits, ttl_ms, wait_ms, now);
}

int rl_op_extend(rl_op **out, redlock_handle *h, int64_t ttl_ms, int64_t now)
{
    int rc = check_lease(h->ctx, ttl_ms);
    if (rc != REDLOCK_OK)
        return rc;
    if (!h->held)
        return rl_fail(REDLOCK_ENOTHELD, "extend: the lock was %s",
                       h->released ? "released" : "lost");
    if (h->expires_at <= now) {
        h->held = false;
        return rl_fail(REDLOCK_ENOTHELD, "extend: the lock expired %lld ms ago",
                       (long long)(now - h->expires_at));
    }
    rl_op *op = op_new(h->ctx, OP_EXTEND, now);
    if (!op)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->h = h;
    op->n_parts = h->n_parts;
    op->parts = h->parts;
    op->ttl_ms = ttl_ms;
    op->old_expires_at = h->expires_at;
    /* A node may apply a shorter lease the moment it gets the command: from
     * now on the lock lasts no longer than that, whatever the outcome. */
    int64_t shorter = now + ttl_ms - rl_drift_ms(ttl_ms, h->ctx->opt.drift_factor);
    if (shorter < h->expires_at)
        h->expires_at = shorter;
    describe(op, "extend");
    rl_ctx_note_lease(h->ctx, ttl_ms);
    if ((rc = start_round(op, RL_CMD_EXTEND, now)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

int rl_op_unlock(rl_op **out, redlock_handle *h, int64_t now)
{
    if (h->released)
        return rl_fail(REDLOCK_ENOTHELD, "unlock: the lock was already released");
    rl_op *op = op_new(h->ctx, OP_UNLOCK, now);
    if (!op)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->h = h;
    op->n_parts = h->n_parts;
    op->parts = h->parts;
    op->was_held = h->held;
    op->old_expires_at = h->expires_at;
    describe(op, "unlock");
    /* The keys may have expired while it was held: it stays lost once
     * released (redlock_handle_lost, hold.c). */
    h->ran_out = h->lost || !h->held || h->expires_at <= now;
    /* From here on the lock is given up: a late reply of the acquire that
     * made it is undone wherever it arrives. */
    h->released = true;
    if (h->acquired_by)
        atomic_store(&h->acquired_by->undo, true);
    int rc = start_round(op, RL_CMD_RELEASE, now);
    if (rc != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

/* A query of name's lock, or of its semaphore's permits (permits > 0), or
 * a forced unlock. */
static int query_new(rl_op **out, rl_client *ctx, const char *name, bool force, int permits,
                     int64_t now)
{
    redlock_handle *h = NULL;
    int rc = handle_new(&h, ctx, &name, 1);
    if (rc != REDLOCK_OK)
        return rc;
    if (permits > 0) {
        h->keys->kind = RL_LOCK_PERMIT;
        h->keys->permits = permits;
    }
    rl_op *op = op_new(ctx, force ? OP_FORCE : OP_INSPECT, now);
    if (!op) {
        rl_handle_free(h);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->h = h;   /* the key, for the commands; never anyone's lock */
    op->owns_handle = true;
    describe(op, force ? "force unlock" : permits > 0 ? "permits of semaphore" : "inspect");
    if ((rc = start_round(op, force ? RL_CMD_FORCE : RL_CMD_INSPECT, now)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

int rl_op_query(rl_op **out, rl_client *ctx, const char *name, bool force, int64_t now)
{
    return query_new(out, ctx, name, force, 0, now);
}

int rl_op_permits(rl_op **out, rl_client *ctx, const char *name, int permits, int64_t now)
{
    int rc = check_permits(name, permits);
    if (rc != REDLOCK_OK)
        return rc;
    return query_new(out, ctx, name, false, permits, now);
}

int64_t rl_op_available(const rl_op *op)
{
    return op->answer.available;
}

int rl_op_ping(rl_op **out, rl_client *ctx, int64_t now)
{
    redlock_handle *h = NULL;
    int rc = handle_new(&h, ctx, NULL, 0);
    if (rc != REDLOCK_OK)
        return rc;
    rl_op *op = op_new(ctx, OP_PING, now);
    if (!op) {
        rl_handle_free(h);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->h = h;   /* no keys: for the command's sake */
    op->owns_handle = true;
    snprintf(op->what, sizeof op->what, "ping");
    if ((rc = start_round(op, RL_CMD_PING, now)) != REDLOCK_OK) {
        rl_op_free(op);
        return rc;
    }
    *out = op;
    return REDLOCK_OK;
}

int rl_op_deliver(rl_op **out, rl_client *ctx, int64_t now)
{
    rl_op *op = op_new(ctx, OP_DELIVER, now);
    if (!op)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->phase = PHASE_ROUND;
    bool any = false;
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        if (rl_owed_try(ctx, i, now)) {
            op->slots[i].state = SLOT_WANT_CONN;
            op->slots[i].key_slot = rl_owed_slot(ctx, i);
            any = true;
        }
    }
    if (!any)
        finish(op, REDLOCK_OK, "", now);
    *out = op;
    return REDLOCK_OK;
}

void rl_op_free(rl_op *op)
{
    if (!op)
        return;
    if (op->phase != PHASE_DONE)
        detach_cmds(op);   /* freed unfinished: nothing waits any more */
    resume(op);
    end_aside(op);
    for (size_t g = 0; op->part_cmds && g < op->n_parts; g++)
        rl_cmd_unref(op->part_cmds[g]);
    free(op->part_cmds);
    rl_cmd_unref(op->cmd);
    rl_cmd_unref(op->attempt);
    rl_keys_unref(op->channel);
    if (op->owns_handle)
        rl_handle_free(op->h);
    free(op->got);
    free(op->dropped);
    free(op->spare);
    for (size_t j = 0; op->ends && j < op->n_many; j++)
        free(op->ends[j].msg);
    free(op->ends);
    free(op->many);
    free(op->first_key);
    free(op->key_votes);
    free(op);
}

/* ---- driving ---- */

rl_client *rl_op_ctx(const rl_op *op)
{
    return op->ctx;
}

rl_conn *rl_op_conn(const rl_op *op, size_t node)
{
    return op->slots[node].conn;
}

int64_t rl_op_deadline(const rl_op *op, size_t node)
{
    return op->slots[node].sent ? op->slots[node].deadline : INT64_MIN;
}

int64_t rl_op_tail_at(const rl_op *op, int64_t now)
{
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        /* A command held back by the client's own bytes is written for no
         * longer than a connect and an answer would take. */
        int64_t end = s->written || s->deadline < s->tail_until ? s->deadline : s->tail_until;
        if (s->conn && s->sent && rl_conn_sending(s->conn) && end > now && end < first)
            first = end;
    }
    return first;
}

bool rl_op_wants_conn(const rl_op *op, size_t node)
{
    return op->phase == PHASE_ROUND && op->slots[node].state == SLOT_WANT_CONN
        && !op->slots[node].parked;
}

void rl_op_overdue(rl_op *op, rl_conn *c, int64_t now)
{
    /* Deadlines follow the order of the writes, so the entries from the
     * oldest not yet found overdue (c->overdue) are looked at until one
     * whose deadline has not passed, or one not written yet: a stalled
     * node's long stream is not read again on every call. */
    if (c->overdue < c->popped)
        c->overdue = c->popped;
    for (; c->overdue < c->popped + rl_conn_owed(c); c->overdue++) {
        rl_entry *e = rl_conn_entry(c, (size_t)(c->overdue - c->popped));
        if (e->deadline == 0 && e->budget > 0)
            break;   /* not written yet, nor is anything behind it */
        if (e->deadline == 0 || e->late)
            continue;
        if (now <= e->deadline)
            break;
        e->late = true;
        rl_node_failed(&op->ctx->nodes[c->node], RL_NODE_SLOW,
                       "no answer within its deadline", now);
    }
}

void rl_op_attach(rl_op *op, size_t node, rl_conn *c, int64_t now)
{
    slot *s = &op->slots[node];
    s->conn = c;
    s->parked = false;
    c->op = op;
    c->uses++;
    /* Releases owed to the node go behind what the connection carries, but
     * to a connection owing too many, only for a delivery. */
    if (op->kind == OP_DELIVER || rl_conn_owed(c) < RL_CONN_MAX_OWED)
        rl_owed_send(op->ctx, c, now);
    if (op->kind != OP_DELIVER) {
        send_on(op, node, now);
        return;
    }
    const rl_options *o = &op->ctx->opt;
    s->sent = true;
    s->state = SLOT_WAITING;
    s->deadline = now + (c->state == RL_CONN_CONNECTING ? o->connect_timeout_ms : 0)
                + o->node_timeout_ms;
}

void rl_op_no_conn(rl_op *op, size_t node, int code, const char *why, int64_t now)
{
    /* Known down (backing off), or its connect failed: counted, and the
     * node's state is the connect's to tell. */
    rl_node_failed(&op->ctx->nodes[node], RL_NODE_KEEP, NULL, now);
    if (op->kind == OP_UNLOCK)   /* its release is owed, sent once the node answers */
        owe(op, node, op->slots[node].part, now);
    rl_result r;
    rl_result_fail(&r, code, "%s", why);
    vote(op, node, &r, now);
}

/* ---- what the driver does next ---- */

int rl_op_next_wanted(const rl_op *op, size_t from)
{
    /* Connections are taken in the order of the nodes, and none past a node
     * whose connections are all in use (parked): an operation waiting for
     * one holds none that another waiting operation needs first, so
     * operations at the cap never wait for each other in a circle. */
    for (size_t i = 0; op->phase == PHASE_ROUND && i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        if (s->state == SLOT_WANT_CONN && s->parked)
            return -1;
        if (i >= from && s->state == SLOT_WANT_CONN)
            return (int)i;
    }
    return -1;
}

/* The node has all the connections it may have, all in use: the slot waits
 * for one to come back to the driver's pool, asking again every
 * PARK_RETRY_MS, for as long as an answer may be of use (patience). */
static void park(rl_op *op, size_t node, int cap, int64_t now)
{
    slot *s = &op->slots[node];
    s->parked = true;
    s->retry_at = now + PARK_RETRY_MS;
    if (s->park_until == 0) {
        s->park_until = now + patience(op);
        char why[160];
        snprintf(why, sizeof why, "all %d connections the client may have to it (pool_size + %d) "
                 "are in use", cap, RL_CONN_SPARE);
        busy(op, node, why, now);
    }
}

/* Parked slots: asking again once their time came, failed past their bound. */
static void unpark(rl_op *op, int64_t now)
{
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (s->state != SLOT_WANT_CONN || !s->parked)
            continue;
        if (now >= s->park_until) {
            s->parked = false;
            rl_result r;
            rl_result_fail(&r, REDLOCK_ENOQUORUM, "no connection to it came free within %lld ms "
                           "(the client has pool_size + %d, all in use)",
                           (long long)patience(op), RL_CONN_SPARE);
            if (op->kind == OP_UNLOCK)
                owe(op, i, s->part, now);
            vote(op, i, &r, now);
        } else if (now >= s->retry_at) {
            s->parked = false;
        }
    }
}

/* The master of node i whose guard the operation must read first, or -1:
 * a new lock (or a ping) on a Cluster node reads every master's guard before
 * its vote can count (rl_node_census). */
static int census_of(const rl_op *op, size_t i)
{
    rl_verb verb = verb_of(op);
    if (verb != RL_VERB_ACQUIRE && verb != RL_VERB_PING)
        return -1;
    return rl_node_census(&op->ctx->nodes[i]);
}

rl_conn *rl_op_connect(rl_op *op, size_t node, int64_t now)
{
    char why[160];
    int code = rl_node_backoff(&op->ctx->nodes[node], now, why, sizeof why);
    rl_conn *c = NULL;
    slot *s = &op->slots[node];
    /* Connections held by locks pausing between attempts, of drivers that
     * do not take them back, keep no call waiting (rl_op_lend). */
    int cap = (int)op->ctx->opt.pool_size + RL_CONN_SPARE
            + atomic_load(&op->ctx->conns[node].paused);
    bool full = false;
    rl_target to;
    int census = s->ask ? -1 : census_of(op, node);
    if (s->ask)
        rl_node_sentinel_target(&op->ctx->nodes[node], &to);
    else if (census >= 0 && rl_node_server_for(&op->ctx->nodes[node], s->key_slot,
                                               s->ask_server) >= 0)
        rl_node_census_target(&op->ctx->nodes[node], census, &to);
    else
        rl_node_target_slot(&op->ctx->nodes[node], s->key_slot, s->ask_server, &to);
    if (code == REDLOCK_OK
        && !(c = rl_conn_new_capped(op->ctx, node, cap, &to, &full)) && full) {
        park(op, node, cap, now);
        return NULL;
    }
    if (code == REDLOCK_OK && !c) {
        code = REDLOCK_ENOMEM;
        snprintf(why, sizeof why, "out of memory");
    }
    s->ask = false;
    if (!c) {
        rl_op_no_conn(op, node, code, why, now);
        return NULL;
    }
    rl_op_attach(op, node, c, now);
    return c;
}

bool rl_op_wants_fresh(const rl_op *op, size_t node)
{
    if (node >= op->ctx->n_nodes)
        return false;
    const slot *s = &op->slots[node];
    rl_node *n = &op->ctx->nodes[node];
    /* A Cluster node without a slot map asks a seed for one, and one whose
     * masters' guards are not all read reads them first. */
    return s->ask || (n->addr.kind == RL_NODE_CLUSTER
                      && (rl_node_server_for(n, s->key_slot, s->ask_server) < 0
                          || census_of(op, node) >= 0));
}

bool rl_op_fits(const rl_op *op, size_t node, const rl_conn *c)
{
    if (node >= op->ctx->n_nodes || c->node != node)
        return false;
    rl_node *n = &op->ctx->nodes[node];
    const slot *s = &op->slots[node];
    return n->addr.kind != RL_NODE_CLUSTER
        || (c->to.server >= 0 && c->to.server == rl_node_server_for(n, s->key_slot,
                                                                     s->ask_server));
}

/* Whether a connection of the operation has bytes to write now. */
static bool writing(const rl_op *op)
{
    const char *bytes;
    for (size_t i = 0; i < op->ctx->n_nodes; i++)
        if (op->slots[i].conn && rl_conn_output(op->slots[i].conn, &bytes) > 0)
            return true;
    return false;
}

int rl_op_drive(rl_op *op, int64_t now, int64_t *at)
{
    /* Connections first, as every driver did: a round is stepped once its
     * nodes have theirs (or were told they cannot). */
    if (rl_op_next_wanted(op, 0) < 0)
        rl_op_step(op, now);
    int what;
    if (op->phase == PHASE_DONE) {
        *at = rl_op_tail_at(op, now);
        what = RL_DRIVE_DONE | (*at != INT64_MAX ? RL_DRIVE_TAIL : 0);
    } else if (rl_op_next_wanted(op, 0) >= 0) {
        *at = now;
        return RL_DRIVE_CONNECT;
    } else {
        *at = rl_op_wake_at(op);
        what = RL_DRIVE_WAIT | (rl_op_awaits_release(op) ? RL_DRIVE_AWAITS : 0);
    }
    return what | (writing(op) ? RL_DRIVE_WRITE : 0);
}

/* Delivery ends on each node when every reply its connection owed is in
 * (the releases were answered), or at the node's deadline. */
static void step_deliver(rl_op *op, int64_t now)
{
    bool waiting = false;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (s->state != SLOT_WAITING)
            continue;
        if (now >= s->deadline || (s->conn && rl_conn_owed(s->conn) == 0))
            s->state = SLOT_DONE;
        else
            waiting = true;
    }
    if (!waiting)
        finish(op, REDLOCK_OK, "", now);
}

void rl_op_step(rl_op *op, int64_t now)
{
    if (op->phase == PHASE_PAUSE) {
        if (now < op->wake_at)
            return;
        int rc = start_round(op, RL_CMD_ACQUIRE, now);
        if (rc != REDLOCK_OK) {
            finish(op, rc, "the operating system's random source failed", now);
            return;
        }
    }
    if (op->phase != PHASE_ROUND)
        return;
    unpark(op, now);
    if (op->kind == OP_DELIVER) {
        step_deliver(op, now);
        return;
    }
    const rl_options *o = &op->ctx->opt;
    for (size_t i = 0; i < op->ctx->n_nodes; i++) {
        slot *s = &op->slots[i];
        if (s->state != SLOT_WAITING || now < s->deadline)
            continue;
        rl_result r;
        rl_node *node = &op->ctx->nodes[i];
        if (s->conn->state == RL_CONN_OPEN && !s->written
            && now < s->queued_at + patience(op)) {
            /* Held back by the client's own bytes: no deadline runs yet. */
            int64_t next = now + o->node_timeout_ms, bound = s->queued_at + patience(op);
            s->deadline = next < bound ? next : bound;
            continue;
        }
        if (s->conn->state == RL_CONN_OPEN && !s->written) {
            /* Never written: the client's own bytes held it back, which
             * says nothing of the node. */
            rl_result_fail(&r, REDLOCK_ENOQUORUM, "not written within %lld ms: the client's "
                           "connection to it is busy with its own commands",
                           (long long)(now - s->queued_at));
            busy(op, i, r.why, now);
        } else if (s->conn->state == RL_CONN_CONNECTING) {
            rl_node_connect_failed(node, now);
            rl_conn_break(s->conn, REDLOCK_ENOQUORUM, "connect timed out");
            rl_result_fail(&r, REDLOCK_ENOQUORUM, "cannot connect within %lld ms%s",
                           (long long)o->connect_timeout_ms,
                           node->addr.tls ? " (TCP, then the TLS handshake)" : "");
            rl_node_failed(node, RL_NODE_DOWN, r.why, now);
        } else {
            rl_result_fail(&r, REDLOCK_ENOQUORUM, "no answer within %lld ms",
                           (long long)o->node_timeout_ms);
            rl_node_failed(node, RL_NODE_SLOW, r.why, now);
            mark_late(s->conn, cmd_of(op, i));
        }
        vote(op, i, &r, now);
    }
    try_decide(op, now);
}

bool rl_op_cancel(rl_op *op, int64_t now)
{
    if (op->kind != OP_LOCK || op->phase == PHASE_DONE)
        return false;
    if (op->phase == PHASE_ROUND) {
        detach_cmds(op);
        undo_attempt(op, now);
    }
    snprintf(op->msg, sizeof op->msg, "%s: cancelled while waiting", op->what);
    finish(op, REDLOCK_ECANCELED, op->msg, now);
    return true;
}

bool rl_op_awaits_release(const rl_op *op)
{
    return op->kind == OP_LOCK && op->phase == PHASE_PAUSE && op->rc == REDLOCK_ELOCKED;
}

const rl_keys *rl_op_keys(const rl_op *op)
{
    if (op->channel)
        return op->channel;
    return op->h ? op->h->keys : NULL;
}

const char *rl_op_waiter(const rl_op *op)
{
    return op->waiter;
}

const char *rl_op_follows(const rl_op *op)
{
    return op->kind == OP_EXTEND || op->kind == OP_UNLOCK ? op->h->token : NULL;
}

void rl_op_wake(rl_op *op, int64_t now)
{
    if (op->kind == OP_LOCK && op->phase == PHASE_PAUSE && op->wake_at > now)
        op->wake_at = now;
}

void rl_op_note(rl_op *op, const char *note)
{
    if (op->phase == PHASE_DONE && op->rc == REDLOCK_ELOCKED && note && note[0]) {
        size_t len = strlen(op->msg);
        snprintf(op->msg + len, sizeof op->msg - len, "; %s", note);
    }
}

int64_t rl_op_wake_at(const rl_op *op)
{
    if (op->phase == PHASE_PAUSE)
        return op->wake_at;
    int64_t first = INT64_MAX;
    for (size_t i = 0; op->phase == PHASE_ROUND && i < op->ctx->n_nodes; i++) {
        const slot *s = &op->slots[i];
        if (s->state == SLOT_WAITING && s->deadline < first)
            first = s->deadline;
        if (s->state == SLOT_WANT_CONN && s->parked && s->retry_at < first)
            first = s->retry_at;
    }
    return first;
}

bool rl_op_done(const rl_op *op)
{
    return op->phase == PHASE_DONE;
}

int rl_op_status(const rl_op *op)
{
    return op->rc;
}

const char *rl_op_message(const rl_op *op)
{
    return op->msg;
}

bool rl_op_answer(const rl_op *op, int64_t *ttl_ms, size_t *deleted)
{
    if (ttl_ms)
        *ttl_ms = op->answer.held ? op->answer.ttl_ms : -2;
    if (deleted)
        *deleted = op->answer.deleted;
    return op->answer.held;
}

redlock_handle *rl_op_handle(const rl_op *op)
{
    return op->kind == OP_EXTEND || op->kind == OP_UNLOCK ? op->h : NULL;
}

redlock_handle *rl_op_take_handle(rl_op *op)
{
    if (op->kind != OP_LOCK || op->rc != REDLOCK_OK || !op->owns_handle)
        return NULL;
    op->owns_handle = false;
    return op->h;
}

rl_conn *rl_op_take_conn(rl_op *op)
{
    rl_conn *c = NULL;
    while (!c && op->next_conn < op->ctx->n_nodes) {
        slot *s = &op->slots[op->next_conn++];
        c = s->conn;
        s->conn = NULL;
    }
    if (!c && op->n_dropped > 0)
        c = op->dropped[--op->n_dropped];
    if (!c)
        c = rl_op_spare_conn(op);
    if (c)
        c->op = NULL;
    return c;
}

/* ---- connection events ---- */

static void reply_many(rl_op *op, rl_conn *c, const rl_entry *e, const redisReply *reply,
                       int64_t now);

/* A chained node answered for its current part (r): it goes on to the next
 * part, on its connection when that serves the next part's slot, else on
 * another (true); or its chain ends here and r, or the first answer of its
 * chain that was not a yes, is its vote (false, r set so). A lock's or an
 * extend's chain goes on after a yes; an unlock's after any answer, as every
 * part must be released. */
static bool next_part(rl_op *op, size_t i, rl_result *r, int64_t now)
{
    slot *s = &op->slots[i];
    if (r->vote != RL_VOTE_YES && s->chain.vote == RL_VOTE_YES)
        s->chain = *r;
    bool more = s->part + 1 < op->n_parts
             && (op->kind == OP_UNLOCK || r->vote == RL_VOTE_YES);
    if (!more) {
        if (s->chain.vote != RL_VOTE_YES)
            *r = s->chain;
        return false;
    }
    s->part++;
    s->key_slot = part_slot(op, s->part);
    s->ask_server = -1;
    s->sent = s->maybe_ran = s->retried = false;
    s->redirects = 0;
    s->park_until = 0;
    if (s->conn && !rl_conn_serves(s->conn, op->parts[s->part]->k[0]))
        set_aside(op, i);
    if (s->conn) {
        send_on(op, i, now);
    } else {
        s->state = SLOT_WANT_CONN;
    }
    try_decide(op, now);
    return true;
}

void rl_op_reply(rl_op *op, rl_conn *c, const rl_entry *e, const redisReply *reply, int64_t now)
{
    size_t i = c->node;
    slot *s = &op->slots[i];
    rl_cmd *cmd = cmd_of(op, i);
    if (e->cmd != cmd || s->state != SLOT_WAITING || s->conn != c) {
        rl_cmd_late_reply(e, c, reply, now);
        return;
    }
    if (rl_cmd_unrun(c, e->form, reply)) {
        /* Not run for the way it was sent: the node lost its scripts (SCRIPT
         * FLUSH, a failover), or has no library to call, or its ACL allows
         * the other way only. It follows again on the same connection, in
         * the way that runs, a new entry of the stream. */
        if (rl_cmd_send_again(cmd, c, e->form, reply) == REDLOCK_OK) {
            op->saw_noscript = true;
            queued(op, i, now);
            return;
        }
    }
    if (op->kind == OP_EXTEND_MANY) {
        reply_many(op, c, e, reply, now);
        return;
    }
    rl_result r;
    if (e->form == RL_FORM_COUNT) {
        /* The INCR behind a fenced SET: the node's answer is both. */
        if (!s->counting)
            return;
        s->counting = false;
        r = s->set;
        rl_cmd_count(reply, &r, op->got + i);
        if (s->set.vote == RL_VOTE_YES && r.vote == RL_VOTE_FAILED
            && reply->type == REDIS_REPLY_ERROR)   /* the INCR refused (its SET's was counted) */
            rl_node_failed(&op->ctx->nodes[i], rl_node_state_after(r.code), r.why, now);
        vote(op, i, &r, now);
        return;
    }
    rl_cmd_classify(cmd, e->form, reply, &r);
    rl_cmd_refused_both(c, e->form, &r);
    if (r.vote == RL_VOTE_FAILED)   /* an error reply: refused credentials, an ACL's NOPERM... */
        rl_node_failed(&op->ctx->nodes[i], rl_node_state_after(r.code), r.why, now);
    else if (!e->late)
        rl_node_answered(&op->ctx->nodes[i], e->sent_at ? now - e->sent_at : -1, now);
    if (chained(op, i) && next_part(op, i, &r, now))
        return;
    if (e->form == RL_FORM_SET && op->cmd->fenced) {
        s->set = r;
        s->counting = true;
        return;
    }
    if (r.vote == RL_VOTE_YES && op->cmd->fenced)
        rl_cmd_fences(op->cmd, reply, op->got + i * op->h->keys->n);
    vote(op, i, &r, now);
}

void rl_op_entry_lost(rl_op *op, rl_conn *c, const rl_entry *e, bool written, int64_t now)
{
    /* The current attempt's acquire (its fence round has op->cmd) may have
     * run: a failed attempt is undone there too. */
    bool ours = e->cmd == op->cmd || (e->cmd == op->attempt && op->phase == PHASE_ROUND)
              || (e->cmd == cmd_of(op, c->node) && op->phase == PHASE_ROUND);
    if (ours && op->kind == OP_UNLOCK)   /* a release that may not have run is owed */
        owe(op, c->node, op->slots[c->node].part, now);
    else if (ours && written)
        op->slots[c->node].maybe_ran = true;
    else if (!ours)
        rl_cmd_late_lost(e, op->ctx, c->node, written, now);
}

void rl_op_conn_connected(rl_op *op, rl_conn *c, int64_t now)
{
    slot *s = &op->slots[c->node];
    if (s->conn == c && s->state == SLOT_WAITING)
        s->deadline = now + op->ctx->opt.node_timeout_ms + (op->cmd ? rl_cmd_work_ms(op->cmd) : 0);
}

void rl_op_conn_wrote(rl_op *op, rl_conn *c, int64_t now)
{
    slot *s = &op->slots[c->node];
    if (s->conn == c && s->state == SLOT_WAITING && s->sent && !s->written
        && op->kind != OP_DELIVER && rl_conn_written(c, s->end)) {
        s->written = true;
        s->deadline = now + op->ctx->opt.node_timeout_ms + (op->cmd ? rl_cmd_work_ms(op->cmd) : 0);
    }
}

void rl_op_conn_lost(rl_op *op, rl_conn *c, int64_t now)
{
    size_t i = c->node;
    slot *s = &op->slots[i];
    if (s->conn != c)
        return;
    s->conn = NULL;
    c->op = NULL;
    if (s->state != SLOT_WAITING)
        return;
    if (op->kind == OP_DELIVER) {
        s->state = SLOT_DONE;
        return;
    }
    /* A Sentinel node's connection that ended without writing the command
     * (a sentinel named the master, or the master turned replica), or a
     * Cluster node's (a seed gave the map, a master its guard): the command
     * goes on a new connection; a few times a round, so that every sentinel
     * may be asked, and every master of a Cluster. */
    const rl_node *n = &op->ctx->nodes[i];
    size_t redirects = n->addr.n_sentinels + 4
                     + (n->addr.kind == RL_NODE_CLUSTER ? RL_NODE_MASTERS_MAX : 0);
    if (c->redirected && s->redirects < redirects) {
        s->redirects++;
        s->state = SLOT_WANT_CONN;
        /* A -ASK: this command alone goes to the master it named. */
        s->ask_server = c->ask_server;
        return;
    }
    /* A pooled connection may simply have gone stale (the node restarted
     * since it was used): the command goes once more on a new connection.
     * That is safe because an acquire that finds our own token counts as
     * done, and extend and release may run twice. */
    if (c->uses > 1 && c->connected && !s->retried) {
        s->retried = true;
        s->state = SLOT_WANT_CONN;
        return;
    }
    rl_result r;
    rl_result_fail(&r, c->code ? c->code : REDLOCK_ENOQUORUM, "%s", c->why);
    /* A refused handshake or a failed connect told the node's state
     * already; a connection lost once open leaves it to the next connect. */
    rl_node_failed(&op->ctx->nodes[i], RL_NODE_KEEP, c->why, now);
    vote(op, i, &r, now);
}

/* ---- the renewal of many locks ----
 *
 * One command per node renews every lock of the batch (the extend_many
 * script: each key by its own token and lease, one answer per key), and
 * each lock is decided on its own by the one verdict (rl_quorum_decide,
 * verb extend) over the nodes' answers for its keys: a node votes yes for
 * a lock when it extended every one of its keys, no when one was not ours,
 * and fails for it as the node failed for the whole command (no answer,
 * an error, the restart guard). A lock decided ends as an extend would:
 * its expiry moved, or held no more. The operation ends when every lock is
 * decided; its status is REDLOCK_OK, each lock's is rl_op_many_status. */

/* The event extended of one lock a renewal extended, as an extend tells it
 * (a failure is its keeper's to tell: keep.h). */
static void told_extended(const rl_op *op, const redlock_handle *h, const rl_result *votes,
                          int64_t now)
{
    if (!rl_logging(&op->ctx->log, REDLOCK_LOG_DEBUG))
        return;
    size_t n = op->ctx->n_nodes, yes = 0;
    for (size_t i = 0; i < n; i++)
        yes += votes[i].vote == RL_VOTE_YES;
    char resources[256] = "", owner[RL_OWNER_LEN + 1] = "";
    rl_log_resources(op->ctx, h->keys, resources, sizeof resources);
    rl_log_owner(h->token, owner);
    rl_log_emit(&op->ctx->log, REDLOCK_LOG_DEBUG, "extended",
                "op=renew resource=%s owner=%s nodes=%zu/%zu ms=%lld validity_ms=%lld",
                resources, owner, yes, n, (long long)(now - op->started),
                (long long)(h->expires_at - now));
}

static void end_many(rl_op *op, size_t j, int rc, const char *msg)
{
    many_end *end = &op->ends[j];
    end->decided = true;
    end->rc = rc;
    if (rc != REDLOCK_OK && msg)
        end->msg = strdup(msg);   /* out of memory: the code alone */
    op->n_undecided--;
}

int rl_op_extend_many(rl_op **out, rl_client *ctx, redlock_handle *const *hs, size_t n,
                      int64_t now)
{
    if (n == 0)
        return rl_fail(REDLOCK_EINVAL, "a renewal of no lock");
    for (size_t j = 1; j < n; j++)
        if (!rl_op_batches_with(hs[0], hs[j]))
            return rl_fail(REDLOCK_EINVAL, "a renewal of locks in different slots of a "
                           "Cluster node (rl_op_batches_with)");
    rl_op *op = op_new(ctx, OP_EXTEND_MANY, now);
    if (!op)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    op->many = malloc(n * sizeof *op->many);
    op->ends = calloc(n, sizeof *op->ends);
    op->first_key = malloc((n + 1) * sizeof *op->first_key);
    if (!op->many || !op->ends || !op->first_key) {
        rl_op_free(op);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    memcpy(op->many, hs, n * sizeof *hs);
    op->n_many = op->n_undecided = n;
    snprintf(op->what, sizeof op->what, "renewal of %zu locks", n);
    /* The locks that can be renewed, and their keys. */
    size_t n_keys = 0;
    for (size_t j = 0; j < n; j++) {
        redlock_handle *h = hs[j];
        op->first_key[j] = n_keys;
        if (!h->held) {
            end_many(op, j, REDLOCK_ENOTHELD, h->released ? "extend: the lock was released"
                                                         : "extend: the lock was lost");
        } else if (h->expires_at <= now) {
            h->held = false;
            char why[96];
            snprintf(why, sizeof why, "extend: the lock expired %lld ms ago",
                     (long long)(now - h->expires_at));
            end_many(op, j, REDLOCK_ENOTHELD, why);
        } else if (check_lease(ctx, h->lease_ms) != REDLOCK_OK) {
            end_many(op, j, REDLOCK_EINVAL, rl_errmsg());
        } else {
            n_keys += h->keys->n;
        }
    }
    op->first_key[n] = n_keys;
    if (op->n_undecided == 0) {
        finish(op, REDLOCK_OK, "", now);
        *out = op;
        return REDLOCK_OK;
    }
    rl_keys *keys = rl_keys_new(n_keys);
    if (keys && n == 1) {
        keys->kind = hs[0]->keys->kind;
        keys->permits = hs[0]->keys->permits;
    }
    rl_cmd *cmd = keys ? rl_cmd_new_many(keys) : NULL;
    rl_keys_unref(keys);
    op->key_votes = malloc(ctx->n_nodes * n_keys);
    if (!cmd || !op->key_votes) {
        rl_cmd_unref(cmd);
        rl_op_free(op);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    op->cmd = cmd;
    for (size_t j = 0; j < n; j++) {
        redlock_handle *h = hs[j];
        if (op->ends[j].decided)
            continue;
        int64_t lease = h->lease_ms;
        for (size_t k = 0; k < h->keys->n; k++) {
            size_t at = op->first_key[j] + k;
            if (!(keys->k[at] = strdup(h->keys->k[k]))) {
                rl_op_free(op);
                return rl_fail(REDLOCK_ENOMEM, "out of memory");
            }
            memcpy(cmd->tokens[at], h->token, sizeof cmd->tokens[at]);
            cmd->leases[at] = lease;
        }
        /* As rl_op_extend: a node may apply the lease the moment it gets
         * the command, so the lock lasts no longer than that from now. */
        op->ends[j].old_expires_at = h->expires_at;
        int64_t shorter = now + lease - rl_drift_ms(lease, ctx->opt.drift_factor);
        if (shorter < h->expires_at)
            h->expires_at = shorter;
        rl_ctx_note_lease(ctx, lease);
    }
    cmd->op = op;
    cmd->cacheable = true;
    /* One lock whose keys span a Cluster node's slots: renewed there one
     * part at a time, as its extend would be. */
    if (n == 1 && hs[0]->n_parts > 1 && !op->ends[0].decided) {
        op->n_parts = hs[0]->n_parts;
        op->parts = hs[0]->parts;
        if (new_part_cmds(op, RL_CMD_EXTEND_MANY) != REDLOCK_OK) {
            rl_op_free(op);
            return rl_fail(REDLOCK_ENOMEM, "out of memory");
        }
    }
    op->phase = PHASE_ROUND;
    op->round_start = now;
    int key_slot = has_cluster(ctx) ? keys_slot(keys) : -1;   /* only a Cluster node's */
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        op->slots[i].chain.vote = RL_VOTE_YES;
        op->results[i].vote = RL_VOTE_PENDING;
        op->slots[i].state = SLOT_WANT_CONN;
        op->slots[i].ask = rl_node_poll_due(&ctx->nodes[i], ctx->opt.sentinel_poll_ms, now);
        op->slots[i].key_slot = key_slot;
    }
    *out = op;
    return REDLOCK_OK;
}

bool rl_op_batches_with(const redlock_handle *a, const redlock_handle *b)
{
    if (a == b)
        return true;
    /* A read-write lock's renewal is rw.lua's, one lock a call. */
    if (a->keys->kind != RL_LOCK_PLAIN || b->keys->kind != RL_LOCK_PLAIN)
        return false;
    return a->ctx == b->ctx && (!has_cluster(a->ctx) || (a->n_parts < 2 && b->n_parts < 2
                                && keys_slot(a->keys) == keys_slot(b->keys)));
}

/* A node's reply to the renewal: its answer for each key, or a failure of
 * the whole command. */
static void reply_many(rl_op *op, rl_conn *c, const rl_entry *e, const redisReply *reply,
                       int64_t now)
{
    size_t i = c->node;
    size_t n_keys = op->first_key[op->n_many], at = 0;
    for (size_t g = 0; chained(op, i) && g < op->slots[i].part; g++)
        at += op->parts[g]->n;   /* a chained node answers for its part's keys */
    rl_result r;
    memset(&r, 0, sizeof r);
    if (rl_cmd_many_votes(cmd_of(op, i), reply, op->key_votes + i * n_keys + at, &r)) {
        r.vote = RL_VOTE_YES;   /* the node answered: each lock's vote is its keys' */
        if (!e->late)
            rl_node_answered(&op->ctx->nodes[i], e->sent_at ? now - e->sent_at : -1, now);
    } else {
        rl_cmd_refused_both(c, e->form, &r);
        rl_node_failed(&op->ctx->nodes[i], rl_node_state_after(r.code), r.why, now);
    }
    if (chained(op, i) && next_part(op, i, &r, now))
        return;
    vote(op, i, &r, now);
    try_decide(op, now);
}

/* Lock j's vote from node i, as the node answered for its keys. */
static void vote_of(const rl_op *op, size_t j, size_t i, rl_result *out)
{
    const rl_result *node = &op->results[i];
    if (node->vote != RL_VOTE_YES) {
        *out = *node;
        return;
    }
    memset(out, 0, sizeof *out);
    out->vote = RL_VOTE_YES;
    const signed char *votes = op->key_votes + i * op->first_key[op->n_many];
    for (size_t k = op->first_key[j]; k < op->first_key[j + 1]; k++) {
        if (votes[k] < 0) {
            rl_result_fail(out, REDLOCK_EWRONGTYPE, "key '%.100s' holds another type, not a "
                           "lock", op->cmd->keys->k[k]);
            return;
        }
        if (votes[k] == 0)
            out->vote = RL_VOTE_NO;
    }
}

static void decide_many(rl_op *op, bool final, int64_t now)
{
    size_t n_nodes = op->ctx->n_nodes;
    rl_result votes[REDLOCK_MAX_NODES];
    char what[300], msg[RL_ERRMSG_MAX];
    for (size_t j = 0; j < op->n_many; j++) {
        if (op->ends[j].decided)
            continue;
        redlock_handle *h = op->many[j];
        for (size_t i = 0; i < n_nodes; i++)
            vote_of(op, j, i, &votes[i]);
        const rl_keys *k = h->keys;
        if (k->n == 1)
            snprintf(what, sizeof what, "extend '%.200s'", k->k[0]);
        else
            snprintf(what, sizeof what, "extend '%.200s' and %zu more", k->k[0], k->n - 1);
        rl_round round = {
            .verb = RL_VERB_EXTEND, .results = votes, .start = op->round_start, .now = now,
            .ttl_ms = op->cmd->leases[op->first_key[j]], .permits = k->permits, .final = final,
            .old_expires_at = op->ends[j].old_expires_at,
        };
        rl_verdict v;
        rl_quorum_decide(op->ctx, &round, what, &v, msg, sizeof msg);
        if (!v.decided)
            continue;
        /* As an extend's end (end_round). */
        if (h->lost) {
            h->held = false;
            end_many(op, j, REDLOCK_ENOTHELD, "the lock was lost while it was being extended");
            continue;
        }
        h->held = v.held && !h->released;
        if (v.held || v.expires_at < h->expires_at)
            h->expires_at = v.expires_at;
        end_many(op, j, v.rc, msg);
        if (v.rc == REDLOCK_OK)
            told_extended(op, h, votes, now);
    }
    if (op->n_undecided == 0)
        finish(op, REDLOCK_OK, "", now);
}

size_t rl_op_many_count(const rl_op *op)
{
    return op->kind == OP_EXTEND_MANY ? op->n_many : 0;
}

redlock_handle *rl_op_many_handle(const rl_op *op, size_t j)
{
    return op->kind == OP_EXTEND_MANY && j < op->n_many ? op->many[j] : NULL;
}

int rl_op_many_status(const rl_op *op, size_t j, const char **message)
{
    if (op->kind != OP_EXTEND_MANY || j >= op->n_many || !op->ends[j].decided) {
        if (message)
            *message = "no such lock in this renewal, or not decided";
        return REDLOCK_EINVAL;
    }
    if (message)
        *message = op->ends[j].msg ? op->ends[j].msg : "";
    return op->ends[j].rc;
}
