/*
 * uri.c - node URIs:
 *     redis://[[user]:password@]host[:port][/db]
 *     rediss://... (the same, over TLS)
 *     unix://[[user]:password@]/path/to.sock[?db=N]
 *     redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]
 *         ?sentinelMasterId=NAME (or #NAME), and rediss-sentinel://
 * The credentials end at the last '@' (a Sentinel URI's: the last before
 * its master name), so an unescaped '@', '/', '?' or '#' in a password is
 * still the password's. An error names the URI with its credentials
 * replaced by "***" and nothing of what precedes that '@' (nor, in any
 * URI, of what precedes its last '@'), control bytes escaped.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

#include "uri.h"

#define MAX_URI_BYTES 4096
#define MAX_HOST_BYTES 255
#define MAX_SHOWN_BYTES 120
#define MAX_ESCAPED_BYTES 160   /* the shown part, escaped (then cut) */

/* One URI being parsed: where its parts go, and how its errors name it. */
typedef struct parse {
    rl_node_addr *a;
    const char *scheme;   /* "redis://", ... */
    char shown[MAX_ESCAPED_BYTES + 32];   /* the URI with its credentials as "***" */
} parse;

/* Fails with "bad SCHEME URI 'SHOWN': reason". */
__attribute__((format(printf, 2, 3))) static int bad(const parse *p, const char *fmt, ...)
{
    char reason[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    return rl_fail(REDLOCK_EINVAL, "bad %s URI '%s': %s", p->scheme, p->shown, reason);
}

/* p->shown: the scheme, then "***@" and what follows the '@' at cred_end
 * (or the last '@' of the URI, if later), or the rest when there is none;
 * at most MAX_SHOWN_BYTES of it, control bytes escaped. */
static void show(parse *p, const char *uri, const char *rest, const char *cred_end)
{
    const char *last = strrchr(rest, '@');
    if (cred_end && (!last || last < cred_end))
        last = cred_end;
    const char *tail = last ? last + 1 : rest;
    char cut[MAX_SHOWN_BYTES + 4];
    size_t n = strnlen(tail, MAX_SHOWN_BYTES + 1);
    if (n > MAX_SHOWN_BYTES)
        snprintf(cut, sizeof cut, "%.*s...", MAX_SHOWN_BYTES - 3, tail);
    else
        snprintf(cut, sizeof cut, "%s", tail);
    char escaped[MAX_ESCAPED_BYTES];
    rl_escape_controls(escaped, sizeof escaped, cut);
    snprintf(p->shown, sizeof p->shown, "%.*s%s%s", (int)(rest - uri), uri, last ? "***@" : "",
             escaped);
}

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

/* Copies s[0..n) with %XX escapes decoded; NULL with *bad_escape set on a
 * bad escape. What it decoded is wiped before it is freed: it may be a
 * password. */
static char *percent_decode(const char *s, size_t n, bool *bad_escape)
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
            rl_wipe(out, j);
            free(out);
            *bad_escape = true;
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
static int parse_userinfo(parse *p, const char *s, size_t n)
{
    rl_node_addr *a = p->a;
    const char *colon = memchr(s, ':', n);
    bool bad_escape = false;
    if (!colon)
        return bad(p, "credentials must be user:password or :password");
    size_t ulen = (size_t)(colon - s);
    if (ulen > 0) {
        a->user = percent_decode(s, ulen, &bad_escape);
        if (!a->user)
            goto fail;
    }
    a->password = percent_decode(colon + 1, n - ulen - 1, &bad_escape);
    if (!a->password)
        goto fail;
    if (a->password[0] == '\0')
        return bad(p, "the password is empty");
    return REDLOCK_OK;
fail:
    if (bad_escape)
        return bad(p, "bad %%-escape in the credentials");
    return rl_fail(REDLOCK_ENOMEM, "out of memory");
}

/* host[:port] in hp[0..end): a host name, an IPv4 address or a bracketed
 * IPv6 one, and a port (default_port when none). */
static int parse_hostport(const parse *p, const char *hp, const char *end, int default_port,
                          rl_server *out)
{
    const char *host = hp, *host_end, *port_at = NULL;
    if (*hp == '[') {
        const char *close = memchr(hp, ']', (size_t)(end - hp));
        if (!close)
            return bad(p, "unclosed '[' in the host");
        host = hp + 1;
        host_end = close;
        if (close + 1 < end) {
            if (close[1] != ':')
                return bad(p, "junk after ']'");
            port_at = close + 2;
        }
    } else {
        const char *colon = memchr(hp, ':', (size_t)(end - hp));
        host_end = colon ? colon : end;
        port_at = colon ? colon + 1 : NULL;
    }
    size_t hlen = (size_t)(host_end - host);
    if (hlen == 0)
        return bad(p, "no host");
    if (hlen > MAX_HOST_BYTES)
        return bad(p, "host name longer than %d bytes", MAX_HOST_BYTES);
    for (const char *c = host; c < host_end; c++)
        if (!isalnum((unsigned char)*c) && !strchr(".-_:%", *c))
            return bad(p, "bad character in the host");
    long v = default_port;
    if (port_at && !parse_int_range(port_at, (size_t)(end - port_at), 1, 65535, &v))
        return bad(p, "port must be 1 to 65535");
    if (!(out->host = dup_range(host, hlen)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    out->port = (int)v;
    rl_server_label(out);
    return REDLOCK_OK;
}

/* Where the credentials of a TCP URI end: its last '@' (a Sentinel URI's
 * last before its master name, which starts at its last '?' or '#': a
 * master name has neither), or NULL when it has none. */
static const char *credentials_end(const char *rest, bool sentinel)
{
    size_t n = strlen(rest);
    if (sentinel) {
        for (size_t i = n; i > 0; i--) {
            if (rest[i - 1] == '?' || rest[i - 1] == '#') {
                n = i - 1;
                break;
            }
        }
    }
    const char *at = NULL;
    for (const char *c = rest; c < rest + n; c++)
        if (*c == '@')
            at = c;
    return at;
}

/* [[user]:password@] before the hosts: the credentials (up to at), and
 * where the hosts start and end (at the first '/', '?' or '#' after them). */
static int parse_credentials(parse *p, const char *rest, const char *at, const char **hosts,
                             const char **end)
{
    *hosts = at ? at + 1 : rest;
    *end = *hosts + strcspn(*hosts, "/?#");
    return at ? parse_userinfo(p, rest, (size_t)(at - rest)) : REDLOCK_OK;
}

/* "/db" at s (s points at '/'), n bytes. */
static int parse_db(parse *p, const char *s, size_t n)
{
    long v = 0;
    if (n > 1 && !parse_int_range(s + 1, n - 1, 0, 2147483647, &v))
        return bad(p, "db must be a number");
    p->a->db = (int)v;
    return REDLOCK_OK;
}

static int parse_tcp(parse *p, const char *rest, const char *at)
{
    rl_node_addr *a = p->a;
    const char *hp, *end;
    int rc;
    if ((rc = parse_credentials(p, rest, at, &hp, &end)) != REDLOCK_OK)
        return rc;
    rl_server server = { 0 };
    if ((rc = parse_hostport(p, hp, end, 6379, &server)) != REDLOCK_OK)
        return rc;
    a->host = server.host;
    a->port = server.port;
    if (*end == '/') {
        if ((rc = parse_db(p, end, strlen(end))) != REDLOCK_OK)
            return rc;
    } else if (*end != '\0') {
        return bad(p, "unexpected '%c'", *end);
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
static int parse_servers(parse *p, const char *hp, const char *end, int default_port)
{
    rl_node_addr *a = p->a;
    size_t n = 1;
    for (const char *c = hp; c < end; c++)
        n += *c == ',';
    if (!(a->sentinels = calloc(n, sizeof *a->sentinels)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    for (const char *c = hp; a->n_sentinels < n; a->n_sentinels++) {
        const char *comma = memchr(c, ',', (size_t)(end - c));
        const char *stop = comma ? comma : end;
        int rc = parse_hostport(p, c, stop, default_port, &a->sentinels[a->n_sentinels]);
        if (rc != REDLOCK_OK)
            return rc;
        c = stop + 1;
    }
    return REDLOCK_OK;
}

/* redis-cluster://[[user]:password@]host[:port][,host[:port]...][/0]: the
 * seed servers of one Cluster (any master or replica of it will do). A
 * Cluster has one database, 0. */
static int parse_cluster(parse *p, const char *rest, const char *at)
{
    rl_node_addr *a = p->a;
    const char *hp, *end;
    int rc;
    if ((rc = parse_credentials(p, rest, at, &hp, &end)) != REDLOCK_OK
        || (rc = parse_servers(p, hp, end, 6379)) != REDLOCK_OK)
        return rc;
    if (*end == '/' && (rc = parse_db(p, end, strlen(end))) != REDLOCK_OK)
        return rc;
    if (*end != '\0' && *end != '/')
        return bad(p, "unexpected '%c' (a Cluster node takes no parameters)", *end);
    if (a->db != 0)
        return bad(p, "a Cluster has only database 0");
    snprintf(a->label, sizeof a->label, "cluster@%.80s", a->sentinels[0].label);
    return REDLOCK_OK;
}

static int parse_sentinel(parse *p, const char *rest, const char *at)
{
    rl_node_addr *a = p->a;
    const char *hp, *end;
    int rc;
    if ((rc = parse_credentials(p, rest, at, &hp, &end)) != REDLOCK_OK
        || (rc = parse_servers(p, hp, end, 26379)) != REDLOCK_OK)
        return rc;
    const char *s = end;
    if (*s == '/') {
        size_t dlen = strcspn(s, "?#");
        if ((rc = parse_db(p, s, dlen)) != REDLOCK_OK)
            return rc;
        s += dlen;
    }
    const char *name = NULL;
    size_t name_len = 0;
    if (*s == '?') {
        static const char param[] = "sentinelMasterId=";
        size_t qlen = strcspn(s + 1, "#");
        if (strncmp(s + 1, param, sizeof param - 1) != 0 || memchr(s + 1, '&', qlen))
            return bad(p, "the only parameter is ?sentinelMasterId=NAME");
        name = s + sizeof param;
        name_len = qlen - (sizeof param - 1);
        s += 1 + qlen;
    }
    if (*s == '#') {
        if (name)
            return bad(p, "the master is named twice (?sentinelMasterId= and #)");
        name = s + 1;
        name_len = strlen(name);
    }
    if (!name)
        return bad(p, "no master name (?sentinelMasterId=NAME or #NAME)");
    if (!good_master_name(name, name_len))
        return bad(p, "bad master name");
    if (!(a->master_name = dup_range(name, name_len)))
        return rl_fail(REDLOCK_ENOMEM, "out of memory");
    snprintf(a->label, sizeof a->label, "%.40s@%.50s", a->master_name, a->sentinels[0].label);
    return REDLOCK_OK;
}

/* unix://[[user]:password@]/path: the credentials end at the '@' before
 * the path's first '/'. */
static int parse_unix(parse *p, const char *rest)
{
    rl_node_addr *a = p->a;
    const char *slash = strchr(rest, '/');
    int rc;
    if (!slash || (slash != rest && slash[-1] != '@'))
        return bad(p, "the socket path must be absolute");
    if (slash != rest
        && (rc = parse_userinfo(p, rest, (size_t)(slash - 1 - rest))) != REDLOCK_OK)
        return rc;
    size_t plen = strcspn(slash, "?#");
    if (plen >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return bad(p, "socket path longer than %zu bytes",
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
        return bad(p, "the only parameter is ?db=N");
    a->db = (int)v;
    return REDLOCK_OK;
}

int rl_uri_parse(rl_node_addr *out, const char *uri)
{
    static const struct {
        const char *scheme;
        rl_node_kind kind;
        bool tls, is_unix;
    } schemes[] = {
        { "redis-sentinel://", RL_NODE_SENTINEL, false, false },
        { "rediss-sentinel://", RL_NODE_SENTINEL, true, false },
        { "redis-cluster://", RL_NODE_CLUSTER, false, false },
        { "rediss-cluster://", RL_NODE_CLUSTER, true, false },
        { "redis://", RL_NODE_MASTER, false, false },
        { "rediss://", RL_NODE_MASTER, true, false },
        { "unix://", RL_NODE_MASTER, false, true },
    };
    memset(out, 0, sizeof *out);
    if (!uri)
        return rl_fail(REDLOCK_EINVAL, "node URI is NULL");
    if (uri[0] == '\0')
        return rl_fail(REDLOCK_EINVAL, "node URI is empty");
    if (strnlen(uri, MAX_URI_BYTES + 1) > MAX_URI_BYTES)
        return rl_fail(REDLOCK_EINVAL, "node URI longer than %d bytes", MAX_URI_BYTES);

    parse p = { .a = out };
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        size_t n = strlen(schemes[i].scheme);
        if (strncasecmp(uri, schemes[i].scheme, n) != 0)
            continue;
        const char *rest = uri + n;
        out->kind = schemes[i].kind;
        out->tls = schemes[i].tls;
        out->is_unix = schemes[i].is_unix;
        p.scheme = schemes[i].scheme;
        const char *at = out->is_unix ? NULL : credentials_end(rest, out->kind == RL_NODE_SENTINEL);
        show(&p, uri, rest, at);
        int rc = out->is_unix ? parse_unix(&p, rest)
               : out->kind == RL_NODE_SENTINEL ? parse_sentinel(&p, rest, at)
               : out->kind == RL_NODE_CLUSTER ? parse_cluster(&p, rest, at)
               : parse_tcp(&p, rest, at);
        if (rc != REDLOCK_OK)
            rl_uri_free(out);
        return rc;
    }
    return rl_fail(REDLOCK_EINVAL,
                   "unknown URI scheme: node URIs start with redis://, rediss://, unix://, "
                   "redis-sentinel://, rediss-sentinel://, redis-cluster:// or "
                   "rediss-cluster://");
}

void rl_uri_free(rl_node_addr *a)
{
    if (!a)
        return;
    free(a->host);
    free(a->path);
    rl_free_secret(a->user);
    free(a->master_name);
    for (size_t i = 0; i < a->n_sentinels; i++)
        free(a->sentinels[i].host);
    free(a->sentinels);
    a->master_name = NULL;
    a->sentinels = NULL;
    a->n_sentinels = 0;
    rl_free_secret(a->password);
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

static bool blank(char c)
{
    return isspace((unsigned char)c) != 0;
}

/* Whether list holds no URI: nothing, or only spaces. */
static bool list_empty(const char *list)
{
    while (blank(*list))
        list++;
    return *list == '\0';
}

size_t redlock_uri_list_count(const char *list)
{
    if (!list || list_empty(list))
        return 0;
    /* Each comma that starts a URI adds one. */
    size_t n = 1;
    for (const char *p = list + redlock_uri_list_next(list); *p;
         p += 1 + redlock_uri_list_next(p + 1))
        n++;
    return n;
}

int redlock_uri_list_item(const char *list, size_t index, char *buf, size_t buflen)
{
    rl_clear_error();
    if (!list)
        return rl_fail(REDLOCK_EINVAL, "list is NULL");
    size_t count = redlock_uri_list_count(list);
    if (index >= count)
        return rl_fail(REDLOCK_EINVAL, "the list of nodes has %zu URIs: there is no URI %zu",
                       count, index + 1);
    for (size_t i = 0; i < index; i++)
        list += redlock_uri_list_next(list) + 1;
    size_t len = redlock_uri_list_next(list);
    while (len > 0 && blank(*list)) {
        list++;
        len--;
    }
    while (len > 0 && blank(list[len - 1]))
        len--;
    if (len == 0)
        return rl_fail(REDLOCK_EINVAL, "URI %zu of the list of nodes is empty", index + 1);
    if (!buf || len + 1 > buflen)
        return rl_fail(REDLOCK_EINVAL, "URI %zu of the list of nodes: the buffer needs %zu "
                       "bytes, not %zu", index + 1, len + 1, buflen);
    memcpy(buf, list, len);
    buf[len] = '\0';
    return REDLOCK_OK;
}
