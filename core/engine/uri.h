/* uri.h - node URIs: redis://[[user]:password@]host[:port][/db], the same
 * over TLS as rediss://, and unix://[[user]:password@]/path.sock[?db=N]. */
#ifndef RL_URI_H
#define RL_URI_H

#include "base.h"

typedef struct rl_node_addr {
    bool is_unix;
    bool tls;        /* rediss:// */
    char *host;      /* TCP host (brackets stripped from IPv6) */
    int port;
    char *path;      /* unix socket path */
    char *user;      /* NULL: no ACL user */
    char *password;  /* NULL: no AUTH */
    int db;
    char label[96];  /* "host:port" or "unix:path", safe to print */
} rl_node_addr;

int rl_uri_parse(rl_node_addr *out, const char *uri);
void rl_uri_free(rl_node_addr *addr);
bool rl_uri_same_node(const rl_node_addr *a, const rl_node_addr *b);

#endif /* RL_URI_H */
