/*
 * uri.c - node URIs:
 *     redis://[[user]:password@]host[:port][/db]
 *     rediss://... (the same, over TLS)
 *     unix://[[user]:password@]/path/to.sock[?db=N]
 *     redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]
 *         ?sentinelMasterId=NAME (or #NAME), and rediss-sentinel://
 * Messages name the URI by its host and port only: a password is never
 * copied into an error message.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "uri.h"

#define MAX_URI_BYTES 4096
#define MAX_HOST_BYTES 255

static char *dup_range(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Copies s[0..n) with %XX escapes decoded; NULL with *bad set on a bad escape. */
static char *percent_decode(const char *s, size_t n, bool *bad)
{
    char *out = malloc(n + 1);
    size_t j = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '%') {
            out[j++] = s[i];
            continue;
        }
        int hi = i + 2 < n ? hex_value(s[i + 1]) : -1;
        int lo = i + 2 < n ? hex_value(s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            *bad = true;
            return NULL;
        }
        out[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[j] = '\0';
    return out;
}

/* Parses a decimal in [lo, hi] from s[0..n); false if empty, junk or out of range. */
static bool parse_int_range(const char *s, size_t n, long lo, long hi, long *out)
{
    long v = 0;
    if (n == 0 || n > 10)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

/* user:password or :password, before the '@'. */
static int parse_userinfo(rl_node_addr *a, const char *s, size_t n, const char *scheme)
{
    const char *colon = memchr(s, ':', n);
    bool bad = false;
    if (!colon)
        return rl_fail(REDLOCK_EINVAL,
                       "bad %s URI: credentials must be user:password or :password", scheme);
    size_t ulen = (size_t)(colon - s);
    if (ulen > 0) {
        a->user = percent_decode(s, ulen, &bad);
        if (!a->user)
            goto fail;
    }
    a->password = percent_decode(colon + 1, n - ulen - 1, &bad);
    if (!a->password)
        goto fail;
    if (a->password[0] == '\0')
        return rl_fail(REDLOCK_EINVAL, "bad %s URI: the password is empty", scheme);
    return REDLOCK_OK;
fail:
    if (bad)
        return rl_fail(REDLOCK_EINVAL, "bad %s URI: bad %%-escape in the credentials", scheme);
    return rl_fail(REDLOCK_ENOMEM, "out of memory");
}

/* host[:port] in hp[0..end): a host name, an IPv4 address or a bracketed
 * IPv6 one, and a port (default_port when none). */
static int parse_hostport(const char *hp, const char *end, const char *scheme,
                          int default_port, rl_server *out)
{
    const char *host = hp, *host_end, *port_at = NULL;
    if (*hp == '[') {
        const char *close = memchr(hp, ']', (size_t)(end - hp));
        if (!close)
            return rl_fail(REDLOCK_EINVAL, "bad %s URI: unclosed '[' in the host", scheme);
        host = hp + 1;
        host_end = close;
        if (close + 1 < end) {
            if (close[1] != ':')
                return rl_fail(REDLOCK_EINVAL, "bad %s URI: junk after ']'", scheme);
            port_at = close + 2;
        }
    } else {
        const char *colon = memchr(hp, ':', (size_t)(end - hp));
        host_end = colon ? colon : end;
        port_at = colon ? colon + 1 : NULL;
    }
    size_t hlen = (size_t)(host_end - host);
    if (hlen == 0)
        return rl_fail(REDLOCK_EINVAL, "bad %s URI: no host", scheme);
    if (hlen > MAX_HOST_BYTES)
        return rl_fail(REDLOCK_EINVAL, "bad %s URI: host name longer than %d bytes",
                       scheme, MAX_HOST_BYTES);
    for (const char *p = host; p < host_end; p++)
        if (!isalnum((unsigned char)*p) && !strchr(".-_:%", *p))
            return rl_fail(REDLOCK_EINVAL, "bad %s URI: bad character in the host", scheme);
    if (!(out->host = dup_range(host, hlen)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");

    long v = default_port;
    if (port_at && !parse_int_range(port_at, (size_t)(end - port_at), 1, 65535, &v)) {
        int rc = rl_fail(REDLOCK_EINVAL, "bad %s URI for %s: port must be 1 to 65535", scheme,
                         out->host);
        free(out->host);
        out->host = NULL;
        return rc;
    }
    out->port = (int)v;
    rl_server_label(out);
    return REDLOCK_OK;
}

/* [[user]:password@] before the hosts: the credentials, and where the
 * hosts start and end (at the first '/', '?' or '#'). */
static int parse_credentials(rl_node_addr *a, const char *rest, const char *scheme,
                             const char **hosts, const char **end)
{
    size_t auth_len = strcspn(rest, "/?#");
    *end = rest + auth_len;
    const char *at = NULL;
    for (const char *p = rest; p < rest + auth_len; p++)
        if (*p == '@')
            at = p;
    *hosts = rest;
    if (!at)
        return REDLOCK_OK;
    *hosts = at + 1;
    return parse_userinfo(a, rest, (size_t)(at - rest), scheme);
}

/* "/db" at s (s points at '/'), up to end. */
static int parse_db(rl_node_addr *a, const char *s, size_t n, const char *scheme,
                    const char *label)
{
    long v = 0;
    if (n > 1 && !parse_int_range(s + 1, n - 1, 0, 2147483647, &v))
        return rl_fail(REDLOCK_EINVAL, "bad %s URI for %s: db must be a number", scheme, label);
    a->db = (int)v;
    return REDLOCK_OK;
}

static int parse_tcp(rl_node_addr *a, const char *rest)
{
    const char *scheme = a->tls ? "rediss://" : "redis://";
    const char *hp, *end;
    int rc;
    if ((rc = parse_credentials(a, rest, scheme, &hp, &end)) != REDLOCK_OK)
        return rc;
    rl_server server = { 0 };
    if ((rc = parse_hostport(hp, end, scheme, 6379, &server)) != REDLOCK_OK)
        return rc;
    a->host = server.host;
    a->port = server.port;
    if (*end == '/') {
        if ((rc = parse_db(a, end, strlen(end), scheme, a->host)) != REDLOCK_OK)
            return rc;
    } else if (*end != '\0') {
        return rl_fail(REDLOCK_EINVAL, "bad %s URI for %s: unexpected '%c'", scheme, a->host,
                       *end);
    }
    snprintf(a->label, sizeof a->label, "%s", server.label);
    return REDLOCK_OK;
}

/* Whether the master name is printable and has no separator in it. */
static bool good_master_name(const char *s, size_t n)
{
    if (n == 0 || n > MAX_HOST_BYTES)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isgraph((unsigned char)s[i]) || strchr(",/?#&=", s[i]))
            return false;
    return true;
}

/* The comma-separated host[:port] list from hp to end: a Sentinel group's
 * sentinels, or a Cluster's seed servers (a->sentinels). */
static int parse_servers(rl_node_addr *a, const char *hp, const char *end, const char *scheme,
                         int default_port)
{
    size_t n = 1;
    for (const char *p = hp; p < end; p++)
        n += *p == ',';
    if (!(a->sentinels = calloc(n, sizeof *a->sentinels)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    for (const char *p = hp; a->n_sentinels < n; a->n_sentinels++) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        int rc = parse_hostport(p, stop, scheme, default_port, &a->sentinels[a->n_sentinels]);
        if (rc != REDLOCK_OK)
            return rc;
        p = stop + 1;
    }
    return REDLOCK_OK;
}

/* redis-cluster://[[user]:password@]host[:port][,host[:port]...][/0]: the
 * seed servers of one Cluster (any master or replica of it will do). A
 * Cluster has one database, 0. */
static int parse_cluster(rl_node_addr *a, const char *rest)
{
    const char *scheme = a->tls ? "rediss-cluster://" : "redis-cluster://";
    const char *hp, *end;
    int rc;
    if ((rc = parse_credentials(a, rest, scheme, &hp, &end)) != REDLOCK_OK
        || (rc = parse_servers(a, hp, end, scheme, 6379)) != REDLOCK_OK)
        return rc;
    const char *first = a->sentinels[0].label;
    if (*end == '/' && (rc = parse_db(a, end, strlen(end), scheme, first)) != REDLOCK_OK)
        return rc;
    if (*end != '\0' && *end != '/')
        return rl_fail(REDLOCK_EINVAL, "bad %s URI for %s: unexpected '%c' (a Cluster node "
                       "takes no parameters)", scheme, first, *end);
    if (a->db != 0)
        return rl_fail(REDLOCK_EINVAL, "bad %s URI for %s: a Cluster has only database 0",
                       scheme, first);
    snprintf(a->label, sizeof a->label, "cluster@%.80s", first);
    return REDLOCK_OK;
}

static int parse_sentinel(rl_node_addr *a, const char *rest)
{
    const char *scheme = a->tls ? "rediss-sentinel://" : "redis-sentinel://";
    const char *hp, *end;
    int rc;
    if ((rc = parse_credentials(a, rest, scheme, &hp, &end)) != REDLOCK_OK
        || (rc = parse_servers(a, hp, end, scheme, 26379)) != REDLOCK_OK)
        return rc;
    const char *s = end;
    if (*s == '/') {
        size_t dlen = strcspn(s, "?#");
        if ((rc = parse_db(a, s, dlen, scheme, a->sentinels[0].label)) != REDLOCK_OK)
            return rc;
        s += dlen;
    }
    const char *name = NULL;
    size_t name_len = 0;
    if (*s == '?') {
        static const char param[] = "sentinelMasterId=";
        size_t qlen = strcspn(s + 1, "#");
        if (strncmp(s + 1, param, sizeof param - 1) != 0 || memchr(s + 1, '&', qlen))
            return rl_fail(REDLOCK_EINVAL,
                           "bad %s URI for %s: the only parameter is ?sentinelMasterId=NAME",
                           scheme, a->sentinels[0].label);
        name = s + sizeof param;
        name_len = qlen - (sizeof param - 1);
        s += 1 + qlen;
    }
    if (*s == '#') {
        if (name)
            return rl_fail(REDLOCK_EINVAL,
                           "bad %s URI for %s: the master is named twice (?sentinelMasterId= "
                           "and #)", scheme, a->sentinels[0].label);
        name = s + 1;
        name_len = strlen(name);
    }
    if (!name)
        return rl_fail(REDLOCK_EINVAL,
                       "bad %s URI for %s: no master name (?sentinelMasterId=NAME or #NAME)",
                       scheme, a->sentinels[0].label);
    if (!good_master_name(name, name_len))
        return rl_fail(REDLOCK_EINVAL, "bad %s URI for %s: bad master name", scheme,
                       a->sentinels[0].label);
    if (!(a->master_name = dup_range(name, name_len)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    snprintf(a->label, sizeof a->label, "%.40s@%.50s", a->master_name, a->sentinels[0].label);
    return REDLOCK_OK;
}

static int parse_unix(rl_node_addr *a, const char *rest)
{
    const char *slash = strchr(rest, '/');
    int rc;
    if (!slash)
        return rl_fail(REDLOCK_EINVAL, "bad unix:// URI: the socket path must be absolute");
    if (slash != rest) {
        if (slash[-1] != '@')
            return rl_fail(REDLOCK_EINVAL, "bad unix:// URI: the socket path must be absolute");
        if ((rc = parse_userinfo(a, rest, (size_t)(slash - 1 - rest), "unix://")) != REDLOCK_OK)
            return rc;
    }
    size_t plen = strcspn(slash, "?#");
    if (plen >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return rl_fail(REDLOCK_EINVAL, "bad unix:// URI: socket path longer than %zu bytes",
                       sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
    if (!(a->path = dup_range(slash, plen)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    snprintf(a->label, sizeof a->label, "unix:%.80s", a->path);

    const char *q = slash + plen;
    if (*q == '\0')
        return REDLOCK_OK;
    long v;
    if (*q != '?' || strncmp(q + 1, "db=", 3) != 0
        || !parse_int_range(q + 4, strlen(q + 4), 0, 2147483647, &v))
        return rl_fail(REDLOCK_EINVAL, "bad unix:// URI for %s: the only parameter is ?db=N",
                       a->label);
    a->db = (int)v;
    return REDLOCK_OK;
}

int rl_uri_parse(rl_node_addr *out, const char *uri)
{
    memset(out, 0, sizeof *out);
    if (!uri)
        return rl_fail(REDLOCK_EINVAL, "node URI is NULL");
    if (uri[0] == '\0')
        return rl_fail(REDLOCK_EINVAL, "node URI is empty");
    if (strnlen(uri, MAX_URI_BYTES + 1) > MAX_URI_BYTES)
        return rl_fail(REDLOCK_EINVAL, "node URI longer than %d bytes", MAX_URI_BYTES);

    int rc;
    if (strncasecmp(uri, "redis-sentinel://", 17) == 0) {
        out->kind = RL_NODE_SENTINEL;
        rc = parse_sentinel(out, uri + 17);
    } else if (strncasecmp(uri, "rediss-sentinel://", 18) == 0) {
        out->kind = RL_NODE_SENTINEL;
        out->tls = true;
        rc = parse_sentinel(out, uri + 18);
    } else if (strncasecmp(uri, "redis-cluster://", 16) == 0) {
        out->kind = RL_NODE_CLUSTER;
        rc = parse_cluster(out, uri + 16);
    } else if (strncasecmp(uri, "rediss-cluster://", 17) == 0) {
        out->kind = RL_NODE_CLUSTER;
        out->tls = true;
        rc = parse_cluster(out, uri + 17);
    } else if (strncasecmp(uri, "redis://", 8) == 0) {
        rc = parse_tcp(out, uri + 8);
    } else if (strncasecmp(uri, "unix://", 7) == 0) {
        out->is_unix = true;
        rc = parse_unix(out, uri + 7);
    } else if (strncasecmp(uri, "rediss://", 9) == 0) {
        out->tls = true;
        rc = parse_tcp(out, uri + 9);
    } else {
        rc = rl_fail(REDLOCK_EINVAL,
                     "unknown URI scheme: node URIs start with redis://, rediss://, unix://, "
                     "redis-sentinel://, rediss-sentinel://, redis-cluster:// or "
                     "rediss-cluster://");
    }
    if (rc != REDLOCK_OK)
        rl_uri_free(out);
    return rc;
}

void rl_uri_free(rl_node_addr *a)
{
    if (!a)
        return;
    free(a->host);
    free(a->path);
    free(a->user);
    free(a->master_name);
    for (size_t i = 0; i < a->n_sentinels; i++)
        free(a->sentinels[i].host);
    free(a->sentinels);
    a->master_name = NULL;
    a->sentinels = NULL;
    a->n_sentinels = 0;
    if (a->password) {
        memset(a->password, 0, strlen(a->password));
        free(a->password);
    }
    a->host = a->path = a->user = a->password = NULL;
}

bool rl_uri_same_node(const rl_node_addr *a, const rl_node_addr *b)
{
    if (a->kind != b->kind || a->is_unix != b->is_unix)
        return false;
    if (a->kind == RL_NODE_CLUSTER)   /* one Cluster, named by its first seed */
        return a->sentinels[0].port == b->sentinels[0].port
            && strcasecmp(a->sentinels[0].host, b->sentinels[0].host) == 0;
    if (a->kind == RL_NODE_SENTINEL)   /* one group's master, named by its first sentinel */
        return strcmp(a->master_name, b->master_name) == 0
            && a->sentinels[0].port == b->sentinels[0].port
            && strcasecmp(a->sentinels[0].host, b->sentinels[0].host) == 0;
    if (a->is_unix)
        return strcmp(a->path, b->path) == 0;
    return a->port == b->port && strcasecmp(a->host, b->host) == 0;
}

void rl_server_label(rl_server *s)
{
    if (strchr(s->host, ':'))
        snprintf(s->label, sizeof s->label, "[%.80s]:%d", s->host, s->port);
    else
        snprintf(s->label, sizeof s->label, "%.80s:%d", s->host, s->port);
}

/* Whether s starts with "scheme://" for a scheme of letters, digits, '+',
 * '-' and '.'. */
static bool starts_uri(const char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = 0;
    while (isalnum((unsigned char)s[n]) || s[n] == '+' || s[n] == '-' || s[n] == '.')
        n++;
    return n > 0 && strncmp(s + n, "://", 3) == 0;
}

size_t redlock_uri_list_next(const char *list)
{
    if (!list)
        return 0;
    for (size_t i = 0; list[i]; i++)
        if (list[i] == ',' && starts_uri(list + i + 1))
            return i;
    return strlen(list);
}
