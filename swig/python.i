/*
 * swig/python.i - the raw Python module `redlock.capi`.
 *
 * It mirrors the C API, made safe to call from Python:
 *   - a function that returns a status returns None, or its output parameter
 *     (the new ctx or handle) when it has one, and raises on a negative status
 *     the exception that redlock.errors maps the code to, with the calling
 *     thread's redlock_errmsg() as its message;
 *   - lists of strings come from any sequence of str;
 *   - None for a ctx or handle, a string that is not str, or one holding a
 *     NUL character raises TypeError or ValueError instead of reaching C;
 *   - the GIL is released while the C function runs (threads="1"), so other
 *     Python threads go on while a call waits for the nodes.
 * Pointers come back unowned; the package (redlock/client.py) frees them.
 * The module keeps to CPython's limited API of 3.10 (Py_LIMITED_API, set by
 * bindings/python/CMakeLists.txt; SWIG 4.2 or later): no buffer protocol,
 * no look inside a type object, so that one module serves every CPython
 * from 3.10 on (the stable ABI).
 */
%module(package="redlock", threads="1") capi

/* SWIG defines the entry point without declaring it first. */
%header %{
SWIGEXPORT PyObject *PyInit__capi(void);
%}

%{
#include "redlock.h"

/* Adds an output parameter to the result: the first replaces the None that
 * a status's typemap left there. SWIG 4.3 gave SWIG_Python_AppendOutput the
 * flag that asks for that replacement, and its own OUTPUT typemaps (int
 * *OUTPUT, ...) pass 0 for a function that returns int: a status, which
 * returns None here. Forcing the flag to 1 (as SWIG's maintainers advise,
 * swig/swig#3084) keeps the None out: (locked, ttl), not [None, locked, ttl].
 * The macro names itself, which the preprocessor does not expand again. */
#if SWIG_VERSION >= 0x040300
#define SWIG_Python_AppendOutput(result, obj, is_void) SWIG_Python_AppendOutput(result, obj, 1)
#define redlock_py_append(result, obj) SWIG_Python_AppendOutput(result, obj, 1)
#else
#define redlock_py_append(result, obj) SWIG_Python_AppendOutput(result, obj)
#endif

/* The exception redlock.errors.error_for() builds for a status code and its
 * detail (a new reference), or NULL with the failure set. */
static PyObject *redlock_py_error(int code, const char *detail)
{
  PyObject *errors, *exc;

  errors = PyImport_ImportModule("redlock.errors");
  if (errors == NULL) {
    return NULL;
  }
  exc = PyObject_CallMethod(errors, "error_for", "iN", code,
                            PyUnicode_DecodeUTF8(detail, (Py_ssize_t)strlen(detail), "replace"));
  Py_DECREF(errors);
  return exc;
}

/* Raises that exception, with the detail of this thread's last failure. */
/* The size of the bytes argument of the call being wrapped, for the check
 * of its len argument (the wrappers run under the GIL, one at a time). */
static Py_ssize_t redlock_py_bytes_size;

static void redlock_py_raise(int code)
{
  PyObject *exc = redlock_py_error(code, redlock_errmsg());

  if (exc != NULL) {
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
  }
}

/* The interrupt check of lock calls (redlock_set_interrupt_check): runs the
 * pending signal handlers, as Python does between bytecodes, so that Ctrl-C
 * ends a long wait. A handler that raises (KeyboardInterrupt) cancels the
 * call; its exception stays set and is raised when the call returns. */
static PyObject *redlock_py_closing_ctxs;

static int redlock_py_interrupt(void *data)
{
  PyGILState_STATE gil;
  int stop;

  gil = PyGILState_Ensure();
  stop = PyErr_CheckSignals() != 0;
  if (!stop && redlock_py_closing_ctxs != NULL) {
    PyObject *key = PyLong_FromVoidPtr(data);
    stop = key != NULL && PySet_Contains(redlock_py_closing_ctxs, key) == 1;
    Py_XDECREF(key);
    PyErr_Clear();
  }
  PyGILState_Release(gil);
  return stop;
}

/* Marks ctx's client closing (1) or forgets it (0, once the ctx is freed):
 * while marked, its waits for a lock end at the interrupt check's next look
 * (REDLOCK_ECANCELED, within 100 ms), so that close() never waits for a
 * wait without end. The set of addresses is read and written under the GIL. */
static void redlock_py_closing(redlock_ctx *ctx, int closing)
{
  PyGILState_STATE gil = PyGILState_Ensure(); /* the wrapper released it */
  PyObject *key;

  if (redlock_py_closing_ctxs == NULL) {
    redlock_py_closing_ctxs = PySet_New(NULL);
  }
  key = redlock_py_closing_ctxs != NULL ? PyLong_FromVoidPtr(ctx) : NULL;
  if (key != NULL) {
    if (closing) {
      PySet_Add(redlock_py_closing_ctxs, key);
    } else {
      PySet_Discard(redlock_py_closing_ctxs, key);
    }
    Py_DECREF(key);
  }
  PyErr_Clear();
  PyGILState_Release(gil);
}

/* The UTF-8 text of a str, or NULL with TypeError or ValueError set. The
 * text belongs to the str object. */
static const char *redlock_py_text(PyObject *obj, const char *what)
{
  const char *text;
  Py_ssize_t len;

  if (!PyUnicode_Check(obj)) {
    /* The type's name from its __name__: the limited API hides tp_name. */
    PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(obj), "__name__");
    if (name != NULL) {
      PyErr_Format(PyExc_TypeError, "%s must be str, not %.100U", what, name);
      Py_DECREF(name);
    }
    return NULL;
  }
  text = PyUnicode_AsUTF8AndSize(obj, &len);
  if (text != NULL && strlen(text) != (size_t)len) {
    PyErr_Format(PyExc_ValueError, "%s must not contain a NUL character", what);
    return NULL;
  }
  return text;
}
%}

/* Waits for a lock (plain, multi, read-write or fair) or a permit run with the
 * interrupt check above, given their ctx (the second argument of each). */
%define REDLOCK_PY_INTERRUPTIBLE(function)
%exception function {
  redlock_set_interrupt_check(redlock_py_interrupt, (void *)arg2);
  $action
  redlock_set_interrupt_check(NULL, NULL);
}
%enddef
REDLOCK_PY_INTERRUPTIBLE(redlock_lock)
REDLOCK_PY_INTERRUPTIBLE(redlock_lock_multi)
REDLOCK_PY_INTERRUPTIBLE(redlock_lock_rw)
REDLOCK_PY_INTERRUPTIBLE(redlock_acquire_permit)
REDLOCK_PY_INTERRUPTIBLE(redlock_lock_fair)
void redlock_py_closing(redlock_ctx *ctx, int closing);

/* Every function returning a status: raise on failure, else return None. A
 * wait cancelled by a signal handler raises what the handler raised. */
%typemap(out) int redlock_ctx_new, int redlock_ctx_set_option, int redlock_lock,
              int redlock_lock_multi, int redlock_lock_rw, int redlock_lock_fair,
              int redlock_acquire_permit, int redlock_extend, int redlock_unlock,
              int redlock_inspect, int redlock_force_unlock, int redlock_handle_fence,
              int redlock_ctx_ping, int redlock_inspect_multi, int redlock_handle_reenter,
              int redlock_handle_leave, int redlock_permits_available {
  if ($1 < 0) {
    if ($1 != REDLOCK_ECANCELED || !PyErr_Occurred())
      redlock_py_raise($1);
    SWIG_fail;
  }
  $result = SWIG_Py_Void();
}

/* redlock_ctx_get_option returns the value as str, and so do the other
 * calls that write text into a buffer (1.3: a health field, an option's
 * default, a URI of a list); redlock_arg_check the checked value. */
%typemap(in, numinputs=0) (char *buf, size_t buflen) (char temp[4200]) %{
  $1 = temp;
  $2 = sizeof(temp);
%}
%typemap(out) int redlock_ctx_get_option, int redlock_health_value, int redlock_option_default,
              int redlock_uri_list_item, int redlock_arg_check {
  if ($1 < 0) {
    redlock_py_raise($1);
    SWIG_fail;
  }
  $result = SWIG_Py_Void();
}
%typemap(argout) (char *buf, size_t buflen) %{
  $result = redlock_py_append($result, PyUnicode_DecodeUTF8($1, (Py_ssize_t)strlen($1), "replace"));
%}

/* The calls of 1.3 are quick and pure: they keep the GIL. */
%nothread redlock_arg_check;
%nothread redlock_health_field;
%nothread redlock_health_nodes;
%nothread redlock_health_type;
%nothread redlock_health_value;
%nothread redlock_option_count;
%nothread redlock_option_name;
%nothread redlock_option_type;
%nothread redlock_option_default;
%nothread redlock_uri_list_count;
%nothread redlock_uri_list_item;

/* A type (REDLOCK_TYPE_*) is returned as an int; a failure raises. */
%typemap(out) int redlock_health_type, int redlock_option_type {
  if ($1 < 0) {
    redlock_py_raise($1);
    SWIG_fail;
  }
  $result = PyLong_FromLong((long)$1);
}

/* Output parameters become the return value. */
%typemap(in, numinputs=0) redlock_ctx **out (redlock_ctx *temp = NULL),
                          redlock_handle **out (redlock_handle *temp = NULL)
%{ $1 = &temp; %}

%typemap(argout) redlock_ctx **out, redlock_handle **out
%{ $result = redlock_py_append($result, SWIG_NewPointerObj(*$1, $*descriptor, 0)); %}

/* Strings: str only, without NUL. */
%typemap(in) const char * %{
  $1 = ($1_ltype)redlock_py_text($input, "$symname: $1_name");
  if ($1 == NULL) {
    SWIG_fail;
  }
%}
%typemap(freearg) const char * ""

/* A list of strings from a sequence of str. The sequence is copied into a
 * tuple first: the tuple keeps every str alive while the GIL is released,
 * even if another thread changes the caller's list meanwhile. */
%typemap(in) (const char *const *node_uris, size_t n_nodes) (PyObject *items = NULL),
             (const char *const *resources, size_t n_resources) (PyObject *items = NULL) {
  Py_ssize_t i, n;
  const char **texts;

  if (PyUnicode_Check($input) || PyBytes_Check($input)) {
    PyErr_SetString(PyExc_TypeError, "$symname: $1_name must be a sequence of str, not a string");
    SWIG_fail;
  }
  items = PySequence_Tuple($input);
  if (items == NULL) {
    SWIG_fail;
  }
  n = PyTuple_Size(items);
  texts = (const char **)PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(*texts));
  if (texts == NULL) {
    PyErr_NoMemory();
    SWIG_fail;
  }
  $1 = ($1_ltype)texts;
  $2 = (size_t)n;
  for (i = 0; i < n; i++) {
    texts[i] = redlock_py_text(PyTuple_GetItem(items, i), "$symname: every item of $1_name");
    if (texts[i] == NULL) {
      SWIG_fail;
    }
  }
}
%typemap(freearg) (const char *const *node_uris, size_t n_nodes),
                  (const char *const *resources, size_t n_resources) %{
  PyMem_Free((void *)$1);
  Py_XDECREF(items$argnum);
%}

/* The calls that need a ctx or a handle refuse None. */
%typemap(check) redlock_ctx *ctx, const redlock_ctx *ctx, redlock_handle *h %{
  if ($1 == NULL) {
    PyErr_SetString(PyExc_TypeError, "$symname: $1_name must not be None");
    SWIG_fail;
  }
%}

/* ---- Kept locks: redlock_handle_watch with a Python dispatch ----
 *
 * redlock_py_watch(h, id) watches h; when it is lost, the client's thread
 * takes the GIL and calls redlock.client._lost(id, status, message). An id,
 * not a Python object, crosses into C: a loss reported after the Python side
 * let go of the lock finds no id, and nothing is freed twice. */
%{
static void redlock_py_lost(void *data, redlock_handle *h, int status, const char *message)
{
  PyGILState_STATE gil;
  PyObject *client, *result = NULL;

  (void)h;
  if (message == NULL) {
    message = "";
  }
  gil = PyGILState_Ensure();
  client = PyImport_ImportModule("redlock.client");
  if (client != NULL) {
    result = PyObject_CallMethod(client, "_lost", "KiN", (unsigned long long)(uintptr_t)data,
                                 status,
                                 PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message),
                                                      "replace"));
    Py_DECREF(client);
  }
  if (result == NULL) {
    PyErr_WriteUnraisable(NULL);
  }
  Py_XDECREF(result);
  PyGILState_Release(gil);
}

static int redlock_py_watch(redlock_handle *h, unsigned long long id)
{
  return redlock_handle_watch(h, redlock_py_lost, (void *)(uintptr_t)id);
}
%}
%typemap(out) int redlock_py_watch {
  if ($1 < 0) {
    redlock_py_raise($1);
    SWIG_fail;
  }
  $result = SWIG_Py_Void();
}
int redlock_py_watch(redlock_handle *h, unsigned long long id);

/* ---- The release of the sync client, in one call ----
 *
 * redlock_py_release(h, quiet) unlocks h and frees it, with the GIL released
 * once for both: it returns (lost, error), lost whether h was lost
 * (redlock_handle_lost after the unlock), error None or, unless quiet, the
 * exception of the unlock's failure, which the caller raises (h is freed
 * either way). The failure's detail is copied before the free. */
%{
static int redlock_py_release(redlock_handle *h, int quiet, int *lost, char *why, size_t whylen)
{
  int rc = redlock_unlock(h);

  *lost = redlock_handle_lost(h);
  if (rc < 0 && !quiet) {
    snprintf(why, whylen, "%s", redlock_errmsg());
  }
  redlock_handle_free(h);
  return quiet ? REDLOCK_OK : rc;
}
%}
%typemap(in, numinputs=0) int *lost (int temp = 0) %{ $1 = &temp; %}
/* The library keeps at most 1024 bytes of a failure's detail. */
%typemap(in, numinputs=0) (char *why, size_t whylen) (char temp[1024]) %{
  temp[0] = '\0';
  $1 = temp;
  $2 = sizeof(temp);
%}
%typemap(out) int redlock_py_release {
  PyObject *error = $1 < 0 ? redlock_py_error($1, arg4) : Py_None;

  if (error == NULL) {
    SWIG_fail;
  }
  if (error == Py_None) {
    Py_INCREF(error);
  }
  $result = Py_BuildValue("(NN)", PyBool_FromLong(*arg3), error);
}
int redlock_py_release(redlock_handle *h, int quiet, int *lost, char *why, size_t whylen);

/* ---- Events: redlock_ctx_set_log with a Python dispatch ----
 *
 * redlock_py_set_log(ctx, min_level) sends ctx's events of min_level and
 * above to redlock.client._log(level, event, message), which hands them to
 * logging.getLogger("redlock"). The hook runs on whichever thread emits the
 * event (the caller's, with the GIL released around the blocking call; the
 * client's C thread; the loop's, inside an engine call that keeps the
 * GIL): it takes the GIL, and never calls back into the client. */
%{
static void redlock_py_log(void *data, int level, const char *event, const char *message)
{
  PyGILState_STATE gil;
  PyObject *client, *result = NULL;

  (void)data;
  if (!Py_IsInitialized()) {
    return;
  }
  gil = PyGILState_Ensure();
  client = PyImport_ImportModule("redlock.client");
  if (client != NULL) {
    result = PyObject_CallMethod(client, "_log", "iNN", level,
                                 PyUnicode_DecodeUTF8(event, (Py_ssize_t)strlen(event), "replace"),
                                 PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message),
                                                      "replace"));
    Py_DECREF(client);
  }
  if (result == NULL) {
    PyErr_WriteUnraisable(NULL);
  }
  Py_XDECREF(result);
  PyGILState_Release(gil);
}

static void redlock_py_set_log(redlock_ctx *ctx, int min_level)
{
  redlock_ctx_set_log(ctx, redlock_py_log, min_level, NULL);
}
%}
void redlock_py_set_log(redlock_ctx *ctx, int min_level);

/* redlock_permits_available returns the permits free. */
%include <typemaps.i>
%apply int *OUTPUT { int *available };

%include "redlock.i"

/* ---- The engine (redlock_engine.h, experimental), for redlock.asyncio ----
 *
 * Its calls are short and never wait, so they keep the GIL. An operation's
 * constructor returns the operation or raises; the connection's bytes go
 * out as bytes and come in from any bytes-like object. redlock_op_drive
 * returns (bits, at_ms) and redlock_op_connect a connection or None; the
 * TLS settings (redlock_ctx_tls_*) are str or None, redlock_ctx_tls_check a
 * status that does not raise (the driver makes it its connects' failure).
 * The keeper's ids are ints: redlock_keeper_drive returns (bits, at_ms),
 * redlock_keeper_take_op an operation or None, redlock_keeper_remove 0 or
 * 1 (a renewal under way). */
%{
#include "redlock_engine.h"
%}
%nodefaultctor redlock_op;
%nodefaultdtor redlock_op;
%nodefaultctor redlock_conn;
%nodefaultdtor redlock_conn;
%nodefaultctor redlock_waiters;
%nodefaultdtor redlock_waiters;
%nodefaultctor redlock_keeper;
%nodefaultdtor redlock_keeper;
%apply long long *OUTPUT { int64_t *at_ms };

%typemap(in, numinputs=0) redlock_op **out (redlock_op *temp = NULL),
                          redlock_conn **out (redlock_conn *temp = NULL),
                          redlock_waiters **out (redlock_waiters *temp = NULL),
                          redlock_keeper **out (redlock_keeper *temp = NULL)
%{ $1 = &temp; %}
%typemap(argout) redlock_op **out, redlock_conn **out, redlock_waiters **out,
                 redlock_keeper **out
%{ $result = redlock_py_append($result, SWIG_NewPointerObj(*$1, $*descriptor, 0)); %}

%typemap(out) int redlock_op_lock, int redlock_op_lock_rw, int redlock_op_lock_fair,
              int redlock_op_acquire_permit, int redlock_op_extend, int redlock_op_unlock,
              int redlock_op_deliver, int redlock_op_inspect, int redlock_op_force_unlock,
              int redlock_op_permits, int redlock_op_ping, int redlock_conn_new,
              int redlock_waiters_new,
              int redlock_keeper_new, int redlock_keeper_add, int redlock_keeper_op_ended,
              int redlock_keeper_extend {
  if ($1 < 0) {
    redlock_py_raise($1);
    SWIG_fail;
  }
  $result = SWIG_Py_Void();
}

/* redlock_keeper_remove returns 0 or 1 (a renewal under way), or raises. */
%typemap(out) int redlock_keeper_remove {
  if ($1 < 0) {
    redlock_py_raise($1);
    SWIG_fail;
  }
  $result = PyLong_FromLong($1);
}

/* redlock_conn_output and redlock_waiters_output return the bytes to write
 * (b"" when none). */
%typemap(in, numinputs=0) const char **bytes (const char *temp = NULL) %{ $1 = ($1_ltype)&temp; %}
%typemap(out) size_t redlock_conn_output
%{ $result = PyBytes_FromStringAndSize(temp2, (Py_ssize_t)$1); %}
%typemap(out) size_t redlock_waiters_output
%{ $result = PyBytes_FromStringAndSize(temp3, (Py_ssize_t)$1); %}

/* redlock_conn_received and redlock_waiters_received take what was read as a
 * bytes or bytearray object followed by the count of its first bytes to
 * take: redlock_conn_received(conn, buffer, nbytes, now). The limited API of
 * 3.10 has no buffer protocol (no memoryview), so the asyncio driver hands
 * over the bytearray it reads into, whole. The check of len names bytes'
 * size by its argument number (2), as redlock_conn_output's typemap does. */
%typemap(in) const char *bytes {
  char *data = NULL;
  Py_ssize_t size = 0;

  if (PyByteArray_Check($input)) {
    data = PyByteArray_AsString($input);
    size = PyByteArray_Size($input);
  } else if (!PyBytes_Check($input)) {
    PyErr_SetString(PyExc_TypeError, "$symname: $1_name must be bytes or bytearray");
    SWIG_fail;
  } else if (PyBytes_AsStringAndSize($input, &data, &size) != 0) {
    SWIG_fail;
  }
  $1 = ($1_ltype)data;
  redlock_py_bytes_size = size;
}
%typemap(check) size_t len %{
  if ($1 > (size_t)redlock_py_bytes_size) {
    PyErr_SetString(PyExc_ValueError, "$symname: $1_name is beyond the end of bytes");
    SWIG_fail;
  }
%}

%typemap(check) redlock_op *op, const redlock_op *op, redlock_conn *c, const redlock_conn *c,
                redlock_waiters *w,
                const redlock_waiters *w, redlock_keeper *k, const redlock_keeper *k %{
  if ($1 == NULL) {
    PyErr_SetString(PyExc_TypeError, "$symname: $1_name must not be None");
    SWIG_fail;
  }
%}

/* ---- The sockets of redlock.asyncio's plain connections ----
 *
 * A connection without TLS is a non-blocking socket of the driver's, watched
 * by the loop (add_reader, add_writer), whose bytes move here in one call
 * each way, without a Python object per read or write:
 *   redlock_py_conn_read(c, fd, now) reads what the socket holds and feeds
 *     it to c: REDLOCK_PY_READ (fed), REDLOCK_PY_BROKEN (c broke on it:
 *     redlock_conn_received), REDLOCK_PY_NOTHING (nothing to read), REDLOCK_PY_EOF
 *     (the node closed it), or -errno when reading failed;
 *   redlock_py_conn_send(c, fd) writes what c has to send, and reports it:
 *     0 (all written), 1 (the socket is full: the rest when writable), or
 *     -errno when writing failed. */
%{
#include <errno.h>
#include <sys/socket.h>

#ifndef MSG_NOSIGNAL
#define MSG_NOSIGNAL 0   /* Python ignores SIGPIPE */
#endif

#define REDLOCK_PY_READ 0
#define REDLOCK_PY_BROKEN 1
#define REDLOCK_PY_NOTHING 2
#define REDLOCK_PY_EOF 3

static int redlock_py_conn_read(redlock_conn *c, int fd, int64_t now)
{
  char buf[16384];
  int fed = 0;

  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      fed = 1;
      if (redlock_conn_received(c, buf, (size_t)n, now) != 0) {
        return REDLOCK_PY_BROKEN;
      }
      if ((size_t)n < sizeof buf) {
        return REDLOCK_PY_READ;
      }
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (fed) {
      return REDLOCK_PY_READ;   /* the end or the failure, at the next read */
    } else if (n == 0) {
      return REDLOCK_PY_EOF;
    } else {
      return errno == EAGAIN || errno == EWOULDBLOCK ? REDLOCK_PY_NOTHING : -errno;
    }
  }
}

static int redlock_py_conn_send(redlock_conn *c, int fd)
{
  for (;;) {
    const char *bytes;
    size_t len = redlock_conn_output(c, &bytes);
    ssize_t n;

    if (len == 0) {
      return 0;
    }
    n = send(fd, bytes, len, MSG_NOSIGNAL);
    if (n > 0) {
      redlock_conn_wrote(c, (size_t)n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return 1;
    } else {
      return n < 0 ? -errno : -EPIPE;
    }
  }
}
%}

/* redlock_py_op_conns(op) takes back an operation's connections at once
 * (redlock_op_take_conn): a list of their addresses, as int() of each
 * gives it, negated for a connection that may not serve again (not
 * redlock_conn_poolable). */
%{
static PyObject *redlock_py_op_conns(redlock_op *op)
{
  PyObject *addresses = PyList_New(0);
  redlock_conn *c;

  while (addresses != NULL && (c = redlock_op_take_conn(op)) != NULL) {
    PyObject *address = redlock_conn_poolable(c)
                        ? PyLong_FromVoidPtr(c)
                        : PyLong_FromLongLong(-(long long)(uintptr_t)c);
    if (address == NULL || PyList_Append(addresses, address) != 0) {
      Py_CLEAR(addresses);
    }
    Py_XDECREF(address);
  }
  return addresses;
}
%}

/* redlock_py_op_reuse(op, node, c, now) offers op the idle connection c to
 * node, the engine's calls in one: REDLOCK_PY_ATTACHED (it fits: attached),
 * REDLOCK_PY_IDLE (it does not fit op's command: it stays idle),
 * REDLOCK_PY_FRESH (the node wants a new connection), REDLOCK_PY_BROKEN (c
 * broke: dropped) or REDLOCK_PY_MOVED (no longer poolable: a Sentinel
 * node's master moved; closed). */
%{
#define REDLOCK_PY_ATTACHED 0
#define REDLOCK_PY_IDLE 2
#define REDLOCK_PY_FRESH 3
#define REDLOCK_PY_MOVED 4

static int redlock_py_op_reuse(redlock_op *op, size_t node, redlock_conn *c, int64_t now)
{
  if (redlock_op_wants_fresh(op, node)) {
    return REDLOCK_PY_FRESH;
  }
  if (redlock_conn_broken(c)) {
    return REDLOCK_PY_BROKEN;
  }
  if (!redlock_conn_poolable(c)) {
    return REDLOCK_PY_MOVED;
  }
  if (!redlock_op_fits(op, node, c)) {
    return REDLOCK_PY_IDLE;
  }
  redlock_op_attach(op, node, c, now);
  return REDLOCK_PY_ATTACHED;
}
%}

%nothread;
%include "redlock_engine.h"
#define REDLOCK_PY_ATTACHED 0
#define REDLOCK_PY_IDLE 2
#define REDLOCK_PY_FRESH 3
#define REDLOCK_PY_MOVED 4
#define REDLOCK_PY_READ 0
#define REDLOCK_PY_BROKEN 1
#define REDLOCK_PY_NOTHING 2
#define REDLOCK_PY_EOF 3
int redlock_py_conn_read(redlock_conn *c, int fd, int64_t now);
int redlock_py_conn_send(redlock_conn *c, int fd);
PyObject *redlock_py_op_conns(redlock_op *op);
int redlock_py_op_reuse(redlock_op *op, size_t node, redlock_conn *c, int64_t now);
%clearnothread;
