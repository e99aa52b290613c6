/* simnode.c - a simulated Redis node (see simnode.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <hiredis/hiredis.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "conn.h"
#include "records.h"
#include "scripts.h"
#include "simnode.h"

#define NO_EXPIRY INT64_MAX

typedef struct entry {
    char *key;            /* binary: a fencing counter's key holds a zero byte */
    size_t klen;
    char *value;          /* NULL for a list */
    int64_t expires_at;
    bool restored;        /* brought back by a failover (simnode_failover) */
} entry;

/* A write's undo: the key as it was before (had: it existed), and when the
 * write came, by the node's clock. A failover undoes the recent ones. */
typedef struct undo {
    int64_t at;
    char *key;
    size_t klen;
    bool had;
    char *value;          /* NULL for a list (with had) */
    int64_t expires_at;
} undo;

#define UNDO_KEEP_MS 1000   /* longer than any failover's lag */

typedef struct script {
    char sha[41];
    int ref;              /* the compiled function in the registry */
} script;

struct simnode {
    entry *keys;
    size_t n, cap;
    undo *undos;          /* the writes of the last UNDO_KEEP_MS, oldest first */
    size_t n_undos, cap_undos;
    char run_id[41];
    lua_State *lua;
    script scripts[32];   /* the scripts compiled (each of rl_script_all at most once) */
    size_t n_scripts;
    int64_t now;          /* of the command running */
    int64_t started;      /* by its clock: its first command since it (re)started, INT64_MIN before */
    bool promoted;        /* a replica that took the master's place (INFO's master_replid2) */
    bool hostile_guard;   /* simnode_hostile_guard */
    bool library;         /* it holds the function library (simnode_functions) */
    bool valkey;          /* simnode_valkey */
    bool scriptless;      /* simnode_scriptless */
    uint64_t hostile_seq; /* which arbitrary answer comes next */
};

/* A key as a WATCH saw it: EXEC runs only if it is the same then. */
typedef struct watched {
    char *key;
    size_t klen;
    bool had;
    char *value;          /* NULL for a list, or with had false */
    int64_t expires_at;
} watched;

struct simnode_client {
    redisReader *reader;
    bool multi;           /* between MULTI and EXEC or DISCARD */
    redisReply **queued;  /* the commands queued since MULTI */
    size_t n_queued;
    watched *watches;
    size_t n_watches;
};

/* ---- values ---- */

typedef enum vtype { V_NIL, V_INT, V_BULK, V_STATUS, V_ERR, V_ARRAY } vtype;

typedef struct sval {
    vtype t;
    long long i;
    char *s;
    size_t len;
    struct sval *a;
    size_t n;
} sval;

static sval v_nil(void) { return (sval){ .t = V_NIL }; }
static sval v_int(long long i) { return (sval){ .t = V_INT, .i = i }; }

static sval v_text(vtype t, const char *s, size_t len)
{
    sval v = { .t = t, .s = malloc(len + 1), .len = len };
    memcpy(v.s, s, len);
    v.s[len] = '\0';
    return v;
}

static sval v_str(vtype t, const char *s) { return v_text(t, s, strlen(s)); }

static void v_free(sval *v)
{
    for (size_t i = 0; i < v->n; i++)
        v_free(&v->a[i]);
    free(v->a);
    free(v->s);
}

static const char wrongtype[] = "WRONGTYPE Operation against a key holding the wrong kind of value";

void simbuf_add(simbuf *b, const char *bytes, size_t len)
{
    if (b->len + len > b->cap) {
        b->cap = (b->len + len) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->len, bytes, len);
    b->len += len;
}

void simbuf_free(simbuf *b)
{
    free(b->p);
    *b = (simbuf){ 0 };
}

static void resp(const sval *v, simbuf *out)
{
    char head[48];
    int n = 0;
    switch (v->t) {
    case V_NIL:    n = snprintf(head, sizeof head, "$-1\r\n"); break;
    case V_INT:    n = snprintf(head, sizeof head, ":%lld\r\n", v->i); break;
    case V_STATUS: n = snprintf(head, sizeof head, "+"); break;
    case V_ERR:    n = snprintf(head, sizeof head, "-"); break;
    case V_BULK:   n = snprintf(head, sizeof head, "$%zu\r\n", v->len); break;
    case V_ARRAY:  n = snprintf(head, sizeof head, "*%zu\r\n", v->n); break;
    }
    simbuf_add(out, head, (size_t)n);
    if (v->t == V_STATUS || v->t == V_ERR || v->t == V_BULK) {
        simbuf_add(out, v->s, v->len);
        simbuf_add(out, "\r\n", 2);
    }
    for (size_t i = 0; v->t == V_ARRAY && i < v->n; i++)
        resp(&v->a[i], out);
}

/* ---- the keyspace ---- */

static entry *find(simnode *n, const char *key, size_t klen)
{
    for (size_t i = 0; i < n->n; i++) {
        entry *e = &n->keys[i];
        if (e->klen != klen || memcmp(e->key, key, klen) != 0)
            continue;
        if (e->expires_at <= n->now) {      /* expired: gone */
            free(e->key);
            free(e->value);
            n->keys[i] = n->keys[--n->n];
            return NULL;
        }
        return e;
    }
    return NULL;
}

static void del(simnode *n, entry *e)
{
    free(e->key);
    free(e->value);
    *e = n->keys[--n->n];
}

static entry *put(simnode *n, const char *key, size_t klen)
{
    entry *e = find(n, key, klen);
    if (e) {
        free(e->value);
        e->value = NULL;
        e->restored = false;
        return e;
    }
    if (n->n == n->cap) {
        n->cap = n->cap ? n->cap * 2 : 16;
        n->keys = realloc(n->keys, n->cap * sizeof *n->keys);
    }
    e = &n->keys[n->n++];
    *e = (entry){ .key = malloc(klen + 1), .klen = klen, .expires_at = NO_EXPIRY };
    memcpy(e->key, key, klen);
    e->key[klen] = '\0';
    return e;
}

/* A fencing counter: the key holds a zero byte. */
static bool is_counter(const entry *e)
{
    return strlen(e->key) != e->klen;
}

static void undo_free(undo *u)
{
    free(u->key);
    free(u->value);
}

/* Notes how key is before a write to it; forgets the undos too old for any
 * failover to need. */
static void note_write(simnode *n, const char *key, size_t klen)
{
    size_t old = 0;
    while (old < n->n_undos && n->undos[old].at < n->now - UNDO_KEEP_MS)
        undo_free(&n->undos[old++]);
    if (old) {
        memmove(n->undos, n->undos + old, (n->n_undos - old) * sizeof *n->undos);
        n->n_undos -= old;
    }
    if (n->n_undos == n->cap_undos) {
        n->cap_undos = n->cap_undos ? n->cap_undos * 2 : 64;
        n->undos = realloc(n->undos, n->cap_undos * sizeof *n->undos);
    }
    entry *e = find(n, key, klen);
    undo *u = &n->undos[n->n_undos++];
    *u = (undo){ .at = n->now, .key = malloc(klen + 1), .klen = klen, .had = e != NULL,
                 .value = e && e->value ? strdup(e->value) : NULL,
                 .expires_at = e ? e->expires_at : NO_EXPIRY };
    memcpy(u->key, key, klen);
    u->key[klen] = '\0';
}

/* Empties the keyspace, or only of lock keys when counters are kept. */
static void clear_keys(simnode *n, bool keep_counters)
{
    for (size_t i = n->n; i-- > 0;)
        if (!keep_counters || !is_counter(&n->keys[i]))
            del(n, &n->keys[i]);
}

/* ---- scripts ---- */

/* The project's script of that body (EVAL, SCRIPT LOAD), or of that
 * function's name (FCALL, fn); NULL for any other. */
static const rl_script *known_script(const char *body, bool fn)
{
    for (size_t i = 0; i < rl_script_count; i++)
        if (strcmp(fn ? rl_script_all[i]->fn : rl_script_all[i]->body, body) == 0)
            return rl_script_all[i];
    return NULL;
}

static script *cached(simnode *n, const char *sha)
{
    for (size_t i = 0; i < n->n_scripts; i++)
        if (strcasecmp(n->scripts[i].sha, sha) == 0)
            return &n->scripts[i];
    return NULL;
}

/* Compiles and caches a known script; NULL for a body the simulation does
 * not know (only the project's scripts are ever sent). */
static script *load(simnode *n, const rl_script *known)
{
    if (!known)
        return NULL;
    script *s = cached(n, known->sha1);
    if (s)
        return s;
    if (luaL_loadbuffer(n->lua, known->body, strlen(known->body), "script") != LUA_OK) {
        lua_pop(n->lua, 1);
        return NULL;
    }
    s = &n->scripts[n->n_scripts++];
    snprintf(s->sha, sizeof s->sha, "%s", known->sha1);
    s->ref = luaL_ref(n->lua, LUA_REGISTRYINDEX);
    return s;
}

void simnode_forge_guard(simnode *n, uint64_t seed)
{
    entry *e = find(n, RL_GUARD_KEY, strlen(RL_GUARD_KEY));
    char was[48], epoch[24], forged[128];
    long long at;
    if (seed % 3 == 0 || !e || !e->value
        || sscanf(e->value, "%47s %23s %lld", was, epoch, &at) != 3) {
        snprintf(forged, sizeof forged, "%s", seed % 2 ? "garbage" : "0 0 x");
    } else {
        long long far = seed % 3 == 1 || at > INT64_MAX / 2 || at < 0
                           ? INT64_MAX : at + 1000000000LL * (long long)(seed % 1000 + 1);
        snprintf(forged, sizeof forged, "%s %s %lld", was, epoch, far);
    }
    note_write(n, RL_GUARD_KEY, strlen(RL_GUARD_KEY));
    e = put(n, RL_GUARD_KEY, strlen(RL_GUARD_KEY));
    e->value = strdup(forged);
    e->expires_at = NO_EXPIRY;
}

void simnode_hostile_guard(simnode *n, bool on)
{
    n->hostile_guard = on;
}

/* The compiled scripts are the cache of SCRIPT LOAD and EVAL; FCALL
 * compiles its function's script there too, so a SCRIPT FLUSH makes no
 * function fail (its next call compiles it again). */
void simnode_flush_scripts(simnode *n)
{
    for (size_t i = 0; i < n->n_scripts; i++)
        luaL_unref(n->lua, LUA_REGISTRYINDEX, n->scripts[i].ref);
    n->n_scripts = 0;
}

void simnode_functions(simnode *n, bool loaded)
{
    n->library = loaded;
}

bool simnode_has_functions(const simnode *n)
{
    return n->library;
}

static sval run(simnode *n, int argc, char **argv, const size_t *lens);

/* ---- Lua's side of redis.call ---- */

static void push(lua_State *L, const sval *v)
{
    switch (v->t) {
    case V_NIL:    lua_pushboolean(L, 0); break;
    case V_INT:    lua_pushinteger(L, v->i); break;
    case V_BULK:   lua_pushlstring(L, v->s, v->len); break;
    case V_STATUS:
    case V_ERR:
        lua_newtable(L);
        lua_pushlstring(L, v->s, v->len);
        lua_setfield(L, -2, v->t == V_STATUS ? "ok" : "err");
        break;
    case V_ARRAY:
        lua_createtable(L, (int)v->n, 0);
        for (size_t i = 0; i < v->n; i++) {
            push(L, &v->a[i]);
            lua_rawseti(L, -2, (lua_Integer)i + 1);
        }
        break;
    }
}

static simnode *node_of(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

static int call_or_pcall(lua_State *L, bool raise)
{
    int argc = lua_gettop(L);
    char **argv = malloc((size_t)argc * sizeof *argv);
    size_t *lens = malloc((size_t)argc * sizeof *lens);
    for (int i = 0; i < argc; i++) {
        const char *s = lua_tolstring(L, i + 1, &lens[i]);
        argv[i] = (char *)(s ? s : "");
    }
    sval v = argc > 0 ? run(node_of(L), argc, argv, lens) : v_str(V_ERR, "ERR wrong arguments");
    free(argv);
    free(lens);
    if (v.t == V_ERR && raise) {
        lua_pushlstring(L, v.s, v.len);
        v_free(&v);
        return lua_error(L);
    }
    push(L, &v);
    v_free(&v);
    return 1;
}

static int l_call(lua_State *L) { return call_or_pcall(L, true); }
static int l_pcall(lua_State *L) { return call_or_pcall(L, false); }

static int l_error_reply(lua_State *L)
{
    lua_newtable(L);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "err");
    return 1;
}

/* The reply a script's result makes, as Redis converts it. */
static sval from_lua(lua_State *L, int at)
{
    switch (lua_type(L, at)) {
    case LUA_TNUMBER:  return v_int((long long)lua_tonumber(L, at));
    case LUA_TBOOLEAN: return lua_toboolean(L, at) ? v_int(1) : v_nil();
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, at, &len);
        return v_text(V_BULK, s, len);
    }
    case LUA_TTABLE: {
        at = lua_absindex(L, at);
        for (int k = 0; k < 2; k++) {
            lua_getfield(L, at, k == 0 ? "err" : "ok");
            if (lua_isstring(L, -1)) {
                sval v = v_str(k == 0 ? V_ERR : V_STATUS, lua_tostring(L, -1));
                lua_pop(L, 1);
                return v;
            }
            lua_pop(L, 1);
        }
        sval v = { .t = V_ARRAY, .n = (size_t)lua_rawlen(L, at) };
        v.a = calloc(v.n ? v.n : 1, sizeof *v.a);
        for (size_t i = 0; i < v.n; i++) {
            lua_rawgeti(L, at, (lua_Integer)i + 1);
            v.a[i] = from_lua(L, -1);
            lua_pop(L, 1);
        }
        return v;
    }
    default:
        return v_nil();
    }
}

static void set_array(lua_State *L, const char *name, char **argv, const size_t *lens, int n)
{
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushlstring(L, argv[i], lens[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setglobal(L, name);
}

/* EVAL/EVALSHA: argv[0] is the script's body or sha. */
static sval eval(simnode *n, script *s, int argc, char **argv, const size_t *lens)
{
    char *end;
    long numkeys = argc >= 2 ? strtol(argv[1], &end, 10) : -1;
    if (numkeys < 0 || numkeys > argc - 2)
        return v_str(V_ERR, "ERR Number of keys can't be greater than number of args");
    lua_State *L = n->lua;
    set_array(L, "KEYS", argv + 2, lens + 2, (int)numkeys);
    set_array(L, "ARGV", argv + 2 + numkeys, lens + 2 + numkeys, argc - 2 - (int)numkeys);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->ref);
    if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s script: %s", lua_tostring(L, -1), s->sha);
        lua_pop(L, 1);
        return v_str(V_ERR, msg);
    }
    sval v = from_lua(L, -1);
    lua_pop(L, 1);
    return v;
}

/* ---- commands ---- */

static bool is(const char *arg, const char *name)
{
    return strcasecmp(arg, name) == 0;
}

static sval cmd_set(simnode *n, int argc, char **argv, const size_t *lens)
{
    bool nx = false, get = false;
    const char *ifeq = NULL;   /* Valkey 8.1+: set only when the value is this */
    int64_t px = 0;
    for (int i = 3; i < argc; i++) {
        if (is(argv[i], "NX"))
            nx = true;
        else if (is(argv[i], "GET"))
            get = true;
        else if (is(argv[i], "PX") && i + 1 < argc)
            px = strtoll(argv[++i], NULL, 10);
        else if (is(argv[i], "IFEQ") && i + 1 < argc && n->valkey)
            ifeq = argv[++i];
        else
            return v_str(V_ERR, "ERR syntax error");
    }
    entry *e = find(n, argv[1], lens[1]);
    if (e && (get || ifeq) && !e->value)
        return v_str(V_ERR, wrongtype);
    if (ifeq && (!e || strcmp(e->value, ifeq) != 0))
        return v_nil();
    sval old = get && e ? v_str(V_BULK, e->value) : v_nil();
    if (nx && e)
        return get ? old : v_nil();
    e = put(n, argv[1], lens[1]);
    e->value = strdup(argv[2]);
    e->expires_at = px > 0 ? n->now + px : NO_EXPIRY;
    if (get)
        return old;
    return v_str(V_STATUS, "OK");
}

static sval cmd_incr(simnode *n, const char *key, size_t klen)
{
    entry *e = find(n, key, klen);
    if (e && !e->value)
        return v_str(V_ERR, wrongtype);
    char *end;
    long long v = e ? strtoll(e->value, &end, 10) : 0;
    if (e && (*end || !*e->value))
        return v_str(V_ERR, "ERR value is not an integer or out of range");
    int64_t expires = e ? e->expires_at : NO_EXPIRY;
    char text[24];
    snprintf(text, sizeof text, "%lld", v + 1);
    e = put(n, key, klen);
    e->value = strdup(text);
    e->expires_at = expires;
    return v_int(v + 1);
}

static sval keyspace(simnode *n, int argc, char **argv, const size_t *lens)
{
    const char *c = argv[0];
    if ((is(c, "INCR") || is(c, "SET") || is(c, "PEXPIRE") || is(c, "APPEND")
         || is(c, "DELIFEQ")) && argc >= 2)
        note_write(n, argv[1], lens[1]);
    for (int i = 1; is(c, "DEL") && i < argc; i++)
        note_write(n, argv[i], lens[i]);
    if (is(c, "INCR") && argc == 2)
        return cmd_incr(n, argv[1], lens[1]);
    if (is(c, "GET") && argc == 2) {
        entry *e = find(n, argv[1], lens[1]);
        if (e && !e->value)
            return v_str(V_ERR, wrongtype);
        return e ? v_str(V_BULK, e->value) : v_nil();
    }
    if (is(c, "DELIFEQ") && argc == 3 && n->valkey) {   /* Valkey 9.0+ */
        entry *e = find(n, argv[1], lens[1]);
        if (e && !e->value)
            return v_str(V_ERR, wrongtype);
        if (!e || strcmp(e->value, argv[2]) != 0)
            return v_int(0);
        del(n, e);
        return v_int(1);
    }
    if (is(c, "APPEND") && argc == 3) {   /* the group's record (records.h) */
        entry *e = find(n, argv[1], lens[1]);
        if (e && !e->value)
            return v_str(V_ERR, wrongtype);
        size_t had = e ? strlen(e->value) : 0;
        char *joined = malloc(had + lens[2] + 1);
        memcpy(joined, e ? e->value : "", had);
        memcpy(joined + had, argv[2], lens[2]);
        joined[had + lens[2]] = '\0';
        int64_t expires = e ? e->expires_at : NO_EXPIRY;
        e = put(n, argv[1], lens[1]);
        e->value = joined;
        e->expires_at = expires;
        return v_int((long long)(had + lens[2]));
    }
    if ((is(c, "DEL") || is(c, "EXISTS")) && argc >= 2) {
        long long count = 0;
        for (int i = 1; i < argc; i++) {
            entry *e = find(n, argv[i], lens[i]);
            if (!e)
                continue;
            count++;
            if (is(c, "DEL"))
                del(n, e);
        }
        return v_int(count);
    }
    if (is(c, "MGET") && argc >= 2) {
        sval v = { .t = V_ARRAY, .n = (size_t)argc - 1, .a = calloc((size_t)argc, sizeof(sval)) };
        for (int i = 1; i < argc; i++) {
            entry *e = find(n, argv[i], lens[i]);
            v.a[i - 1] = e && e->value ? v_str(V_BULK, e->value) : v_nil();
        }
        return v;
    }
    if ((is(c, "PEXPIRE") && argc == 3) || (is(c, "PTTL") && argc == 2)) {
        entry *e = find(n, argv[1], lens[1]);
        if (is(c, "PTTL"))
            return v_int(!e ? -2 : e->expires_at == NO_EXPIRY ? -1 : e->expires_at - n->now);
        if (e)
            e->expires_at = n->now + strtoll(argv[2], NULL, 10);
        return v_int(e ? 1 : 0);
    }
    if (is(c, "TYPE") && argc == 2) {
        entry *e = find(n, argv[1], lens[1]);
        return v_str(V_STATUS, !e ? "none" : e->value ? "string" : "list");
    }
    if (is(c, "SET") && argc >= 3)
        return cmd_set(n, argc, argv, lens);
    return v_str(V_ERR, "ERR unknown command or wrong number of arguments");
}

/* A node without scripts refuses them as Valkey 9.1 without its Lua engine
 * does, or (not Valkey) as an ACL without @scripting does. */
static bool refuse_scripts(simnode *n, int argc, char **argv, sval *out)
{
    const char *c = argv[0];
    if (!n->scriptless || !(is(c, "EVAL") || is(c, "EVALSHA") || is(c, "FCALL")
                            || is(c, "SCRIPT") || is(c, "FUNCTION")))
        return false;
    char msg[128], name[40];
    snprintf(name, sizeof name, "%s%s%s", c, argc > 1 && (is(c, "SCRIPT") || is(c, "FUNCTION"))
             ? "|" : "", argc > 1 && (is(c, "SCRIPT") || is(c, "FUNCTION")) ? argv[1] : "");
    for (char *p = name; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    if (!n->valkey)
        snprintf(msg, sizeof msg, "NOPERM this user has no permissions to run the '%s' command",
                 name);
    else if (is(c, "FCALL"))
        snprintf(msg, sizeof msg, "ERR Function not found");
    else if (is(c, "FUNCTION"))
        snprintf(msg, sizeof msg, "ERR Engine 'lua' not found");
    else if (is(c, "EVALSHA"))
        snprintf(msg, sizeof msg, "NOSCRIPT No matching script.");
    else
        snprintf(msg, sizeof msg, "ERR Could not find scripting engine 'lua'");
    *out = v_str(V_ERR, msg);
    return true;
}

static sval run(simnode *n, int argc, char **argv, const size_t *lens)
{
    const char *c = argv[0];
    sval refused;
    if (refuse_scripts(n, argc, argv, &refused))
        return refused;
    if (is(c, "EVALSHA") && argc >= 3) {
        script *s = cached(n, argv[1]);
        if (!s)
            return v_str(V_ERR, "NOSCRIPT No matching script. Please use EVAL.");
        return eval(n, s, argc - 1, argv + 1, lens + 1);
    }
    if (is(c, "FCALL") && argc >= 3 && n->library && strcmp(argv[1], rl_library_probe) == 0)
        return v_str(V_BULK, rl_library_name);
    if ((is(c, "EVAL") || is(c, "FCALL")) && argc >= 3) {
        bool fcall = is(c, "FCALL");
        const rl_script *known = known_script(argv[1], fcall);
        if (fcall && (!n->library || !known))
            return v_str(V_ERR, "ERR Function not found");
        script *s = load(n, known);
        if (!s)
            return v_str(V_ERR, "ERR the simulation knows only the project's scripts");
        sval v = eval(n, s, argc - 1, argv + 1, lens + 1);
        if (n->hostile_guard && v.t == V_INT && known == &rl_script_guard) {
            /* Anything, but never a shorter guard than the script's (a node
             * that lies the other way loses keys it said it kept: no lock
             * algorithm holds against that). */
            static const long long longer[] = { INT64_MAX, INT64_MAX - 1, 1000000000000LL, -1 };
            static const long long none[] = { 0, -1, INT64_MIN, INT64_MAX, 1000000000000LL, 1 };
            uint64_t k = n->hostile_seq++;
            long long lie = v.i > 0 ? longer[k % 4] : none[k % 6];
            v.i = lie == -1 ? (v.i > INT64_MAX / 3 ? INT64_MAX : v.i * 3) : lie;
        }
        return v;
    }
    if (is(c, "FUNCTION") && argc == 3 && is(argv[1], "LOAD")) {
        if (strcmp(argv[2], rl_library) != 0)
            return v_str(V_ERR, "ERR the simulation knows only the project's library");
        if (n->library)
            return v_str(V_ERR, "ERR Library already exists");
        n->library = true;
        return v_str(V_BULK, rl_library_name);
    }
    if (is(c, "SCRIPT") && argc == 3 && is(argv[1], "LOAD")) {
        script *s = load(n, known_script(argv[2], false));
        return s ? v_str(V_BULK, s->sha) : v_str(V_ERR, "ERR unknown script");
    }
    if (is(c, "SCRIPT") && argc == 2 && is(argv[1], "FLUSH")) {
        simnode_flush_scripts(n);
        return v_str(V_STATUS, "OK");
    }
    if (is(c, "INFO")) {
        char info[480];
        snprintf(info, sizeof info, "# Server\r\nredis_version:%s\r\n%srun_id:%s\r\n"
                 "uptime_in_seconds:%lld\r\n# Replication\r\nmaster_replid2:%s\r\n",
                 n->valkey ? "7.2.4" : "7.0.15",
                 n->valkey ? "server_name:valkey\r\nvalkey_version:9.1.2\r\n" : "", n->run_id,
                 (long long)(n->now / 1000 - n->started / 1000),   /* whole seconds, as Redis */
                 n->promoted ? n->run_id : "0000000000000000000000000000000000000000");
        return v_str(V_BULK, info);
    }
    if (is(c, "TIME")) {   /* the node's own clock */
        char sec[24], usec[24];
        snprintf(sec, sizeof sec, "%lld", (long long)(n->now / 1000));
        snprintf(usec, sizeof usec, "%lld", (long long)(n->now % 1000) * 1000);
        sval v = { .t = V_ARRAY, .a = calloc(2, sizeof(sval)), .n = 2 };
        v.a[0] = v_str(V_BULK, sec);
        v.a[1] = v_str(V_BULK, usec);
        return v;
    }
    if (is(c, "PING"))
        return v_str(V_STATUS, "PONG");
    if (is(c, "AUTH") || is(c, "SELECT"))
        return v_str(V_STATUS, "OK");
    return keyspace(n, argc, argv, lens);
}

/* ---- the node ---- */

static void new_run_id(simnode *n, uint64_t seed)
{
    for (int i = 0; i < 40; i++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        n->run_id[i] = "0123456789abcdef"[(seed >> 60) & 0xf];
    }
    n->run_id[40] = '\0';
}

simnode *simnode_new(uint64_t seed)
{
    simnode *n = calloc(1, sizeof *n);
    n->lua = luaL_newstate();
    luaL_openlibs(n->lua);
    lua_State *L = n->lua;
    lua_getglobal(L, "table");
    lua_getfield(L, -1, "unpack");
    lua_setglobal(L, "unpack");          /* Redis's Lua 5.1 has unpack */
    lua_pop(L, 1);
    lua_newtable(L);
    lua_pushlightuserdata(L, n);
    lua_pushcclosure(L, l_call, 1);
    lua_setfield(L, -2, "call");
    lua_pushlightuserdata(L, n);
    lua_pushcclosure(L, l_pcall, 1);
    lua_setfield(L, -2, "pcall");
    lua_pushcfunction(L, l_error_reply);
    lua_setfield(L, -2, "error_reply");
    lua_setglobal(L, "redis");
    new_run_id(n, seed);
    n->started = INT64_MIN;
    return n;
}

void simnode_free(simnode *n)
{
    for (size_t i = 0; i < n->n_undos; i++)
        undo_free(&n->undos[i]);
    free(n->undos);
    clear_keys(n, false);
    free(n->keys);
    lua_close(n->lua);
    free(n);
}

void simnode_failover(simnode *n, int64_t lag_ms, int64_t down_at, uint64_t seed)
{
    for (size_t i = n->n_undos; i-- > 0;) {
        undo *u = &n->undos[i];
        if (u->at <= down_at - lag_ms)
            break;
        for (size_t j = 0; j < n->n; j++)
            if (n->keys[j].klen == u->klen && memcmp(n->keys[j].key, u->key, u->klen) == 0) {
                del(n, &n->keys[j]);
                break;
            }
        if (u->had) {
            n->now = down_at;
            entry *e = put(n, u->key, u->klen);
            e->value = u->value ? strdup(u->value) : NULL;
            e->expires_at = u->expires_at;
            e->restored = true;
        }
    }
    for (size_t i = 0; i < n->n_undos; i++)
        undo_free(&n->undos[i]);
    n->n_undos = 0;
    simnode_flush_scripts(n);
    new_run_id(n, seed);
    n->promoted = true;
}

void simnode_valkey(simnode *n, bool valkey)
{
    n->valkey = valkey;
}

void simnode_scriptless(simnode *n, bool scriptless)
{
    n->scriptless = scriptless;
}

void simnode_restart(simnode *n, simnode_data data, uint64_t seed)
{
    if (data != SIMNODE_KEEP)
        clear_keys(n, data == SIMNODE_KEEP_COUNTERS);
    n->library = n->library && data == SIMNODE_KEEP;   /* kept with the data */
    simnode_flush_scripts(n);
    new_run_id(n, seed);
    n->started = INT64_MIN;
}

simnode_client *simnode_client_new(void)
{
    simnode_client *c = calloc(1, sizeof *c);
    c->reader = redisReaderCreate();
    return c;
}

static void forget_watches(simnode_client *c)
{
    for (size_t i = 0; i < c->n_watches; i++) {
        free(c->watches[i].key);
        free(c->watches[i].value);
    }
    free(c->watches);
    c->watches = NULL;
    c->n_watches = 0;
}

static void forget_queued(simnode_client *c)
{
    for (size_t i = 0; i < c->n_queued; i++)
        freeReplyObject(c->queued[i]);
    free(c->queued);
    c->queued = NULL;
    c->n_queued = 0;
    c->multi = false;
}

void simnode_client_free(simnode_client *c)
{
    if (!c)
        return;
    forget_watches(c);
    forget_queued(c);
    redisReaderFree(c->reader);
    free(c);
}

/* Whether every key c watches is as its WATCH saw it. */
static bool watches_hold(simnode *n, simnode_client *c)
{
    for (size_t i = 0; i < c->n_watches; i++) {
        const watched *w = &c->watches[i];
        entry *e = find(n, w->key, w->klen);
        if (w->had != (e != NULL))
            return false;
        if (e && (e->expires_at != w->expires_at || (e->value == NULL) != (w->value == NULL)
                  || (e->value && strcmp(e->value, w->value) != 0)))
            return false;
    }
    return true;
}

static sval run_request(simnode *n, const redisReply *req);

/* WATCH, UNWATCH, MULTI, EXEC, DISCARD, and the commands queued in MULTI;
 * false for any other command outside MULTI (run as usual). */
static bool transaction(simnode *n, simnode_client *c, redisReply *req, sval *out)
{
    const char *cmd = req->element[0]->str ? req->element[0]->str : "";
    if (is(cmd, "EXEC") || is(cmd, "DISCARD")) {
        if (!c->multi) {
            *out = v_str(V_ERR, is(cmd, "EXEC") ? "ERR EXEC without MULTI"
                                                : "ERR DISCARD without MULTI");
            return true;
        }
        bool run_them = is(cmd, "EXEC") && watches_hold(n, c);
        if (is(cmd, "DISCARD"))
            *out = v_str(V_STATUS, "OK");
        else if (!run_them)
            *out = v_nil();
        else
            *out = (sval){ .t = V_ARRAY, .n = c->n_queued,
                           .a = calloc(c->n_queued ? c->n_queued : 1, sizeof(sval)) };
        for (size_t i = 0; run_them && i < c->n_queued; i++)
            out->a[i] = run_request(n, c->queued[i]);
        forget_queued(c);
        forget_watches(c);
        return true;
    }
    if (is(cmd, "MULTI") || (is(cmd, "WATCH") && c->multi)) {
        *out = c->multi ? v_str(V_ERR, "ERR MULTI calls can not be nested")
                        : v_str(V_STATUS, "OK");
        c->multi = true;
        return true;
    }
    if (c->multi) {
        c->queued = realloc(c->queued, (c->n_queued + 1) * sizeof *c->queued);
        c->queued[c->n_queued++] = req;
        *out = v_str(V_STATUS, "QUEUED");
        return true;
    }
    if (is(cmd, "UNWATCH")) {
        forget_watches(c);
        *out = v_str(V_STATUS, "OK");
        return true;
    }
    if (!is(cmd, "WATCH"))
        return false;
    for (size_t i = 1; i < req->elements; i++) {
        const redisReply *k = req->element[i];
        entry *e = find(n, k->str, k->len);
        c->watches = realloc(c->watches, (c->n_watches + 1) * sizeof *c->watches);
        watched *w = &c->watches[c->n_watches++];
        *w = (watched){ .key = malloc(k->len + 1), .klen = k->len, .had = e != NULL,
                        .value = e && e->value ? strdup(e->value) : NULL,
                        .expires_at = e ? e->expires_at : 0 };
        memcpy(w->key, k->str, k->len + 1);
    }
    *out = v_str(V_STATUS, "OK");
    return true;
}

static sval run_request(simnode *n, const redisReply *req)
{
    int argc = (int)req->elements;
    char **argv = malloc((size_t)argc * sizeof *argv);
    size_t *lens = malloc((size_t)argc * sizeof *lens);
    for (int i = 0; i < argc; i++) {
        argv[i] = req->element[i]->str ? req->element[i]->str : "";
        lens[i] = req->element[i]->len;
    }
    sval v = run(n, argc, argv, lens);
    free(argv);
    free(lens);
    return v;
}

bool simnode_feed(simnode *n, simnode_client *c, const char *in, size_t len, int64_t now,
                  simbuf *out)
{
    n->now = now;
    if (n->started == INT64_MIN)
        n->started = now;
    if (redisReaderFeed(c->reader, in, len) != REDIS_OK)
        return false;
    for (;;) {
        void *r = NULL;
        if (redisReaderGetReply(c->reader, &r) != REDIS_OK)
            return false;
        if (!r)
            return true;
        redisReply *req = r;
        if (req->type != REDIS_REPLY_ARRAY || req->elements == 0) {
            freeReplyObject(req);
            return false;
        }
        sval v;
        bool queued = c->multi;
        if (!transaction(n, c, req, &v))
            v = run_request(n, req);
        bool kept = queued && v.t == V_STATUS && strcmp(v.s, "QUEUED") == 0;   /* c->queued's */
        resp(&v, out);
        v_free(&v);
        if (!kept)
            freeReplyObject(req);
    }
}

const char *simnode_get(simnode *n, const char *key, int64_t now)
{
    n->now = now;
    entry *e = find(n, key, strlen(key));
    return e ? e->value : NULL;
}

const char *simnode_list(simnode *n, const char *key, const char *suffix, int64_t now,
                         int64_t *expires_at)
{
    char name[64];
    size_t len = strlen(key), slen = suffix ? strlen(suffix) + 1 : 0;
    if (len + slen > sizeof name)
        return NULL;
    memcpy(name, key, len);
    if (suffix) {
        name[len] = '\0';
        memcpy(name + len + 1, suffix, slen - 1);
    }
    n->now = now;
    entry *e = find(n, name, len + slen);
    if (e && expires_at)
        *expires_at = e->expires_at;
    return e ? e->value : NULL;
}

const char *simnode_beside(simnode *n, const char *key, const char *suffix, int64_t now)
{
    return simnode_list(n, key, suffix, now, NULL);
}

int64_t simnode_counter(simnode *n, const char *key, int64_t now)
{
    const char *value = simnode_beside(n, key, "fence", now);
    return value ? strtoll(value, NULL, 10) : 0;
}

size_t simnode_keys(simnode *n, int64_t now, const char **keys, const char **values, size_t max)
{
    size_t k = 0;
    for (size_t i = 0; i < n->n && k < max; i++) {
        if (n->keys[i].expires_at <= now || is_counter(&n->keys[i]) || n->keys[i].restored
            || strcmp(n->keys[i].key, RL_GUARD_KEY) == 0
            || strcmp(n->keys[i].key, RL_RECORDS_KEY) == 0)
            continue;
        keys[k] = n->keys[i].key;
        values[k++] = n->keys[i].value;
    }
    return k;
}

void simnode_put_list(simnode *n, const char *key)
{
    entry *e = put(n, key, strlen(key));
    e->expires_at = NO_EXPIRY;
}
