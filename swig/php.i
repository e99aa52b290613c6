/*
 * swig/php.i - the raw PHP extension `redlock` (PHP 8.2 and later).
 *
 * It mirrors the C API, made safe to call from PHP:
 *   - a function that returns a status returns null, or its output
 *     parameters (the new ctx or handle; the answers of a query, an array
 *     when there are two), and throws on a negative status the exception
 *     that \Redlock\RedlockException::forCode() maps the code to, with the
 *     library's detail of the failure (redlock_errmsg, else
 *     redlock_strerror) as its message; without bindings/php's autoloader,
 *     a plain \RuntimeException with the same code and message;
 *   - lists of strings come from PHP arrays of strings;
 *   - null for a ctx or handle, and a string holding a NUL byte, throw
 *     (TypeError, ValueError) instead of reaching C.
 * Pointers come back unowned; bindings/php/src (namespace Redlock) frees
 * them. PHP runs no thread of its own beside the caller's, and the library
 * calls its lost-lock and event hooks on its own threads, where PHP must
 * never be entered: so both only record what happened, in C, and the PHP
 * layer reads the records on its thread (the Lua binding does the same).
 */
%module redlock

/* SWIG defines the entry point without declaring it first. */
%header %{
SWIGEXPORT zend_module_entry *get_module(void);
%}

%{
#include <string.h>
#include "ext/spl/spl_exceptions.h"
#include "redlock.h"

/* Throws the exception of a negative status code: the one that
 * \Redlock\RedlockException::forCode(code, message) makes (the table from
 * codes to exceptions is there, once), or a \RuntimeException when that
 * class cannot be loaded. The message is this thread's detail of the last
 * failure, else the code's description. */
static void redlock_php_raise(int code)
{
  const char *detail = redlock_errmsg();
  zval callable, result, args[2];
  zend_string *name;

  if (detail == NULL || detail[0] == '\0') {
    detail = redlock_strerror(code);
  }
  if (EG(exception)) {
    return;
  }
  name = zend_string_init("Redlock\\RedlockException", sizeof("Redlock\\RedlockException") - 1, 0);
  if (zend_lookup_class(name) == NULL) {
    zend_string_release(name);
    if (!EG(exception)) {
      zend_throw_exception(spl_ce_RuntimeException, detail, code);
    }
    return;
  }
  zend_string_release(name);
  ZVAL_STRING(&callable, "Redlock\\RedlockException::forCode");
  ZVAL_LONG(&args[0], code);
  ZVAL_STRING(&args[1], detail);
  ZVAL_UNDEF(&result);
  if (call_user_function(NULL, NULL, &callable, &result, 2, args) == SUCCESS &&
      Z_TYPE(result) == IS_OBJECT && !EG(exception)) {
    zend_throw_exception_object(&result);
  } else {
    zval_ptr_dtor(&result);
    if (!EG(exception)) {
      zend_throw_exception(spl_ce_RuntimeException, detail, code);
    }
  }
  zval_ptr_dtor(&callable);
  zval_ptr_dtor(&args[1]);
}
%}

/* Every function returning a status: throws on failure, else returns null
 * (or what the output parameters add). */
%typemap(out, phptype="null|int|string|array|object") int redlock_ctx_new, int redlock_ctx_set_option, int redlock_lock,
              int redlock_lock_multi, int redlock_lock_rw, int redlock_lock_fair,
              int redlock_acquire_permit, int redlock_extend, int redlock_unlock,
              int redlock_inspect, int redlock_force_unlock, int redlock_handle_fence,
              int redlock_ctx_ping, int redlock_inspect_multi, int redlock_handle_reenter,
              int redlock_handle_leave, int redlock_permits_available,
              int redlock_ctx_get_option, int redlock_health_value, int redlock_option_default,
              int redlock_uri_list_item, int redlock_arg_check {
  if ($1 < 0) {
    redlock_php_raise($1);
    SWIG_fail;
  }
  RETVAL_NULL();
}

/* A type (REDLOCK_TYPE_*) is returned as an int; a failure throws. */
%typemap(out, phptype="int") int redlock_health_type, int redlock_option_type {
  if ($1 < 0) {
    redlock_php_raise($1);
    SWIG_fail;
  }
  RETVAL_LONG($1);
}

/* Output parameters become the return value (an array when there are two). */
%typemap(in, numinputs=0) redlock_ctx **out (redlock_ctx *temp = NULL),
                          redlock_handle **out (redlock_handle *temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) redlock_ctx **out, redlock_handle **out {
  zval o;
  ZVAL_UNDEF(&o);   /* SWIG_SetPointerZval reuses an object it finds there */
  SWIG_SetPointerZval(&o, (void *)*$1, $*descriptor, 0);
  SWIG_Php_AppendOutput($result, &o, 1);
}

/* The answers of the queries (int *locked, *deleted, *answered, *left,
 * *available): redlock.i applies int *OUTPUT to them, which here puts the
 * first in place of the status's null, rather than after it. SWIG's
 * typemaps.i is included first, so that redlock.i's include of it (once
 * only) does not put its own back. */
%include <typemaps.i>
%typemap(in, numinputs=0) int *OUTPUT (int temp = 0) %{ $1 = &temp; %}
%typemap(argout) int *OUTPUT {
  zval o;
  ZVAL_LONG(&o, (zend_long)*$1);
  SWIG_Php_AppendOutput($result, &o, 1);
}
%apply int *OUTPUT { int *available };

/* The 64-bit outputs (a time to live, a fence, a checked argument) are PHP
 * ints, which are 64-bit. */
#define REDLOCK_INT64_OUTPUTS
%typemap(in, numinputs=0) int64_t *ttl_ms (int64_t temp = 0), int64_t *fence (int64_t temp = 0),
                          int64_t *out (int64_t temp = 0)
%{ $1 = &temp; %}
%typemap(argout) int64_t *ttl_ms, int64_t *fence, int64_t *out {
  zval o;
  ZVAL_LONG(&o, (zend_long)*$1);
  SWIG_Php_AppendOutput($result, &o, 1);
}

/* Times and counts: PHP ints (64-bit); a float that is not whole, or out of
 * range, is a TypeError or ValueError rather than a silent truncation. */
%typemap(in, phptype="int") int64_t {
  if (Z_TYPE($input) != IS_LONG) {
    zend_type_error("$symname(): argument $$1_name must be of type int, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  $1 = (int64_t)Z_LVAL($input);
}
%typemap(in, phptype="int") int permits, int mode, int arg, int min_level, int code {
  if (Z_TYPE($input) != IS_LONG) {
    zend_type_error("$symname(): argument $$1_name must be of type int, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  if (Z_LVAL($input) < INT_MIN || Z_LVAL($input) > INT_MAX) {
    zend_value_error("$symname(): argument $$1_name is out of range");
    SWIG_fail;
  }
  $1 = (int)Z_LVAL($input);
}
%typemap(in, phptype="int") size_t index, size_t node {
  if (Z_TYPE($input) != IS_LONG) {
    zend_type_error("$symname(): argument $$1_name must be of type int, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  if (Z_LVAL($input) < 0) {
    zend_value_error("$symname(): argument $$1_name must be 0 or more");
    SWIG_fail;
  }
  $1 = (size_t)Z_LVAL($input);
}
%typemap(in, phptype="float") double value {
  if (Z_TYPE($input) == IS_LONG) {
    $1 = (double)Z_LVAL($input);
  } else if (Z_TYPE($input) == IS_DOUBLE) {
    $1 = Z_DVAL($input);
  } else {
    zend_type_error("$symname(): argument $$1_name must be of type float, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
}
%{
#include <limits.h>
%}

/* Strings: PHP strings without a NUL byte (null only where C takes NULL:
 * what, the name of an argument in redlock_arg_check's message). */
%typemap(in, phptype="string") const char * {
  if (Z_TYPE($input) != IS_STRING) {
    zend_type_error("$symname(): argument $$1_name must be of type string, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  if (strlen(Z_STRVAL($input)) != Z_STRLEN($input)) {
    zend_value_error("$symname(): argument $$1_name must not contain a NUL byte");
    SWIG_fail;
  }
  $1 = ($1_ltype)Z_STRVAL($input);
}
%typemap(in, phptype="?string") const char *what {
  if (Z_TYPE($input) == IS_NULL) {
    $1 = NULL;
  } else if (Z_TYPE($input) != IS_STRING || strlen(Z_STRVAL($input)) != Z_STRLEN($input)) {
    zend_type_error("$symname(): argument $$1_name must be a string without NUL, or null");
    SWIG_fail;
  } else {
    $1 = ($1_ltype)Z_STRVAL($input);
  }
}
/* Text the library returns: null for NULL. */
%typemap(out, phptype="?string") const char * {
  if ($1) {
    RETVAL_STRING($1);
  } else {
    RETVAL_NULL();
  }
}

/* The calls that write text into a buffer (an option's value or default, a
 * health field, a URI of a list) return it as a string. */
%typemap(in, numinputs=0) (char *buf, size_t buflen) (char temp[4200]) %{
  temp[0] = '\0';
  $1 = temp;
  $2 = sizeof(temp);
%}
%typemap(argout) (char *buf, size_t buflen) {
  zval o;
  ZVAL_STRING(&o, $1);
  SWIG_Php_AppendOutput($result, &o, 1);
}

/* A list of strings from a PHP array of strings (in its order). The
 * strings belong to the array, which the call's argument keeps alive. */
%typemap(in, phptype="array") (const char *const *node_uris, size_t n_nodes),
                              (const char *const *resources, size_t n_resources) {
  zval *item;
  size_t i = 0, n;
  const char **texts;

  if (Z_TYPE($input) != IS_ARRAY) {
    zend_type_error("$symname(): argument $$1_name must be of type array, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  n = zend_hash_num_elements(Z_ARRVAL($input));
  texts = (const char **)emalloc((n > 0 ? n : 1) * sizeof(*texts));
  $1 = ($1_ltype)texts;
  $2 = n;
  ZEND_HASH_FOREACH_VAL(Z_ARRVAL($input), item) {
    ZVAL_DEREF(item);
    if (Z_TYPE_P(item) != IS_STRING || strlen(Z_STRVAL_P(item)) != Z_STRLEN_P(item)) {
      zend_type_error("$symname(): every item of $1_name must be a string without NUL, "
                      "item %zu is %s", i + 1, zend_zval_type_name(item));
      SWIG_fail;
    }
    texts[i++] = Z_STRVAL_P(item);
  } ZEND_HASH_FOREACH_END();
}
%typemap(freearg) (const char *const *node_uris, size_t n_nodes),
                  (const char *const *resources, size_t n_resources) %{
  if ($1) {
    efree((void *)$1);
  }
%}

/* The calls that need a ctx or a handle refuse null. */
%typemap(check) redlock_ctx *ctx, const redlock_ctx *ctx, redlock_handle *h,
                const redlock_handle *h %{
  if ($1 == NULL) {
    zend_type_error("$symname(): argument $$1_name must not be null");
    SWIG_fail;
  }
%}

%include "redlock.i"

/* ---- Kept locks ----
 *
 * redlock_handle_watch calls its lost callback on the client's own thread,
 * where PHP must never be entered. So the callback here only records the
 * outcome (status, then message) in a redlock_php_watch, which the PHP layer
 * reads on its thread (at its next call into the library, and in isLost()).
 * The record is written once, by the client's thread: status is published
 * last, with release order, so a status seen non-zero comes with its
 * message.
 *
 * redlock_php_watch_new(h) watches h and returns the record (or throws).
 * redlock_php_watch_status is 0 until the lock is lost, then
 * REDLOCK_ENOTHELD or REDLOCK_EEXPIRED; redlock_php_watch_message its detail
 * ("" before). redlock_php_watch_free only once h has been unlocked or freed
 * (either ends the watch, and waits for a callback under way). */
%{
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct redlock_php_watch {
  atomic_int status;      /* 0 until lost */
  char message[256];
} redlock_php_watch;

static void redlock_php_lost(void *data, redlock_handle *h, int status, const char *message)
{
  redlock_php_watch *w = (redlock_php_watch *)data;
  (void)h;
  snprintf(w->message, sizeof w->message, "%s", message ? message : "");
  atomic_store_explicit(&w->status, status != 0 ? status : REDLOCK_ENOTHELD,
                        memory_order_release);
}

static int redlock_php_watch_new(redlock_php_watch **out, redlock_handle *h)
{
  redlock_php_watch *w = (redlock_php_watch *)calloc(1, sizeof *w);
  int rc;

  *out = NULL;
  if (!w) {
    return REDLOCK_ENOMEM;
  }
  atomic_init(&w->status, 0);
  rc = redlock_handle_watch(h, redlock_php_lost, w);
  if (rc != REDLOCK_OK) {
    free(w);
    return rc;
  }
  *out = w;
  return REDLOCK_OK;
}

static int redlock_php_watch_status(const redlock_php_watch *w)
{
  return w ? atomic_load_explicit(&((redlock_php_watch *)w)->status, memory_order_acquire) : 0;
}

static const char *redlock_php_watch_message(const redlock_php_watch *w)
{
  return redlock_php_watch_status(w) != 0 ? w->message : "";
}

static void redlock_php_watch_free(redlock_php_watch *w)
{
  free(w);
}
%}

typedef struct redlock_php_watch redlock_php_watch;
%nodefaultctor redlock_php_watch;
%nodefaultdtor redlock_php_watch;
%typemap(in, numinputs=0) redlock_php_watch **out (redlock_php_watch *temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) redlock_php_watch **out {
  zval o;
  ZVAL_UNDEF(&o);   /* SWIG_SetPointerZval reuses an object it finds there */
  SWIG_SetPointerZval(&o, (void *)*$1, $*descriptor, 0);
  SWIG_Php_AppendOutput($result, &o, 1);
}
%typemap(out, phptype="null|int|string|array|object") int redlock_php_watch_new {
  if ($1 < 0) {
    redlock_php_raise($1);
    SWIG_fail;
  }
  RETVAL_NULL();
}
%typemap(check) redlock_php_watch *w %{
  if ($1 == NULL) {
    zend_type_error("$symname(): argument $$1_name must not be null");
    SWIG_fail;
  }
%}

int redlock_php_watch_new(redlock_php_watch **out, redlock_handle *h);
int redlock_php_watch_status(const redlock_php_watch *w);
const char *redlock_php_watch_message(const redlock_php_watch *w);
void redlock_php_watch_free(redlock_php_watch *w);

/* ---- Events: redlock_ctx_set_log into a queue that PHP reads ----
 *
 * The hook runs on whichever thread emits an event, the client's own among
 * them. So it only queues the event (copies of its strings; at most
 * REDLOCK_PHP_LOG_MAX, the oldest dropped beyond that, and counted), and
 * the PHP layer takes them out on its thread: redlock_php_log_pop returns
 * the next one's level (0 when none is left) and keeps it for
 * redlock_php_log_event and redlock_php_log_message until the next pop.
 * Events lost to a full queue come out as one event "events_dropped"
 * (REDLOCK_LOG_WARN, "count=N"). redlock_php_log_new(ctx, min_level)
 * installs the hook; free the queue with redlock_php_log_free after
 * redlock_ctx_free (which ends every thread that could still queue). */
%{
#include <pthread.h>

#define REDLOCK_PHP_LOG_MAX 1024

typedef struct redlock_php_event {
  int level;
  char *event;
  char *message;
} redlock_php_event;

typedef struct redlock_php_log {
  pthread_mutex_t mu;
  redlock_php_event ring[REDLOCK_PHP_LOG_MAX];
  size_t head, len;
  unsigned long dropped;
  redlock_php_event current;    /* the last popped: the PHP thread's */
  char dropped_text[32];
} redlock_php_log;

static char *redlock_php_copy(const char *s)
{
  size_t n = strlen(s) + 1;
  char *copy = (char *)malloc(n);
  if (copy) {
    memcpy(copy, s, n);
  }
  return copy;
}

static void redlock_php_event_clear(redlock_php_event *e)
{
  free(e->event);
  free(e->message);
  e->event = e->message = NULL;
  e->level = 0;
}

static void redlock_php_queue(void *data, int level, const char *event, const char *message)
{
  redlock_php_log *q = (redlock_php_log *)data;
  redlock_php_event e = { level, redlock_php_copy(event), redlock_php_copy(message) };
  redlock_php_event old = { 0, NULL, NULL };

  pthread_mutex_lock(&q->mu);
  if (!e.event || !e.message) {
    q->dropped++;
  } else {
    if (q->len == REDLOCK_PHP_LOG_MAX) {
      old = q->ring[q->head];
      q->head = (q->head + 1) % REDLOCK_PHP_LOG_MAX;
      q->len--;
      q->dropped++;
    }
    q->ring[(q->head + q->len) % REDLOCK_PHP_LOG_MAX] = e;
    q->len++;
    e.event = e.message = NULL;
  }
  pthread_mutex_unlock(&q->mu);
  redlock_php_event_clear(&old);
  redlock_php_event_clear(&e);
}

static int redlock_php_log_new(redlock_php_log **out, redlock_ctx *ctx, int min_level)
{
  redlock_php_log *q = (redlock_php_log *)calloc(1, sizeof *q);
  int rc;

  *out = NULL;
  if (!q) {
    return REDLOCK_ENOMEM;
  }
  pthread_mutex_init(&q->mu, NULL);
  rc = redlock_ctx_set_log(ctx, redlock_php_queue, min_level, q);
  if (rc != REDLOCK_OK) {
    pthread_mutex_destroy(&q->mu);
    free(q);
    return rc;
  }
  *out = q;
  return REDLOCK_OK;
}

static int redlock_php_log_pop(redlock_php_log *q)
{
  redlock_php_event_clear(&q->current);
  pthread_mutex_lock(&q->mu);
  if (q->dropped > 0) {
    snprintf(q->dropped_text, sizeof q->dropped_text, "count=%lu", q->dropped);
    q->dropped = 0;
    q->current.level = REDLOCK_LOG_WARN;
    q->current.event = redlock_php_copy("events_dropped");
    q->current.message = redlock_php_copy(q->dropped_text);
  } else if (q->len > 0) {
    q->current = q->ring[q->head];
    q->head = (q->head + 1) % REDLOCK_PHP_LOG_MAX;
    q->len--;
  }
  pthread_mutex_unlock(&q->mu);
  return q->current.event && q->current.message ? q->current.level : 0;
}

static const char *redlock_php_log_event(const redlock_php_log *q)
{
  return q->current.event ? q->current.event : "";
}

static const char *redlock_php_log_message(const redlock_php_log *q)
{
  return q->current.message ? q->current.message : "";
}

static void redlock_php_log_free(redlock_php_log *q)
{
  if (!q) {
    return;
  }
  redlock_php_event_clear(&q->current);
  while (q->len > 0) {
    redlock_php_event_clear(&q->ring[q->head]);
    q->head = (q->head + 1) % REDLOCK_PHP_LOG_MAX;
    q->len--;
  }
  pthread_mutex_destroy(&q->mu);
  free(q);
}
%}

typedef struct redlock_php_log redlock_php_log;
%nodefaultctor redlock_php_log;
%nodefaultdtor redlock_php_log;
%typemap(in, numinputs=0) redlock_php_log **out (redlock_php_log *temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) redlock_php_log **out {
  zval o;
  ZVAL_UNDEF(&o);   /* SWIG_SetPointerZval reuses an object it finds there */
  SWIG_SetPointerZval(&o, (void *)*$1, $*descriptor, 0);
  SWIG_Php_AppendOutput($result, &o, 1);
}
%typemap(out, phptype="null|int|string|array|object") int redlock_php_log_new {
  if ($1 < 0) {
    redlock_php_raise($1);
    SWIG_fail;
  }
  RETVAL_NULL();
}
%typemap(check) redlock_php_log *q, const redlock_php_log *q %{
  if ($1 == NULL) {
    zend_type_error("$symname(): argument $$1_name must not be null");
    SWIG_fail;
  }
%}

int redlock_php_log_new(redlock_php_log **out, redlock_ctx *ctx, int min_level);
int redlock_php_log_pop(redlock_php_log *q);
const char *redlock_php_log_event(const redlock_php_log *q);
const char *redlock_php_log_message(const redlock_php_log *q);
void redlock_php_log_free(redlock_php_log *q);

/* ---- The engine (redlock_engine.h, experimental), for the Swoole
 * coroutine driver in bindings/php/src/Internal/Swoole ----
 *
 * As lua.i does for the cosocket driver: an operation, a connection, a
 * waiters object and a keeper are SWIG pointers (null where C gives NULL:
 * redlock_op_connect, redlock_op_take_conn, redlock_keeper_take_op); their
 * constructors return the object or throw as the API's calls do. The bytes
 * of connections and subscribers go out and come in as PHP strings (binary:
 * any byte). Times are PHP ints of milliseconds (INT64_MAX is PHP_INT_MAX),
 * ids of waiters and kept locks ints from 1 (0 from the calls that say
 * "none"). redlock_op_drive, redlock_waiters_drive and redlock_keeper_drive
 * return [bits, at_ms]; redlock_op_answer [locked, ttl_ms, deleted];
 * redlock_keeper_remove 0 or 1 (a renewal under way), or throws; the other
 * calls that return a status (redlock_ctx_tls_check, redlock_conn_received,
 * redlock_waiters_received...) return it as an int, for the driver to read.
 *
 * Only what a driver of redlock_op_drive, redlock_waiters and
 * redlock_keeper uses is wrapped: the finer calls the header keeps for
 * other drivers, and the single keeps and renewals under the keeper, are
 * not. */
%{
#include "redlock_engine.h"
%}
%ignore redlock_op_step;
%ignore redlock_op_wake_at;
%ignore redlock_op_tail_at;
%ignore redlock_op_wants_conn;
%ignore redlock_op_no_conn;
%ignore redlock_conn_new;
%ignore redlock_ctx_node_connect_wait;
%ignore redlock_keep_new;
%ignore redlock_keep_free;
%ignore redlock_keep_next;
%ignore redlock_keep_extend;
%ignore redlock_keep_extended;
%ignore redlock_keep_status;
%ignore redlock_keep_message;
%ignore redlock_renewal_new;
%ignore redlock_renewal_free;
%ignore redlock_renewal_add;
%ignore redlock_renewal_count;
%ignore redlock_renewal_start;
%ignore redlock_renewal_ended;
%ignore redlock_keep;
%ignore redlock_renewal;

%nodefaultctor redlock_op;
%nodefaultdtor redlock_op;
%nodefaultctor redlock_conn;
%nodefaultdtor redlock_conn;
%nodefaultctor redlock_waiters;
%nodefaultdtor redlock_waiters;
%nodefaultctor redlock_keeper;
%nodefaultdtor redlock_keeper;

/* Constructors: the object, or the exception of the status. */
%typemap(in, numinputs=0) redlock_op **out (redlock_op *temp = NULL),
                          redlock_waiters **out (redlock_waiters *temp = NULL),
                          redlock_keeper **out (redlock_keeper *temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) redlock_op **out, redlock_waiters **out, redlock_keeper **out {
  zval o;
  ZVAL_UNDEF(&o);   /* SWIG_SetPointerZval reuses an object it finds there */
  SWIG_SetPointerZval(&o, (void *)*$1, $*descriptor, 0);
  SWIG_Php_AppendOutput($result, &o, 1);
}
%typemap(out, phptype="null|object") int redlock_op_lock, int redlock_op_lock_rw,
              int redlock_op_lock_fair, int redlock_op_acquire_permit, int redlock_op_extend,
              int redlock_op_unlock, int redlock_op_deliver, int redlock_op_inspect,
              int redlock_op_force_unlock, int redlock_op_permits, int redlock_op_ping,
              int redlock_waiters_new, int redlock_keeper_new, int redlock_keeper_extend {
  if ($1 < 0) {
    redlock_php_raise($1);
    SWIG_fail;
  }
  RETVAL_NULL();
}
%typemap(out, phptype="null") int redlock_keeper_add, int redlock_keeper_op_ended {
  if ($1 < 0) {
    redlock_php_raise($1);
    SWIG_fail;
  }
  RETVAL_NULL();
}
%typemap(out, phptype="int") int redlock_keeper_remove {
  if ($1 < 0) {
    redlock_php_raise($1);
    SWIG_fail;
  }
  RETVAL_LONG($1);
}

/* The calls that need an operation, a connection, a waiters object or a
 * keeper refuse null. */
%typemap(check) redlock_op *op, const redlock_op *op, redlock_conn *c, const redlock_conn *c,
                redlock_waiters *w, const redlock_waiters *w, redlock_keeper *k,
                const redlock_keeper *k %{
  if ($1 == NULL) {
    zend_type_error("$symname(): argument $$1_name must not be null");
    SWIG_fail;
  }
%}

/* Times out: ints (the engine's clock, INT64_MAX for never). */
%typemap(out, phptype="int") int64_t %{ RETVAL_LONG((zend_long)$1); %}
/* [bits, when to drive again]. */
%typemap(in, numinputs=0) int64_t *at_ms (int64_t temp = 0) %{ $1 = &temp; %}
%typemap(argout) int64_t *at_ms {
  zval o;
  ZVAL_LONG(&o, (zend_long)*$1);
  SWIG_Php_AppendOutput($result, &o, 0);
}

/* Indexes and counts: ints of 0 or more. */
%typemap(in, phptype="int") size_t start, size_t i {
  if (Z_TYPE($input) != IS_LONG) {
    zend_type_error("$symname(): argument $$1_name must be of type int, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  if (Z_LVAL($input) < 0) {
    zend_value_error("$symname(): argument $$1_name must be 0 or more");
    SWIG_fail;
  }
  $1 = (size_t)Z_LVAL($input);
}
%typemap(out, phptype="int") size_t %{ RETVAL_LONG((zend_long)$1); %}

/* Ids of waiters and kept locks: ints from 1. */
%typemap(in, phptype="int") uint64_t id {
  if (Z_TYPE($input) != IS_LONG) {
    zend_type_error("$symname(): argument $$1_name must be of type int, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  if (Z_LVAL($input) < 1) {
    zend_value_error("$symname(): argument $$1_name must be 1 or more");
    SWIG_fail;
  }
  $1 = (uint64_t)Z_LVAL($input);
}
%typemap(out, phptype="int") uint64_t redlock_waiters_next, uint64_t redlock_keeper_next_lost,
                             uint64_t redlock_keeper_next_ended
%{ RETVAL_LONG((zend_long)$1); %}

/* redlock_conn_output and redlock_waiters_output return the bytes to write
 * ("" when none). */
%typemap(in, numinputs=0) const char **bytes (const char *temp = NULL) %{ $1 = ($1_ltype)&temp; %}
%typemap(out, phptype="string") size_t redlock_conn_output
%{ RETVAL_STRINGL(temp2 ? temp2 : "", (size_t)$1); %}
%typemap(out, phptype="string") size_t redlock_waiters_output
%{ RETVAL_STRINGL(temp3 ? temp3 : "", (size_t)$1); %}

/* What was read, as a PHP string (any byte). */
%typemap(in, phptype="string") (const char *bytes, size_t len) {
  if (Z_TYPE($input) != IS_STRING) {
    zend_type_error("$symname(): argument $$1_name must be of type string, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  $1 = ($1_ltype)Z_STRVAL($input);
  $2 = Z_STRLEN($input);
}

/* How many bytes were written: an int of 0 or more. */
%typemap(in, phptype="int") size_t n {
  if (Z_TYPE($input) != IS_LONG) {
    zend_type_error("$symname(): argument $$1_name must be of type int, %s given",
                    zend_zval_type_name(&$input));
    SWIG_fail;
  }
  if (Z_LVAL($input) < 0) {
    zend_value_error("$symname(): argument $$1_name must be 0 or more");
    SWIG_fail;
  }
  $1 = (size_t)Z_LVAL($input);
}

%include "redlock_engine.h"

/* The driver's calls on every reply, one call from PHP each instead of
 * three (as lua.i's):
 *   redlock_php_conn_reading(c): how many replies c still owes; 0 once broken.
 *   redlock_php_conn_feed(c, bytes, now): feeds what was read, then the
 *     same, or -1 when the connection broke. */
%inline %{
static long long redlock_php_conn_reading(const redlock_conn *c)
{
  return redlock_conn_broken(c) ? 0 : (long long)redlock_conn_owed(c);
}

static long long redlock_php_conn_feed(redlock_conn *c, const char *bytes, size_t len,
                                       int64_t now_ms)
{
  if (redlock_conn_received(c, bytes, len, now_ms) != REDLOCK_OK || redlock_conn_broken(c)) {
    return -1;
  }
  return (long long)redlock_conn_owed(c);
}
%}
