/*
 * swig/lua.i - the Lua native module `redlock_core` (Lua 5.1/LuaJIT and 5.4).
 *
 * The raw module mirrors the C API: every function returns its int status
 * first, then the output parameter (the new ctx or handle, nil on failure).
 * Pointers come back unowned; bindings/lua/redlock.lua and its modules
 * (bindings/lua/redlock/_*.lua) free them. Times are integers of
 * milliseconds; a non-integral or out-of-range time (or number of permits),
 * or a list holding something other than strings, is a Lua error, never a
 * crash.
 */
%module redlock_core

/* SWIG defines the entry point without declaring it first. */
%header %{
SWIGEXPORT int luaopen_redlock_core(lua_State *L);
%}

/* Status codes and counts come back as Lua integers. */
%typemap(out) int %{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* Output parameters: return the status, then the object or nil. */
%typemap(in, numinputs=0) redlock_ctx **out (redlock_ctx *temp = NULL),
                          redlock_handle **out (redlock_handle *temp = NULL)
%{ $1 = &temp; %}

%typemap(argout) redlock_ctx **out, redlock_handle **out {
  if (*$1) {
    SWIG_NewPointerObj(L, *$1, $*descriptor, 0);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

/* Messages number the arguments as Lua sees them ($input), without the
 * output parameters. */

/* A list of strings from a Lua array. The pointer array lives in a userdata
 * left on the stack, so a Lua error part-way leaks nothing; the strings stay
 * alive because the table holding them is an argument of the call. */
%typemap(in) (const char *const *node_uris, size_t n_nodes),
             (const char *const *resources, size_t n_resources) {
  const char **items;
  size_t i, n;
  if (!lua_istable(L, $input)) {
    return luaL_error(L, "bad argument #%d to '$symname' (table expected, got %s)",
                      $input, luaL_typename(L, $input));
  }
  n = lua_rawlen(L, $input);
  items = (const char **)lua_newuserdata(L, (n > 0 ? n : 1) * sizeof(*items));
  for (i = 0; i < n; i++) {
    lua_rawgeti(L, $input, (int)i + 1);
    if (lua_type(L, -1) != LUA_TSTRING) {
      return luaL_error(L, "bad argument #%d to '$symname' (item %d is %s, string expected)",
                        $input, (int)i + 1, luaL_typename(L, -1));
    }
    items[i] = lua_tostring(L, -1);
    lua_pop(L, 1);
  }
  $1 = ($1_ltype)items;
  $2 = n;
}

/* Times: whole numbers of milliseconds that an int64_t holds exactly. */
%typemap(in, checkfn="lua_isnumber") int64_t {
  lua_Number ms = lua_tonumber(L, $input);
  if (!(ms >= -9007199254740992.0 && ms <= 9007199254740992.0) ||
      (lua_Number)(int64_t)ms != ms) {
    return luaL_error(L, "bad argument #%d to '$symname' (whole number of milliseconds expected)",
                      $input);
  }
  $1 = (int64_t)ms;
}
%typemap(out) int64_t %{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* redlock_ctx_get_option returns the status, then the value (or nil); so do
 * the other calls that write text into a buffer (1.3: a health field, an
 * option's default, a URI of a list). redlock_arg_check returns the status,
 * then the checked value (0 on failure). */
%typemap(in, numinputs=0) (char *buf, size_t buflen) (char temp[4200]) %{
  temp[0] = '\0';
  $1 = temp;
  $2 = sizeof(temp);
%}
%typemap(argout) (char *buf, size_t buflen) %{
  if (result == REDLOCK_OK) {
    lua_pushstring(L, $1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
%}

/* The 64-bit outputs (a time to live, a fence) are whole numbers: integers
 * in Lua 5.4 (LuaJIT's numbers hold them exactly below 2^53). */
%typemap(in, numinputs=0) int64_t *ttl_ms (int64_t temp = 0), int64_t *fence (int64_t temp = 0),
                          int64_t *out (int64_t temp = 0)
  %{ $1 = &temp; %}
%typemap(argout) int64_t *ttl_ms, int64_t *fence, int64_t *out
  %{ lua_pushinteger(L, (lua_Integer)*$1); SWIG_arg++; %}
#define REDLOCK_INT64_OUTPUTS

/* A semaphore's permits: a whole number an int holds (the C library checks
 * its range, REDLOCK_EINVAL); redlock_permits_available's count comes back
 * after the status, an integer. */
%{
#include <limits.h>
%}
%typemap(in, checkfn="lua_isnumber") int permits {
  lua_Number permits = lua_tonumber(L, $input);
  if (!(permits >= (lua_Number)INT_MIN && permits <= (lua_Number)INT_MAX) ||
      (lua_Number)(int)permits != permits) {
    return luaL_error(L, "bad argument #%d to '$symname' (whole number of permits expected)",
                      $input);
  }
  $1 = (int)permits;
}
%typemap(in, numinputs=0) int *available (int temp = 0) %{ $1 = &temp; %}
%typemap(argout) int *available %{ lua_pushinteger(L, (lua_Integer)*$1); SWIG_arg++; %}

%include "redlock.i"

/* ---- Kept locks in the blocking driver ----
 *
 * redlock_handle_watch calls its lost callback on the client's own thread,
 * where a Lua state must never be entered. So the callback here only
 * records the outcome (status, then message) in a redlock_lua_watch, and
 * redlock/_keeper.lua polls it from the Lua thread. The record is written
 * once, by the client's thread, and read by the Lua thread: status is
 * published last, with release order, so a status seen non-zero comes with
 * its message.
 *
 * redlock_lua_watch_new(h) watches h; it returns the status, then the record
 * or nil. redlock_lua_watch_status is 0 until the lock is lost, then
 * REDLOCK_ENOTHELD or REDLOCK_EEXPIRED; redlock_lua_watch_message its detail
 * ("" before). redlock_lua_watch_free only once h has been unlocked or freed
 * (either ends the watch, and waits for a callback under way). */
%{
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct redlock_lua_watch {
    atomic_int status;      /* 0 until lost */
    char message[256];
} redlock_lua_watch;

static void redlock_lua_lost(void *data, redlock_handle *h, int status, const char *message)
{
    redlock_lua_watch *w = (redlock_lua_watch *)data;
    (void)h;
    snprintf(w->message, sizeof w->message, "%s", message ? message : "");
    atomic_store_explicit(&w->status, status != 0 ? status : REDLOCK_ENOTHELD,
                          memory_order_release);
}

static int redlock_lua_watch_new(redlock_lua_watch **out, redlock_handle *h)
{
    redlock_lua_watch *w = (redlock_lua_watch *)calloc(1, sizeof *w);
    *out = NULL;
    if (!w)
        return REDLOCK_ENOMEM;
    atomic_init(&w->status, 0);
    int rc = redlock_handle_watch(h, redlock_lua_lost, w);
    if (rc != REDLOCK_OK) {
        free(w);
        return rc;
    }
    *out = w;
    return REDLOCK_OK;
}

static int redlock_lua_watch_status(const redlock_lua_watch *w)
{
    return w ? atomic_load_explicit(&((redlock_lua_watch *)w)->status, memory_order_acquire) : 0;
}

static const char *redlock_lua_watch_message(const redlock_lua_watch *w)
{
    return redlock_lua_watch_status(w) != 0 ? w->message : "";
}

static void redlock_lua_watch_free(redlock_lua_watch *w)
{
    free(w);
}
%}

typedef struct redlock_lua_watch redlock_lua_watch;
%nodefaultctor redlock_lua_watch;
%nodefaultdtor redlock_lua_watch;

%typemap(in, numinputs=0) redlock_lua_watch **out (redlock_lua_watch *temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) redlock_lua_watch **out {
  if (*$1) {
    SWIG_NewPointerObj(L, *$1, $*descriptor, 0);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

int redlock_lua_watch_new(redlock_lua_watch **out, redlock_handle *h);
int redlock_lua_watch_status(const redlock_lua_watch *w);
const char *redlock_lua_watch_message(const redlock_lua_watch *w);
void redlock_lua_watch_free(redlock_lua_watch *w);

/* ---- Events: redlock_ctx_set_log into a queue that Lua reads ----
 *
 * The hook runs on whichever thread emits an event, the client's own
 * among them, where a Lua state must never be entered. So it only queues
 * the event (copies of its strings; at most REDLOCK_LUA_LOG_MAX, the oldest
 * dropped beyond that, and counted), and redlock/_events.lua takes them out
 * on the Lua thread: redlock_lua_log_pop returns the next one's level (0
 * when none is left) and keeps it for redlock_lua_log_event and
 * redlock_lua_log_message until the next pop. Events lost to a full queue come out as one event
 * "events_dropped" (REDLOCK_LOG_WARN, "count=N"). redlock_lua_log_new(ctx,
 * min_level) installs the hook; free the queue with redlock_lua_log_free
 * after redlock_ctx_free (which ends every thread that could still queue). */
%{
#include <pthread.h>
#include <string.h>

#define REDLOCK_LUA_LOG_MAX 1024

typedef struct redlock_lua_event {
    int level;
    char *event;
    char *message;
} redlock_lua_event;

typedef struct redlock_lua_log {
    pthread_mutex_t mu;
    redlock_lua_event ring[REDLOCK_LUA_LOG_MAX];
    size_t head, len;
    unsigned long dropped;
    redlock_lua_event current;    /* the last popped: the Lua thread's */
    char dropped_text[32];
} redlock_lua_log;

static char *redlock_lua_copy(const char *s)
{
    size_t n = strlen(s) + 1;
    char *copy = (char *)malloc(n);
    if (copy)
        memcpy(copy, s, n);
    return copy;
}

static void redlock_lua_event_clear(redlock_lua_event *e)
{
    free(e->event);
    free(e->message);
    e->event = e->message = NULL;
    e->level = 0;
}

static void redlock_lua_queue(void *data, int level, const char *event, const char *message)
{
    redlock_lua_log *q = (redlock_lua_log *)data;
    redlock_lua_event e = { level, redlock_lua_copy(event), redlock_lua_copy(message) };
    redlock_lua_event old = { 0, NULL, NULL };
    pthread_mutex_lock(&q->mu);
    if (!e.event || !e.message) {
        q->dropped++;
    } else {
        if (q->len == REDLOCK_LUA_LOG_MAX) {
            old = q->ring[q->head];
            q->head = (q->head + 1) % REDLOCK_LUA_LOG_MAX;
            q->len--;
            q->dropped++;
        }
        q->ring[(q->head + q->len) % REDLOCK_LUA_LOG_MAX] = e;
        q->len++;
        e.event = e.message = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    redlock_lua_event_clear(&old);
    redlock_lua_event_clear(&e);
}

static int redlock_lua_log_new(redlock_lua_log **out, redlock_ctx *ctx, int min_level)
{
    redlock_lua_log *q = (redlock_lua_log *)calloc(1, sizeof *q);
    *out = NULL;
    if (!q)
        return REDLOCK_ENOMEM;
    pthread_mutex_init(&q->mu, NULL);
    int rc = redlock_ctx_set_log(ctx, redlock_lua_queue, min_level, q);
    if (rc != REDLOCK_OK) {
        pthread_mutex_destroy(&q->mu);
        free(q);
        return rc;
    }
    *out = q;
    return REDLOCK_OK;
}

static int redlock_lua_log_pop(redlock_lua_log *q)
{
    redlock_lua_event_clear(&q->current);
    pthread_mutex_lock(&q->mu);
    if (q->dropped > 0) {
        snprintf(q->dropped_text, sizeof q->dropped_text, "count=%lu", q->dropped);
        q->dropped = 0;
        q->current.level = REDLOCK_LOG_WARN;
        q->current.event = redlock_lua_copy("events_dropped");
        q->current.message = redlock_lua_copy(q->dropped_text);
    } else if (q->len > 0) {
        q->current = q->ring[q->head];
        q->head = (q->head + 1) % REDLOCK_LUA_LOG_MAX;
        q->len--;
    }
    pthread_mutex_unlock(&q->mu);
    return q->current.event && q->current.message ? q->current.level : 0;
}

static const char *redlock_lua_log_event(const redlock_lua_log *q)
{
    return q->current.event ? q->current.event : "";
}

static const char *redlock_lua_log_message(const redlock_lua_log *q)
{
    return q->current.message ? q->current.message : "";
}

static void redlock_lua_log_free(redlock_lua_log *q)
{
    if (!q)
        return;
    redlock_lua_event_clear(&q->current);
    while (q->len > 0) {
        redlock_lua_event_clear(&q->ring[q->head]);
        q->head = (q->head + 1) % REDLOCK_LUA_LOG_MAX;
        q->len--;
    }
    pthread_mutex_destroy(&q->mu);
    free(q);
}
%}

typedef struct redlock_lua_log redlock_lua_log;
%nodefaultctor redlock_lua_log;
%nodefaultdtor redlock_lua_log;

%typemap(in, numinputs=0) redlock_lua_log **out (redlock_lua_log *temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) redlock_lua_log **out {
  if (*$1) {
    SWIG_NewPointerObj(L, *$1, $*descriptor, 0);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

int redlock_lua_log_new(redlock_lua_log **out, redlock_ctx *ctx, int min_level);
int redlock_lua_log_pop(redlock_lua_log *q);
const char *redlock_lua_log_event(const redlock_lua_log *q);
const char *redlock_lua_log_message(const redlock_lua_log *q);
void redlock_lua_log_free(redlock_lua_log *q);

/* ---- The engine (redlock_engine.h, experimental), for the cosocket driver
 * in redlock/_cosocket.lua and redlock/_drive.lua ----
 *
 * An operation, a subscriber, a waiters object and a keeper are SWIG
 * pointers; a connection is a light userdata, so that the driver can key
 * its own state by it (the same pointer is the same Lua value).
 * Constructors return the status, then the object or nil. The bytes of
 * connections and subscribers go out and come in as Lua strings; the ids of
 * waiters and kept locks are integers. redlock_op_drive and
 * redlock_keeper_drive return their bits, then when to drive again (ms,
 * from the at_ms typemap below); redlock_op_connect a connection or nil,
 * redlock_keeper_take_op an operation or nil; the TLS settings
 * (redlock_ctx_tls_*) strings or nil. */
%{
#include "redlock_engine.h"
%}
%nodefaultctor redlock_op;
%nodefaultdtor redlock_op;
%nodefaultctor redlock_waiters;
%nodefaultdtor redlock_waiters;
%nodefaultctor redlock_keeper;
%nodefaultdtor redlock_keeper;

%typemap(in, numinputs=0) redlock_op **out (redlock_op *temp = NULL),
                          redlock_waiters **out (redlock_waiters *temp = NULL),
                          redlock_keeper **out (redlock_keeper *temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) redlock_op **out, redlock_waiters **out, redlock_keeper **out {
  if (*$1) {
    SWIG_NewPointerObj(L, *$1, $*descriptor, 0);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

%typemap(in, checkfn="lua_islightuserdata") redlock_conn *c, const redlock_conn *c
%{ $1 = ($1_ltype)lua_touserdata(L, $input); %}
%typemap(out) redlock_conn * %{
  if ($1) {
    lua_pushlightuserdata(L, (void *)$1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
%}
%typemap(in, numinputs=0) redlock_conn **out (redlock_conn *temp = NULL) %{ $1 = &temp; %}
%typemap(argout) redlock_conn **out {
  if (*$1) {
    lua_pushlightuserdata(L, (void *)*$1);
  } else {
    lua_pushnil(L);
  }
  SWIG_arg++;
}

%typemap(out) size_t %{ lua_pushinteger(L, (lua_Integer)$1); SWIG_arg++; %}

/* redlock_op_drive, redlock_waiters_drive and redlock_keeper_drive: what to
 * do, then when to drive again (ms). */
%typemap(in, numinputs=0) int64_t *at_ms (int64_t temp = 0) %{ $1 = &temp; %}
%typemap(argout) int64_t *at_ms %{ lua_pushinteger(L, (lua_Integer)*$1); SWIG_arg++; %}

/* A waiter's or a kept lock's id: a whole number from 1 to 2^53, as a Lua
 * number holds it exactly (0 from redlock_waiters_next and the keeper's
 * next_lost and next_ended: none). */
%typemap(in, checkfn="lua_isnumber") uint64_t id {
  lua_Number id = lua_tonumber(L, $input);
  if (!(id >= 1 && id <= 9007199254740992.0) || (lua_Number)(uint64_t)id != id) {
    return luaL_error(L, "bad argument #%d to '$symname' (whole number from 1 to 2^53 expected)",
                      $input);
  }
  $1 = (uint64_t)id;
}
%typemap(out) uint64_t redlock_waiters_next, uint64_t redlock_keeper_next_lost,
              uint64_t redlock_keeper_next_ended %{
  lua_pushnumber(L, (lua_Number)$1);
  SWIG_arg++;
%}

/* redlock_conn_output and redlock_waiters_output return the bytes to write ("" when none). */
%typemap(in, numinputs=0) const char **bytes (const char *temp = NULL) %{ $1 = ($1_ltype)&temp; %}
%typemap(out) size_t redlock_conn_output %{
  lua_pushlstring(L, temp2 ? temp2 : "", (size_t)$1);
  SWIG_arg++;
%}
%typemap(out) size_t redlock_waiters_output %{
  lua_pushlstring(L, temp3 ? temp3 : "", (size_t)$1);
  SWIG_arg++;
%}

/* redlock_conn_received and redlock_waiters_received take what was read, as a Lua string. */
%typemap(in, checkfn="lua_isstring") (const char *bytes, size_t len) {
  size_t n = 0;
  $1 = ($1_ltype)lua_tolstring(L, $input, &n);
  $2 = n;
}

%include "redlock_engine.h"

/* The cosocket driver's calls on every reply, one call from Lua each
 * instead of two (a call from Lua into C is much of the driver's time; the
 * engine's redlock_op_react is the other):
 *   redlock_conn_reading(c): how many replies c still owes; 0 once broken.
 *   redlock_conn_feed_reading(c, bytes, now): feeds what was read, then the
 *     same, or -1 when the connection broke. */
%inline %{
static long long redlock_conn_reading(const redlock_conn *c)
{
    return redlock_conn_broken(c) ? 0 : (long long)redlock_conn_owed(c);
}

static long long redlock_conn_feed_reading(redlock_conn *c, const char *bytes, size_t len,
                                           int64_t now_ms)
{
    if (redlock_conn_received(c, bytes, len, now_ms) != REDLOCK_OK || redlock_conn_broken(c))
        return -1;
    return (long long)redlock_conn_owed(c);
}
%}
