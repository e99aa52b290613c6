/* records.c - the nodes remember each other (see records.h). */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "node.h"
#include "records.h"

#define ID_LEN 40
#define RESEND_MS 1000           /* an addition unanswered this long is sent again */
#define RECORD_MAX (64 * 1024)   /* more of a record is not read (it holds young servers back) */

/* What this client knows of one node's record. */
typedef struct book {
    char *ids;            /* " id id...": run_ids known to be in it */
    size_t len;
    bool junk;            /* it held something that is no run_id (names no server here) */
    char of[ID_LEN + 1];  /* the run_id of the server it was read from ("": unread) */
    bool refused;
    char sending[RL_RECORDS_OWED_MAX];   /* the addition out, "" none */
    int64_t sent_at;
} book;

struct rl_records {
    pthread_mutex_t mu;
    size_t n;
    book books[];
};

/* Each node's server as its INFO said, taken before the records' lock (the
 * nodes' locks are never taken under it). */
typedef struct ident {
    char id[ID_LEN + 1];
    int64_t started_at;
    bool keeps;
} ident;

rl_records *rl_records_new(size_t n_nodes)
{
    rl_records *r = calloc(1, sizeof *r + n_nodes * sizeof(book));
    if (!r)
        return NULL;
    pthread_mutex_init(&r->mu, NULL);
    r->n = n_nodes;
    return r;
}

void rl_records_free(rl_records *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        free(r->books[i].ids);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* Whether the client uses the records at all (the option restart_records). */
static bool used(const rl_client *ctx)
{
    return ctx->opt.restart_guard && ctx->opt.restart_records && ctx->records;
}

bool rl_records_kept(rl_client *ctx, size_t i)
{
    if (!used(ctx) || ctx->nodes[i].addr.kind == RL_NODE_CLUSTER)
        return false;
    pthread_mutex_lock(&ctx->records->mu);
    bool refused = ctx->records->books[i].refused;
    pthread_mutex_unlock(&ctx->records->mu);
    return !refused;
}

static void identify(rl_client *ctx, ident *out)
{
    for (size_t i = 0; i < ctx->n_nodes; i++) {
        rl_node_identity(&ctx->nodes[i], out[i].id, &out[i].started_at);
        out[i].keeps = used(ctx) && ctx->nodes[i].addr.kind != RL_NODE_CLUSTER;
    }
}

/* Whether " id" is in b's ids. */
static bool lists(const book *b, const char *id)
{
    for (size_t at = 0; at + 1 + ID_LEN <= b->len; at += 1 + ID_LEN)
        if (memcmp(b->ids + at + 1, id, ID_LEN) == 0)
            return true;
    return false;
}

/* Whether the book was read from the server node i is now (and may be used). */
static bool current(const book *b, const ident *who)
{
    return !b->refused && who->keeps && who->id[0] && strcmp(b->of, who->id) == 0;
}

static bool add_id(book *b, const char *id)
{
    char *grown = realloc(b->ids, b->len + 1 + ID_LEN + 1);
    if (!grown)
        return false;
    b->ids = grown;
    b->ids[b->len] = ' ';
    memcpy(b->ids + b->len + 1, id, ID_LEN);
    b->len += 1 + ID_LEN;
    b->ids[b->len] = '\0';
    return true;
}

void rl_records_read(rl_client *ctx, size_t i, const char *value, size_t len)
{
    ident who[REDLOCK_MAX_NODES];
    identify(ctx, who);
    rl_records *r = ctx->records;
    pthread_mutex_lock(&r->mu);
    book *b = &r->books[i];
    b->len = 0;
    b->junk = false;
    if (len > RECORD_MAX) {
        len = RECORD_MAX;
        b->junk = true;
    }
    size_t at = 0;
    while (value && at < len) {
        if (value[at] == ' ') {
            at++;
            continue;
        }
        size_t end = at;
        while (end < len && value[end] != ' ')
            end++;
        bool id = end - at == ID_LEN;
        for (size_t k = at; id && k < end; k++)
            id = isxdigit((unsigned char)value[k]) != 0;
        if (!id)
            b->junk = true;
        else if (!lists(b, value + at) && !add_id(b, value + at))
            b->junk = true;   /* out of memory: it names more than this client keeps */
        at = end;
    }
    memcpy(b->of, who[i].id, sizeof b->of);
    pthread_mutex_unlock(&r->mu);
}

void rl_records_refused(rl_client *ctx, size_t i)
{
    pthread_mutex_lock(&ctx->records->mu);
    ctx->records->books[i].refused = true;
    pthread_mutex_unlock(&ctx->records->mu);
}

/* The nodes that keep records, and how many make a majority of them. */
static size_t keepers(const rl_records *r, const ident *who, size_t n)
{
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        k += who[j].keeps && !r->books[j].refused;
    return k;
}

/* How many current records name id. */
static size_t recorded(const rl_records *r, const ident *who, size_t n, const char *id)
{
    size_t k = 0;
    for (size_t j = 0; j < n; j++)
        k += current(&r->books[j], &who[j]) && lists(&r->books[j], id);
    return k;
}

/* What the records say of the group: every keeper's record read from its
 * server now and none names a server that is not in the group now (fresh);
 * one does (replaced: a record that does not read as run_ids counts so);
 * or not every record is read yet (unknown). */
typedef enum group { GROUP_FRESH, GROUP_UNKNOWN, GROUP_REPLACED } group;

static group judge_group(const rl_records *r, const ident *who, size_t n)
{
    group g = GROUP_FRESH;
    for (size_t j = 0; j < n; j++) {
        const book *b = &r->books[j];
        if (!who[j].keeps || b->refused)
            continue;
        if (!current(b, &who[j])) {
            g = GROUP_UNKNOWN;
            continue;
        }
        if (b->junk)
            return GROUP_REPLACED;
        for (size_t at = 0; at + 1 + ID_LEN <= b->len; at += 1 + ID_LEN) {
            bool here = false, all_known = true;
            for (size_t k = 0; k < n && !here; k++) {
                here = who[k].keeps && memcmp(b->ids + at + 1, who[k].id, ID_LEN) == 0;
                all_known &= !who[k].keeps || who[k].id[0];
            }
            if (!here && all_known)
                return GROUP_REPLACED;
            if (!here)
                g = GROUP_UNKNOWN;
        }
    }
    return g;
}

static int64_t young_for(rl_client *ctx, size_t i, const ident *who, int64_t now)
{
    if (who[i].started_at == INT64_MIN)
        return 0;
    int64_t left = who[i].started_at + rl_node_guard_ms(&ctx->nodes[i]) - now;
    return left > 0 ? left : 0;
}

/* Whether node i's run_id may be added to the records now. */
static bool may_add(rl_client *ctx, size_t i, const ident *who, int64_t now)
{
    return young_for(ctx, i, who, now) == 0
        || judge_group(ctx->records, who, ctx->n_nodes) == GROUP_FRESH;
}

size_t rl_records_owed(rl_client *ctx, size_t i, int64_t now, char *out, size_t cap)
{
    ident who[REDLOCK_MAX_NODES];
    identify(ctx, who);
    rl_records *r = ctx->records;
    size_t len = 0;
    pthread_mutex_lock(&r->mu);
    book *b = &r->books[i];
    if (current(b, &who[i]) && (!b->sending[0] || now - b->sent_at >= RESEND_MS)) {
        for (size_t j = 0; j < ctx->n_nodes && len + 1 + ID_LEN < cap; j++) {
            if (!who[j].keeps || !who[j].id[0] || lists(b, who[j].id)
                || !may_add(ctx, j, who, now))
                continue;
            out[len] = ' ';
            memcpy(out + len + 1, who[j].id, ID_LEN);
            len += 1 + ID_LEN;
        }
        out[len] = '\0';
        if (len) {
            memcpy(b->sending, out, len + 1);
            b->sent_at = now;
        }
    }
    pthread_mutex_unlock(&r->mu);
    return len;
}

void rl_records_added(rl_client *ctx, size_t i)
{
    rl_records *r = ctx->records;
    pthread_mutex_lock(&r->mu);
    book *b = &r->books[i];
    size_t len = strlen(b->sending);
    for (size_t at = 0; at + 1 + ID_LEN <= len; at += 1 + ID_LEN)
        if (!lists(b, b->sending + at + 1))
            add_id(b, b->sending + at + 1);   /* out of memory: read again next time */
    b->sending[0] = '\0';
    pthread_mutex_unlock(&r->mu);
}

rl_standing rl_records_standing(rl_client *ctx, size_t i, int64_t now, int64_t *left_ms)
{
    *left_ms = 0;
    if (!used(ctx) || ctx->nodes[i].addr.kind == RL_NODE_CLUSTER)
        return RL_STANDING_COUNTS;
    ident who[REDLOCK_MAX_NODES];
    identify(ctx, who);
    /* Without its INFO (an ACL without it) nothing tells a restart. */
    if (!who[i].id[0] || who[i].started_at == INT64_MIN)
        return RL_STANDING_COUNTS;
    rl_records *r = ctx->records;
    pthread_mutex_lock(&r->mu);
    rl_standing s = RL_STANDING_COUNTS;
    size_t k = keepers(r, who, ctx->n_nodes);
    if (k > 0 && recorded(r, who, ctx->n_nodes, who[i].id) < k / 2 + 1) {
        /* Young, and not in the records: pending while they may yet vouch
         * for it (or are not all read), held when they name a server gone. */
        *left_ms = young_for(ctx, i, who, now);
        s = *left_ms > 0 && judge_group(r, who, ctx->n_nodes) == GROUP_REPLACED
            ? RL_STANDING_HELD : RL_STANDING_PENDING;
    }
    pthread_mutex_unlock(&r->mu);
    return s;
}
