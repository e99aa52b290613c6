/*
 * slots.c - Redis Cluster's slots, slot maps and redirections (see slots.h).
 * The key slot follows the Redis Cluster specification: CRC16 (XMODEM) of
 * the key or of its hash tag, modulo 16384.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hiredis/hiredis.h>

#include "slots.h"

#define MAX_SHARDS INT16_MAX

uint16_t rl_crc16(const void *buf, size_t len)
{
    const unsigned char *p = buf;
    uint16_t crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (uint16_t)(p[i] << 8);
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
    }
    return crc;
}

bool rl_key_has_tag(const char *key)
{
    const char *open = strchr(key, '{');
    const char *close = open ? strchr(open + 1, '}') : NULL;
    return close && close > open + 1;
}

int rl_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len);
    if (open != NULL) {
        size_t from = (size_t)(open - key) + 1;
        const char *close = memchr(key + from, '}', len - from);
        if (close != NULL && close > key + from)
            return rl_crc16(key + from, (size_t)(close - (key + from))) % RL_SLOTS;
    }
    return rl_crc16(key, len) % RL_SLOTS;
}

/* ---- the map ---- */

void rl_slot_map_init(rl_slot_map *m)
{
    for (size_t i = 0; i < RL_SLOTS; i++)
        m->shard_of[i] = -1;
    m->shards = NULL;
    m->n_shards = 0;
}

static void node_free(rl_shard_node *n)
{
    free(n->host);
    free(n->id);
    n->host = NULL;
    n->id = NULL;
}

void rl_slot_map_free(rl_slot_map *m)
{
    for (size_t i = 0; i < m->n_shards; i++) {
        node_free(&m->shards[i].master);
        for (size_t j = 0; j < m->shards[i].n_replicas; j++)
            node_free(&m->shards[i].replicas[j]);
        free(m->shards[i].replicas);
    }
    free(m->shards);
    rl_slot_map_init(m);
}

const rl_shard *rl_slot_map_shard(const rl_slot_map *m, int slot)
{
    if (slot < 0 || slot >= RL_SLOTS || m->shard_of[slot] < 0)
        return NULL;
    return &m->shards[m->shard_of[slot]];
}

/* The same server: the same node id when both have one, else host:port. */
static bool same_node(const rl_shard_node *a, const char *id, const char *host, int port)
{
    if (a->id != NULL && id != NULL)
        return strcmp(a->id, id) == 0;
    return a->port == port && strcasecmp(a->host, host) == 0;
}

static int shard_find(const rl_slot_map *m, const char *id, const char *host, int port)
{
    for (size_t i = 0; i < m->n_shards; i++)
        if (same_node(&m->shards[i].master, id, host, port))
            return (int)i;
    return -1;
}

static char *dup_str(const char *s, size_t len)
{
    char *p = malloc(len + 1);
    if (p != NULL) {
        memcpy(p, s, len);
        p[len] = '\0';
    }
    return p;
}

static int node_set(rl_shard_node *out, const char *id, const char *host, int port)
{
    out->port = port;
    out->host = dup_str(host, strlen(host));
    out->id = id != NULL ? dup_str(id, strlen(id)) : NULL;
    if (out->host == NULL || (id != NULL && out->id == NULL)) {
        node_free(out);
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    }
    return REDLOCK_OK;
}

/* Adds a shard with this master and no replicas: its index, or a negative code. */
static int shard_add(rl_slot_map *m, const char *id, const char *host, int port)
{
    if (m->n_shards >= MAX_SHARDS)
        return rl_fail(REDLOCK_EREDIS, "cluster: more than %d shards", MAX_SHARDS);
    rl_shard *grown = realloc(m->shards, (m->n_shards + 1) * sizeof *grown);
    if (grown == NULL)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    m->shards = grown;
    rl_shard *s = &m->shards[m->n_shards];
    memset(s, 0, sizeof *s);
    int rc = node_set(&s->master, id, host, port);
    if (rc != REDLOCK_OK)
        return rc;
    return (int)m->n_shards++;
}

static int replica_add(rl_shard *s, const char *id, const char *host, int port)
{
    if (same_node(&s->master, id, host, port))
        return REDLOCK_OK;
    for (size_t i = 0; i < s->n_replicas; i++)
        if (same_node(&s->replicas[i], id, host, port))
            return REDLOCK_OK;
    rl_shard_node *grown = realloc(s->replicas, (s->n_replicas + 1) * sizeof *grown);
    if (grown == NULL)
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    s->replicas = grown;
    int rc = node_set(&s->replicas[s->n_replicas], id, host, port);
    if (rc == REDLOCK_OK)
        s->n_replicas++;
    return rc;
}

/* ---- reading replies ---- */

/* An endpoint as the reply gives it, made usable: "" is conn_host; "?" is
 * unknown (*unknown set, REDLOCK_OK). host receives the text. */
static int endpoint(char host[RL_SLOT_HOST_MAX], const char *s, size_t len, const char *conn_host,
                    const char *what, bool *unknown)
{
    *unknown = false;
    if (len == 1 && s[0] == '?') {
        *unknown = true;
        return REDLOCK_OK;
    }
    if (len == 0) {
        if (conn_host == NULL || conn_host[0] == '\0')
            return rl_fail(REDLOCK_EREDIS, "%s: a node's host is empty, and the connection's "
                           "host is not known", what);
        s = conn_host;
        len = strlen(conn_host);
    }
    if (len >= RL_SLOT_HOST_MAX || memchr(s, '\0', len) != NULL)
        return rl_fail(REDLOCK_EREDIS, "%s: a node's host is too long or not text", what);
    memcpy(host, s, len);
    host[len] = '\0';
    return REDLOCK_OK;
}

static bool is_text(const redisReply *r)
{
    return r != NULL && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

static bool text_is(const redisReply *r, const char *s)
{
    return is_text(r) && r->len == strlen(s) && memcmp(r->str, s, r->len) == 0;
}

static int not_a_reply(const redisReply *reply, const char *what)
{
    if (reply != NULL && reply->type == REDIS_REPLY_ERROR)
        return rl_fail(REDLOCK_EREDIS, "%s: %.200s", what, reply->str);
    return rl_fail(REDLOCK_EREDIS, "%s: the reply is not an array", what);
}

static bool valid_port(long long port)
{
    return port > 0 && port <= 65535;
}

/* One node of a CLUSTER SLOTS range: [host, port, id?, metadata?]. */
static int slots_node(const redisReply *r, const char *conn_host, char host[RL_SLOT_HOST_MAX],
                      int *port, const char **id, bool *unknown)
{
    const char *what = "CLUSTER SLOTS";
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || !is_text(r->element[0])
        || r->element[1]->type != REDIS_REPLY_INTEGER || !valid_port(r->element[1]->integer))
        return rl_fail(REDLOCK_EREDIS, "%s: a node is not [host, port, ...]", what);
    *port = (int)r->element[1]->integer;
    *id = r->elements >= 3 && is_text(r->element[2]) && r->element[2]->len > 0
              ? r->element[2]->str : NULL;
    return endpoint(host, r->element[0]->str, r->element[0]->len, conn_host, what, unknown);
}

static int assign(rl_slot_map *m, long long from, long long to, int shard, const char *what)
{
    if (from < 0 || to >= RL_SLOTS || from > to)
        return rl_fail(REDLOCK_EREDIS, "%s: bad slot range %lld-%lld", what, from, to);
    for (long long s = from; s <= to; s++) {
        if (m->shard_of[s] >= 0 && m->shard_of[s] != shard)
            return rl_fail(REDLOCK_EREDIS, "%s: slot %lld is served by two masters", what, s);
        m->shard_of[s] = (int16_t)shard;
    }
    return REDLOCK_OK;
}

static int slots_range(rl_slot_map *m, const redisReply *e, const char *conn_host)
{
    const char *what = "CLUSTER SLOTS";
    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3
        || e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER)
        return rl_fail(REDLOCK_EREDIS, "%s: a range is not [from, to, master, ...]", what);
    char host[RL_SLOT_HOST_MAX];
    const char *id;
    int port;
    bool unknown;
    int rc = slots_node(e->element[2], conn_host, host, &port, &id, &unknown);
    if (rc != REDLOCK_OK)
        return rc;
    if (unknown)
        return rl_fail(REDLOCK_EREDIS, "%s: the master of slots %lld-%lld has no known endpoint "
                       "('?')", what, e->element[0]->integer, e->element[1]->integer);
    int shard = shard_find(m, id, host, port);
    if (shard < 0 && (shard = shard_add(m, id, host, port)) < 0)
        return shard;
    rc = assign(m, e->element[0]->integer, e->element[1]->integer, shard, what);
    for (size_t i = 3; rc == REDLOCK_OK && i < e->elements; i++) {
        rc = slots_node(e->element[i], conn_host, host, &port, &id, &unknown);
        if (rc == REDLOCK_OK && !unknown)
            rc = replica_add(&m->shards[shard], id, host, port);
    }
    return rc;
}

int rl_slot_map_from_slots(rl_slot_map *out, const redisReply *reply, const char *conn_host)
{
    rl_slot_map_free(out);
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY)
        return not_a_reply(reply, "CLUSTER SLOTS");
    for (size_t i = 0; i < reply->elements; i++) {
        int rc = slots_range(out, reply->element[i], conn_host);
        if (rc != REDLOCK_OK) {
            rl_slot_map_free(out);
            return rc;
        }
    }
    return REDLOCK_OK;
}

/* A field of a flat map (RESP2: key, value, key, value...), or NULL. */
static const redisReply *field(const redisReply *map, const char *name)
{
    for (size_t i = 0; i + 1 < map->elements; i += 2)
        if (text_is(map->element[i], name))
            return map->element[i + 1];
    return NULL;
}

/* What CLUSTER SHARDS says of one node. */
typedef struct shard_node_info {
    char host[RL_SLOT_HOST_MAX];
    int port;
    const char *id;
    bool unknown, master;
    bool failed;   /* health "fail" ("loading" is fine: Redis 7.0 says it of a replica
                    * whose offset is 0) */
} shard_node_info;

static int shards_node(const redisReply *n, const char *conn_host, shard_node_info *out)
{
    const char *what = "CLUSTER SHARDS";
    if (n->type != REDIS_REPLY_ARRAY)
        return rl_fail(REDLOCK_EREDIS, "%s: a node is not a map", what);
    const redisReply *port = field(n, "port");
    if (port == NULL || port->type != REDIS_REPLY_INTEGER || port->integer == 0)
        port = field(n, "tls-port");
    const redisReply *host = field(n, "endpoint");
    if (host == NULL)
        host = field(n, "ip");
    const redisReply *id = field(n, "id"), *role = field(n, "role"), *health = field(n, "health");
    if (port == NULL || port->type != REDIS_REPLY_INTEGER || !valid_port(port->integer)
        || !is_text(host) || !is_text(role))
        return rl_fail(REDLOCK_EREDIS, "%s: a node has no port, endpoint or role", what);
    out->port = (int)port->integer;
    out->id = is_text(id) && id->len > 0 ? id->str : NULL;
    out->master = text_is(role, "master");
    out->failed = text_is(health, "fail");
    return endpoint(out->host, host->str, host->len, conn_host, what, &out->unknown);
}

static int shards_one(rl_slot_map *m, const redisReply *s, const char *conn_host)
{
    const char *what = "CLUSTER SHARDS";
    if (s->type != REDIS_REPLY_ARRAY)
        return rl_fail(REDLOCK_EREDIS, "%s: a shard is not a map", what);
    const redisReply *slots = field(s, "slots"), *nodes = field(s, "nodes");
    if (slots == NULL || slots->type != REDIS_REPLY_ARRAY || slots->elements % 2 != 0
        || nodes == NULL || nodes->type != REDIS_REPLY_ARRAY)
        return rl_fail(REDLOCK_EREDIS, "%s: a shard has no slots or nodes", what);
    /* The master: a node of role master, one that has not failed if there is one. */
    shard_node_info info;
    size_t master = nodes->elements;
    bool master_ok = false;
    for (size_t i = 0; i < nodes->elements; i++) {
        int rc = shards_node(nodes->element[i], conn_host, &info);
        if (rc != REDLOCK_OK)
            return rc;
        if (info.master && (master == nodes->elements || (!info.failed && !master_ok))) {
            master = i;
            master_ok = !info.failed;
        }
    }
    if (master == nodes->elements) {
        if (slots->elements == 0)
            return REDLOCK_OK;   /* nothing served, nobody to serve it */
        return rl_fail(REDLOCK_EREDIS, "%s: a shard with slots has no master", what);
    }
    shards_node(nodes->element[master], conn_host, &info);
    if (info.unknown)
        return rl_fail(REDLOCK_EREDIS, "%s: a shard's master has no known endpoint ('?')", what);
    int shard = shard_find(m, info.id, info.host, info.port);
    if (shard < 0 && (shard = shard_add(m, info.id, info.host, info.port)) < 0)
        return shard;
    for (size_t i = 0; i < slots->elements; i += 2) {
        const redisReply *from = slots->element[i], *to = slots->element[i + 1];
        if (from->type != REDIS_REPLY_INTEGER || to->type != REDIS_REPLY_INTEGER)
            return rl_fail(REDLOCK_EREDIS, "%s: a slot range is not two integers", what);
        int rc = assign(m, from->integer, to->integer, shard, what);
        if (rc != REDLOCK_OK)
            return rc;
    }
    for (size_t i = 0; i < nodes->elements; i++) {
        shards_node(nodes->element[i], conn_host, &info);
        if (i == master || info.master || info.failed || info.unknown)
            continue;
        int rc = replica_add(&m->shards[shard], info.id, info.host, info.port);
        if (rc != REDLOCK_OK)
            return rc;
    }
    return REDLOCK_OK;
}

int rl_slot_map_from_shards(rl_slot_map *out, const redisReply *reply, const char *conn_host)
{
    rl_slot_map_free(out);
    if (reply == NULL || reply->type != REDIS_REPLY_ARRAY)
        return not_a_reply(reply, "CLUSTER SHARDS");
    for (size_t i = 0; i < reply->elements; i++) {
        int rc = shards_one(out, reply->element[i], conn_host);
        if (rc != REDLOCK_OK) {
            rl_slot_map_free(out);
            return rc;
        }
    }
    return REDLOCK_OK;
}

int rl_slot_map_moved(rl_slot_map *m, int slot, const char *host, int port)
{
    if (slot < 0 || slot >= RL_SLOTS)
        return rl_fail(REDLOCK_EINVAL, "cluster: slot %d is out of range", slot);
    if (host == NULL || host[0] == '\0' || strlen(host) >= RL_SLOT_HOST_MAX || !valid_port(port))
        return rl_fail(REDLOCK_EINVAL, "cluster: a bad address for slot %d", slot);
    int shard = shard_find(m, NULL, host, port);
    int added = 0;
    if (shard < 0) {
        if ((shard = shard_add(m, NULL, host, port)) < 0)
            return shard;
        added = 1;
    }
    m->shard_of[slot] = (int16_t)shard;
    return added;
}

/* ---- redirections ---- */

static bool parse_uint(const char *s, size_t len, long max, long *out)
{
    if (len == 0 || len > 9)
        return false;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max)
        return false;
    *out = v;
    return true;
}

int rl_redirect_parse(rl_redirect *out, const char *err, size_t len, const char *conn_host)
{
    memset(out, 0, sizeof *out);
    if (len > 0 && err[0] == '-') {
        err++;
        len--;
    }
    rl_redirect_kind kind;
    size_t word;
    if (len >= 6 && memcmp(err, "MOVED ", 6) == 0) {
        kind = RL_REDIRECT_MOVED;
        word = 6;
    } else if (len >= 4 && memcmp(err, "ASK ", 4) == 0) {
        kind = RL_REDIRECT_ASK;
        word = 4;
    } else {
        return REDLOCK_OK;
    }
    const char *name = kind == RL_REDIRECT_MOVED ? "MOVED" : "ASK";
    const char *p = err + word, *end = err + len;
    const char *space = memchr(p, ' ', (size_t)(end - p));
    long slot, port;
    if (space == NULL || !parse_uint(p, (size_t)(space - p), RL_SLOTS - 1, &slot))
        return rl_fail(REDLOCK_EREDIS, "a %s redirection without a valid slot", name);
    const char *addr = space + 1;
    const char *colon = NULL;
    for (const char *q = addr; q < end; q++)
        if (*q == ':')
            colon = q;
    if (colon == NULL || !parse_uint(colon + 1, (size_t)(end - colon - 1), 65535, &port)
        || port == 0)
        return rl_fail(REDLOCK_EREDIS, "a %s redirection for slot %ld without a valid "
                       "host:port", name, slot);
    const char *host = addr;
    size_t host_len = (size_t)(colon - addr);
    if (host_len >= 2 && host[0] == '[' && host[host_len - 1] == ']') {
        host++;
        host_len -= 2;
    }
    bool unknown;
    int rc = endpoint(out->host, host, host_len, conn_host, name, &unknown);
    if (rc != REDLOCK_OK)
        return rc;
    if (unknown || strchr(out->host, ' ') != NULL)
        return rl_fail(REDLOCK_EREDIS, "a %s redirection for slot %ld to an unusable host",
                       name, slot);
    out->kind = kind;
    out->slot = (int)slot;
    out->port = (int)port;
    return REDLOCK_OK;
}
