/*
 * swig/redlock.i - the part of the SWIG interface every language shares.
 *
 * A language file (swig/<lang>.i) declares its %module, its typemaps for the
 * output parameters, the string arrays and the status codes, and then
 * %includes this file. Nothing here is language-specific.
 */

%{
#include "redlock.h"
%}

/* The export macro is for the C compiler only. */
#define REDLOCK_API

/* Opaque handles: no constructors or destructors are generated; the
 * hand-written layer owns them through redlock_*_free. */
%nodefaultctor redlock_ctx;
%nodefaultdtor redlock_ctx;
%nodefaultctor redlock_handle;
%nodefaultdtor redlock_handle;

%include <stdint.i>
%include <typemaps.i>

/* The answers of the queries (redlock_inspect, redlock_inspect_multi,
 * redlock_force_unlock, and the engine's redlock_op_answer), the fence
 * (redlock_handle_fence), the holds left (redlock_handle_leave) and a
 * checked argument (redlock_arg_check) come back as extra return values (a language file that defines
 * REDLOCK_INT64_OUTPUTS has its own typemaps for the 64-bit ones). */
%apply int *OUTPUT { int *locked, int *deleted, int *answered, int *left };
#ifndef REDLOCK_INT64_OUTPUTS
%apply long long *OUTPUT { int64_t *ttl_ms, int64_t *fence, int64_t *out };
#endif

/* A function pointer is no use to a script: each language file installs its
 * own interrupt check in C (Python: pending signals; Java: Thread.interrupt). */
%ignore redlock_set_interrupt_check;
/* Likewise the callbacks of the asynchronous calls and of lost locks: Java
 * has its own glue (java.i); Python's asyncio and OpenResty drive the engine
 * themselves. */
%ignore redlock_lock_async;
%ignore redlock_extend_async;
%ignore redlock_unlock_async;
%ignore redlock_lock_rw_async;
%ignore redlock_acquire_permit_async;
%ignore redlock_lock_fair_async;
%ignore redlock_done_fn;
%ignore redlock_handle_watch;
%ignore redlock_lost_fn;
/* The event hook too: each language file installs its own, which hands the
 * events to the language's logging (Python logging, System.Logger, a queue
 * that Lua reads). */
%ignore redlock_ctx_set_log;
%ignore redlock_log_fn;

/* The health of the nodes as one string (redlock_swig_health below; NULL,
 * that is None, nil or null, only when out of memory). */
%ignore redlock_ctx_health;
%newobject redlock_swig_health;
%{
#include <stdlib.h>

static char *redlock_swig_health(const redlock_ctx *ctx)
{
    size_t len = (size_t)REDLOCK_MAX_NODES * REDLOCK_HEALTH_LINE_MAX;
    char *text = (char *)malloc(len);
    if (text != NULL && redlock_ctx_health(ctx, text, len) != REDLOCK_OK) {
        free(text);
        text = NULL;
    }
    return text;
}
%}
char *redlock_swig_health(const redlock_ctx *ctx);

%include "redlock.h"
