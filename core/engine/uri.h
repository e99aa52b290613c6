/*
 * uri.h - node URIs. One URI is one node of the quorum:
 *     redis://[[user]:password@]host[:port][/db]     a master
 *     rediss://...                                    the same over TLS
 *     unix://[[user]:password@]/path.sock[?db=N]      a master on a unix socket
 *     redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]?sentinelMasterId=NAME
 *     redis-sentinel://...host[:port][/db]#NAME       the same (Lettuce's form)
 *     rediss-sentinel://...                           the same over TLS
 *     redis-cluster://[[user]:password@]host[:port][,host[:port]...]
 *     rediss-cluster://...                            the same over TLS
 * A Sentinel group's node is its master, whichever server that is now: the
 * host:port pairs are its sentinels (port 26379 by default), the credentials
 * are the master's. A Cluster's node is the master of each key's slot: the
 * host:port pairs are seed servers (port 6379 by default) to learn the slot
 * map from.
 */
#ifndef RL_URI_H
#define RL_URI_H

#include "base.h"

/* One server: a master, or a sentinel. */
typedef struct rl_server {
    char *host;      /* TCP host (brackets stripped from IPv6) */
    int port;
    char label[96];  /* "host:port", safe to print */
} rl_server;

typedef enum rl_node_kind {
    RL_NODE_MASTER,      /* redis://, rediss://, unix:// */
    RL_NODE_SENTINEL,    /* redis-sentinel://, rediss-sentinel:// */
    RL_NODE_CLUSTER      /* redis-cluster://, rediss-cluster:// */
} rl_node_kind;

typedef struct rl_node_addr {
    rl_node_kind kind;
    bool is_unix;
    bool tls;        /* rediss:// */
    char *host;      /* TCP host (brackets stripped from IPv6) */
    int port;
    char *path;      /* unix socket path */
    char *user;      /* NULL: no ACL user */
    char *password;  /* NULL: no AUTH */
    int db;
    char label[96];  /* "host:port", "unix:path" or "NAME@host:port" (its first sentinel) */
    /* RL_NODE_SENTINEL: the group's master name and its sentinels; host and
     * port are NULL and 0 (the master is found by asking them).
     * RL_NODE_CLUSTER: no master name, and the seed servers in sentinels. */
    char *master_name;
    rl_server *sentinels;
    size_t n_sentinels;
} rl_node_addr;

/* redlock_uri_list_next (redlock.h) is here too: the separator of a list. */

/* Sets s->label from its host and port. */
void rl_server_label(rl_server *s);

int rl_uri_parse(rl_node_addr *out, const char *uri);
void rl_uri_free(rl_node_addr *addr);
bool rl_uri_same_node(const rl_node_addr *a, const rl_node_addr *b);

#endif /* RL_URI_H */
