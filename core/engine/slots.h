/*
 * slots.h - the Redis Cluster protocol as a client needs it, without I/O:
 * the slot of a key (CRC16 and hash tags), the map of the 16384 slots to
 * shards read from a CLUSTER SLOTS or CLUSTER SHARDS reply, the -MOVED and
 * -ASK redirections and what a MOVED changes in the map. (A lock whose keys
 * span slots is split by slot in handle.c.)
 *
 * Functions that can fail return REDLOCK_OK or a REDLOCK_E* code with the
 * calling thread's message set (rl_fail).
 */
#ifndef RL_SLOTS_H
#define RL_SLOTS_H

#include "base.h"

struct redisReply;

#define RL_SLOTS 16384
#define RL_SLOT_HOST_MAX 256   /* longest host name, and its NUL */

/* CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0, no reflection),
 * the checksum Redis Cluster hashes keys with. */
uint16_t rl_crc16(const void *buf, size_t len);

/* The slot of a key of len bytes: CRC16 mod 16384 of the whole key, or of
 * its hash tag, the bytes between its first '{' and the first '}' after it
 * when there is at least one. */
int rl_key_slot(const char *key, size_t len);

/* Whether a NUL-terminated key has a hash tag: a '{', then a '}' after it
 * with something between them. */
bool rl_key_has_tag(const char *key);

/* One server of a shard. */
typedef struct rl_shard_node {
    char *host;   /* never NULL in a map */
    int port;
    char *id;     /* the cluster node id; NULL when the reply gave none */
} rl_shard_node;

/* A master and its replicas. */
typedef struct rl_shard {
    rl_shard_node master;
    rl_shard_node *replicas;
    size_t n_replicas;
} rl_shard;

/* Which shard serves each slot. */
typedef struct rl_slot_map {
    int16_t shard_of[RL_SLOTS];   /* an index into shards, -1: no shard serves it */
    rl_shard *shards;
    size_t n_shards;
} rl_slot_map;

/* An empty map (every slot unserved); rl_slot_map_free frees what it holds,
 * and leaves it empty. */
void rl_slot_map_init(rl_slot_map *m);
void rl_slot_map_free(rl_slot_map *m);

/* Builds *out (freed first) from a CLUSTER SLOTS reply read on a connection
 * to conn_host: an empty host in the reply means conn_host (Redis sends ""
 * for a node whose address it does not know, meaning "where you asked").
 * Ranges of one master make one shard, found by node id, or by host:port
 * where the reply has no id. A master whose endpoint is "?" (no hostname
 * known) is REDLOCK_EREDIS; such a replica is left out. On failure *out is
 * empty. */
int rl_slot_map_from_slots(rl_slot_map *out, const struct redisReply *reply,
                           const char *conn_host);

/* The same from a CLUSTER SHARDS reply (Redis 7.0 and later), in RESP2's
 * flat form: the master is the shard's node of role "master" (one whose
 * health is not "fail" if there are several), the replicas its nodes of role
 * "replica" whose health is not "fail" ("loading" counts: Redis 7.0 says it
 * of a replica whose replication offset is 0, as before any write). A shard
 * without slots is kept (it serves no slot). */
int rl_slot_map_from_shards(rl_slot_map *out, const struct redisReply *reply,
                            const char *conn_host);

/* The shard that serves slot, or NULL. */
const rl_shard *rl_slot_map_shard(const rl_slot_map *m, int slot);

/* A MOVED said slot now lives on host:port. The slot goes to the shard whose
 * master that is; if no shard's master is, a new shard is added with it as
 * master and no replicas. Returns 0 when the master was known, 1 when a
 * shard was added (the map is then out of date: read it again), or a
 * negative code (REDLOCK_EINVAL for a bad slot or address, REDLOCK_ENOMEM). */
int rl_slot_map_moved(rl_slot_map *m, int slot, const char *host, int port);

/* A redirection error reply. */
typedef enum rl_redirect_kind {
    RL_REDIRECT_NONE = 0,   /* not a redirection */
    RL_REDIRECT_MOVED,      /* the slot lives elsewhere for good: update the map */
    RL_REDIRECT_ASK         /* this command only: send ASKING, then it, to the node */
} rl_redirect_kind;

typedef struct rl_redirect {
    rl_redirect_kind kind;
    int slot;
    char host[RL_SLOT_HOST_MAX];   /* brackets of an IPv6 address removed */
    int port;
} rl_redirect;

/* Reads an error reply's text (with or without the leading '-'):
 * "MOVED <slot> <host>:<port>" or "ASK <slot> <host>:<port>". The host is
 * everything before the last ':' ("::1:7000" is ::1 port 7000; "[::1]:7000"
 * too); an empty host is conn_host. Any other error is kind
 * RL_REDIRECT_NONE and REDLOCK_OK; a MOVED or ASK that does not parse is
 * REDLOCK_EREDIS. */
int rl_redirect_parse(rl_redirect *out, const char *err, size_t len, const char *conn_host);

#endif /* RL_SLOTS_H */
