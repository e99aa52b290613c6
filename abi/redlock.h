/*
 * redlock.h - distributed locks over N independent Redis masters (Redlock).
 *
 * This is the whole public API of libredlock. Everything not declared here is
 * internal and may change at any time.
 *
 * Conventions
 *   - Functions that can fail return an int status: REDLOCK_OK (0) or one of
 *     the negative REDLOCK_E* codes below. Published values never change.
 *   - Output parameters come first and are named `out`. On failure *out is set
 *     to NULL.
 *   - Times are int64_t milliseconds. Strings are NUL-terminated UTF-8 (or any
 *     bytes without NUL). Arrays are a pointer plus a count.
 *   - Every type has a _free function that accepts NULL.
 *   - No varargs, no structs by value, no macros needed to call anything: the
 *     API can be called from any FFI (ctypes, LuaJIT ffi, Java FFM).
 *
 * Threads
 *   - redlock_ctx: may be shared by any number of threads once configured.
 *     redlock_lock, redlock_lock_multi, redlock_extend and redlock_unlock may
 *     run concurrently on one ctx; each node keeps a pool of connections, so
 *     calls do not wait for each other. redlock_ctx_set_option must not run
 *     concurrently with other calls on the same ctx: set options first, then
 *     share the ctx. redlock_ctx_free must be the last call on a ctx, after
 *     every handle made from it has been freed.
 *   - redlock_handle: belongs to one thread at a time. It may be passed to
 *     another thread, but two threads must not call functions on the same
 *     handle at once.
 *   - Error detail (redlock_errmsg) is kept per thread.
 */
#ifndef REDLOCK_H
#define REDLOCK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this header. redlock_version_number() returns the library's;
 * a program may compare the two to catch a header/library mismatch. */
#define REDLOCK_VERSION_MAJOR 1
#define REDLOCK_VERSION_MINOR 3
#define REDLOCK_VERSION_PATCH 0
#define REDLOCK_VERSION_STRING "1.3.0"
#define REDLOCK_VERSION_NUMBER \
    (REDLOCK_VERSION_MAJOR * 10000 + REDLOCK_VERSION_MINOR * 100 + REDLOCK_VERSION_PATCH)

#ifndef REDLOCK_API
#  if defined(REDLOCK_BUILDING_LIBRARY) && defined(__GNUC__)
#    define REDLOCK_API __attribute__((visibility("default")))
#  else
#    define REDLOCK_API
#  endif
#endif

/* Status codes. New codes are appended; values never change. */
#define REDLOCK_OK            0   /* success */
#define REDLOCK_ELOCKED      -1   /* the resource is held by someone else */
#define REDLOCK_ENOQUORUM    -2   /* too few nodes answered to decide */
#define REDLOCK_ENOTHELD     -3   /* not held: expired, lost or already released */
#define REDLOCK_EINVAL       -4   /* invalid argument */
#define REDLOCK_ENOMEM       -5   /* out of memory */
#define REDLOCK_EEXPIRED     -6   /* the lease ran out: while acquiring, or before a renewal */
#define REDLOCK_EUNSUPPORTED -7   /* not supported by this build, the system or the nodes
                                     (TLS: no OpenSSL 3; scripts where too many run none) */
#define REDLOCK_EAUTH        -8   /* a node refused the credentials */
#define REDLOCK_EWRONGTYPE   -9   /* the key exists and is not a lock (wrong Redis type) */
#define REDLOCK_EREDIS       -10  /* nodes answered with a Redis error (READONLY, OOM, ...) */
#define REDLOCK_ESYSTEM      -11  /* an operating system call failed (random source, poll) */
#define REDLOCK_ECANCELED    -12  /* the wait was cancelled by the interrupt check (1.1) */
#define REDLOCK_ETLS         -13  /* a TLS handshake or certificate check failed (1.2) */
#define REDLOCK_ENOPERM      -14  /* a node's ACL does not allow a command or key the library
                                   * uses (a NOPERM reply; 1.2) */

/* Limits on arguments; larger values are rejected with REDLOCK_EINVAL. */
#define REDLOCK_MAX_NODES        64
#define REDLOCK_MAX_RESOURCES    100000
#define REDLOCK_MAX_NAME_BYTES   4096       /* a resource name, key_prefix included */
#define REDLOCK_MAX_TTL_MS       2147483647 /* about 24.8 days */
#define REDLOCK_MAX_PERMITS      10000      /* a semaphore's permits (1.2) */

/* A client: the nodes, their connections and the options. Thread-safe (above). */
typedef struct redlock_ctx redlock_ctx;

/* One acquired lock (one resource, or several taken together). One thread at a time. */
typedef struct redlock_handle redlock_handle;

/*
 * Makes a client for n_nodes independent Redis masters. Connections are made
 * lazily, on first use, so this does no network I/O; unreachable nodes are
 * reported by the lock calls. Node URIs:
 *     redis://[[user]:password@]host[:port][/db]      (port 6379, db 0 by default)
 *     rediss://[[user]:password@]host[:port][/db]     (the same over TLS, 1.2)
 *     unix://[[user]:password@]/path/to.sock[?db=N]
 *     redis-sentinel://[[user]:password@]host[:port][,host[:port]...][/db]?sentinelMasterId=NAME
 *     redis-sentinel://...#NAME, rediss-sentinel://... (over TLS)   (1.2)
 * A Sentinel URI is one node: the master its sentinels (port 26379 by
 * default) name now, followed through failovers; the user and password
 * are the master's (options sentinel_user, sentinel_password for the
 * sentinels). user and password may be percent-encoded. AUTH and SELECT are sent on
 * connect. rediss:// nodes are reached over TLS with the system's OpenSSL 3
 * (libssl.so.3, loaded on first use; without it their calls fail with
 * REDLOCK_EUNSUPPORTED), their certificates and names checked (the tls_*
 * options); a failed handshake or check is REDLOCK_ETLS. The same node
 * listed twice is REDLOCK_EINVAL: it would count twice towards the quorum.
 * Free the result with redlock_ctx_free.
 */
REDLOCK_API int redlock_ctx_new(redlock_ctx **out, const char *const *node_uris, size_t n_nodes);

/*
 * Sets an option by name, from its text value. Unknown names and bad values
 * are REDLOCK_EINVAL, and so is a tls_* option once the client has connected
 * to a rediss:// node (they are read then). Options (generated from
 * core/engine/options.def):
 * options:begin
 *     node_timeout_ms (default "50"; 1 to 600000)
 *         deadline for one node's reply, once connected
 *     connect_timeout_ms (default "100"; 1 to 600000)
 *         deadline for connecting to one node
 *     retry_delay_ms (default "200"; 0 to 3600000)
 *         pause between attempts while wait_ms lasts
 *     retry_jitter_ms (default "100"; 0 to 3600000)
 *         the pause varies by up to +- this much
 *     drift_factor (default "0.01"; 0 <= x < 1)
 *         clock drift allowance, a fraction of the lease
 *     key_prefix (default ""; at most 4095 bytes)
 *         prepended to every resource name
 *     pool_size (default "16"; 0 to 1024)
 *         idle connections kept per node
 *     restart_guard (default "1"; 0 or 1)
 *         1: a node that may have lost keys (this client saw a new run_id, or
 *         its guard says it was promoted or restarted with data) does not count
 *         towards a quorum until max_lease_ms has passed (a Sentinel group:
 *         max_lease_ms + sentinel_poll_ms); 0: off
 *     restart_records (default "1"; 0 or 1)
 *         1 (with restart_guard): each node records the group's servers (key
 *         redlock:members), so that a server restarted without its data is held
 *         back for max_lease_ms even by a client that never met it
 *         (docs/topology.md); every node must answer before a fresh group's
 *         first lock; 0: off
 *     load_functions (default "0"; 0 or 1)
 *         1: a node without this version's function library (Redis 7.0+) gets
 *         it loaded by this client, when its ACL allows FUNCTION LOAD; 0: the
 *         library is an administrator's to load (redlock --load-functions).
 *         Either way the scripts are called as functions where the library is,
 *         and sent as scripts elsewhere
 *     max_lease_ms (default "60000"; 1 to 2147483647)
 *         the longest lease any client of these nodes uses: a longer lease (or
 *         watchdog_lease_ms) is refused, and a node that may have lost keys
 *         (restarted, or a replica promoted) does not count towards a quorum
 *         until this long after
 *     sentinel_user (default ""; at most 255 bytes)
 *         redis-sentinel:// nodes: the ACL user for the sentinels (the URI's is
 *         the master's)
 *     sentinel_password (default ""; at most 4095 bytes)
 *         redis-sentinel:// nodes: the password for the sentinels, when they
 *         require AUTH; write-only (get_option refuses to read it back)
 *     sentinel_poll_ms (default "1000"; 0 to 3600000)
 *         redis-sentinel:// nodes: how often an operation asks a sentinel
 *         whether the master moved (besides READONLY, a replica's ROLE or a
 *         master gone), and a master no sentinel named for this long does not
 *         count for new locks; 0: never. A promoted master's guard lasts this
 *         much longer than max_lease_ms: use one value on every client of a
 *         group
 *     watchdog_lease_ms (default "30000"; 3 to 2147483647)
 *         the lease of a kept lock (no lease given), renewed every third of it;
 *         unless set, max_lease_ms when that is less than the default
 *     unavailable_timeout_ms (default "5000"; 0 to 2147483647)
 *         a wait for a lock ends with REDLOCK_ENOQUORUM once every attempt for
 *         this long failed for want of nodes answering (an outage, not
 *         contention; nodes the restart guard holds back are waited for); 0:
 *         never
 *     fencing (default "0"; 0 or 1)
 *         1: each acquisition gets a fencing token that increases across the
 *         quorum (a counter key per resource, kept without expiry); 0: off
 *     tls_ca_file (default ""; at most 4095 bytes)
 *         rediss:// nodes: a PEM file of the certificate authorities to trust;
 *         with tls_ca_dir empty too, the system's default ones
 *     tls_ca_dir (default ""; at most 4095 bytes)
 *         rediss:// nodes: a directory of CA certificates to trust, named by
 *         their hashes (openssl rehash)
 *     tls_cert_file (default ""; at most 4095 bytes)
 *         rediss:// nodes: this client's certificate (PEM, chain after it), for
 *         nodes that require one
 *     tls_key_file (default ""; at most 4095 bytes)
 *         rediss:// nodes: the private key of tls_cert_file (PEM, not
 *         encrypted); empty: in tls_cert_file
 *     tls_server_name (default ""; at most 255 bytes)
 *         rediss:// nodes: the name their certificates must carry, also sent as
 *         SNI; empty: each node's host
 *     tls_verify (default "1"; 0 or 1)
 *         rediss:// nodes: 1 checks their certificates and names; 0 turns the
 *         check off, which is INSECURE (anyone on the path can pose as a node)
 * options:end
 */
REDLOCK_API int redlock_ctx_set_option(redlock_ctx *ctx, const char *name, const char *value);

/* Closes every connection and frees the client. NULL is a no-op. It is the
 * last call on ctx (see Threads): unlock and free its handles first; the
 * bindings' close does so, and refuses every call after it (docs/locks.md,
 * "A closed client"). */
REDLOCK_API void redlock_ctx_free(redlock_ctx *ctx);

/*
 * Acquires `resource` for ttl_ms (the lease). With wait_ms 0 it makes one
 * attempt; otherwise it retries after random pauses until wait_ms has passed
 * (a wait_ms larger than any real wait, such as INT64_MAX / 4, waits until
 * acquired: it ends with REDLOCK_ENOQUORUM only when the nodes fail for
 * unavailable_timeout_ms). The bindings' defaults, the same everywhere and
 * Redisson's: lock() and the context managers (with_lock) with no wait wait
 * until acquired; tryLock() with no wait makes one attempt.
 * On success *out is a handle that the caller frees with redlock_handle_free.
 * Fails with REDLOCK_ELOCKED when someone else holds it, REDLOCK_ENOQUORUM when
 * too few nodes answered, REDLOCK_EEXPIRED when acquiring took the whole lease.
 */
REDLOCK_API int redlock_lock(redlock_handle **out, redlock_ctx *ctx, const char *resource,
                             int64_t ttl_ms, int64_t wait_ms);

/*
 * Acquires all n_resources together: on each node all of them or none (one
 * script call per node), and held only when a quorum of nodes granted all.
 * Names must be distinct. Unlock and extend cover every resource.
 */
REDLOCK_API int redlock_lock_multi(redlock_handle **out, redlock_ctx *ctx,
                                   const char *const *resources, size_t n_resources,
                                   int64_t ttl_ms, int64_t wait_ms);

/*
 * Renews the lease to ttl_ms from now, if the lock is still ours on a quorum
 * of nodes and time remains once drift is accounted for. REDLOCK_ENOTHELD when
 * it has expired, was lost or was released.
 */
REDLOCK_API int redlock_extend(redlock_handle *h, int64_t ttl_ms);

/*
 * Releases the lock on every node (a key is deleted only when it still holds
 * this handle's token). REDLOCK_OK when a quorum confirmed the release;
 * REDLOCK_ENOTHELD when the lock had already expired, been lost or been
 * released (the critical section may not have been exclusive). Either way the
 * handle is no longer held afterwards; it still must be freed.
 */
REDLOCK_API int redlock_unlock(redlock_handle *h);

/* Frees a handle. It does not contact the nodes: a lock still held is left to
 * expire at the end of its lease; call redlock_unlock first. NULL is a no-op. */
REDLOCK_API void redlock_handle_free(redlock_handle *h);

/* Milliseconds of validity left; <= 0 once expired, lost or released. 0 for NULL. */
REDLOCK_API int64_t redlock_handle_validity_ms(const redlock_handle *h);

/* The handle's random token (32 hex characters), owned by the handle and valid
 * until it is freed. NULL for NULL. */
REDLOCK_API const char *redlock_handle_token(const redlock_handle *h);

/* A static description of a status code. Never NULL. */
REDLOCK_API const char *redlock_strerror(int code);

/* Detail of the calling thread's last failure (which nodes, and why), valid
 * until the thread's next call into the library. "" when there is none. */
REDLOCK_API const char *redlock_errmsg(void);

/* The library's version: "1.3.0" and 10300. */
REDLOCK_API const char *redlock_version_string(void);
REDLOCK_API int redlock_version_number(void);

/* ---- Added in 1.1 (symbol version REDLOCK_1.1) ---- */

/*
 * Writes the current value of an option into buf (buflen bytes, NUL
 * included), in the text form redlock_ctx_set_option takes. REDLOCK_EINVAL
 * for an unknown name, or when buf is too small (the message says how much
 * is needed). A password is never read back: sentinel_password gives
 * REDLOCK_EINVAL and leaves buf alone (since 1.2).
 */
REDLOCK_API int redlock_ctx_get_option(const redlock_ctx *ctx, const char *name, char *buf,
                                       size_t buflen);

/*
 * A check that may cancel the calling thread's waits: while redlock_lock or
 * redlock_lock_multi waits (for the nodes, or between attempts), it calls
 * check(data) when a signal interrupted the wait and at least every 100 ms;
 * a non-zero return cancels the call, which releases whatever its attempt
 * had taken and fails with REDLOCK_ECANCELED. It is how a binding keeps a
 * long wait interruptible (Ctrl-C in Python, Thread.interrupt in Java).
 * Extend and unlock are never cancelled: they finish within one node
 * deadline. The check is per thread; NULL removes it. It runs on the calling
 * thread and must not call into the library.
 */
typedef int (*redlock_interrupt_fn)(void *data);
REDLOCK_API void redlock_set_interrupt_check(redlock_interrupt_fn check, void *data);

/* ---- Added in 1.2 (symbol version REDLOCK_1.2) ---- */

/* How an asynchronous call ends: its status (REDLOCK_OK or an error code),
 * for a lock its handle (now the caller's, to free with redlock_handle_free;
 * NULL when not acquired), and a message naming the nodes and why ("" on
 * success; valid during the callback only). */
typedef void (*redlock_done_fn)(void *data, int status, redlock_handle *handle,
                                const char *message);

/* Asynchronous lock (of 1 to REDLOCK_MAX_RESOURCES resources), extend and
 * unlock, with the same arguments and outcomes as the blocking calls. They
 * check their arguments and return at once: an error (done is not called),
 * or REDLOCK_OK, and then done(data, ...) is called exactly once, when the
 * call ends.
 *
 * One thread per client drives all its asynchronous calls in one poll loop
 * and runs the callbacks; it starts with the first call and ends once none
 * has been left for two seconds. A callback must return quickly (it holds up every other call of
 * the client): it may start further asynchronous calls, but must not wait
 * for the client (no blocking call on it) nor free it. While an extend or
 * unlock of a handle is under way, the handle must not be used otherwise
 * (nor freed: it may be freed from that call's own callback).
 * redlock_ctx_free cancels the locks still waiting (REDLOCK_ECANCELED, what
 * they took is released) and waits for the other calls to end. */
REDLOCK_API int redlock_lock_async(redlock_ctx *ctx, const char *const *resources,
                                   size_t n_resources, int64_t ttl_ms, int64_t wait_ms,
                                   redlock_done_fn done, void *data);
REDLOCK_API int redlock_extend_async(redlock_handle *h, int64_t ttl_ms, redlock_done_fn done,
                                     void *data);
REDLOCK_API int redlock_unlock_async(redlock_handle *h, redlock_done_fn done, void *data);

/* A list of node URIs in one string (a tool's argument, an environment
 * variable) is separated by commas that start a new URI: a comma followed
 * by "scheme://" (spaces allowed between). A comma inside a Sentinel URI's
 * list of sentinels is followed by a host, so it is part of that URI.
 * Returns the length of list's first URI, up to that comma or the end. */
REDLOCK_API size_t redlock_uri_list_next(const char *list);

/* ---- 1.2: keeping a lock (automatic renewal) and the lost lock ---- */

/* Called once when a watched lock is lost: status is REDLOCK_ENOTHELD (a
 * quorum of the nodes says the lock is no longer ours) or REDLOCK_EEXPIRED
 * (its validity ran out before an extension succeeded: the nodes failed),
 * message the detail. */
typedef void (*redlock_lost_fn)(void *data, redlock_handle *handle, int status,
                                const char *message);

/*
 * Keeps h held until it is unlocked or freed: the client's thread (the one
 * of the asynchronous calls) extends it to its lease (that of the lock or
 * of the last extend) every third of the lease, and again after a failed
 * extension while validity remains. To keep a lock, acquire it with the
 * option watchdog_lease_ms as its lease (or any lease) and watch it.
 *
 * When renewal fails for good or the validity runs out first, the lock is
 * lost, no later than its validity reaching 0: redlock_handle_lost(h)
 * returns 1 from then on, redlock_handle_validity_ms(h) <= 0, and lost(data,
 * h, status, message) is called once on the client's thread (lost may be
 * NULL), under the rules of the asynchronous callbacks: it may call
 * redlock_unlock_async(h, ...) or redlock_handle_free(h), no blocking call.
 *
 * redlock_unlock and redlock_unlock_async stop the renewal before their
 * release is sent (and wait for an extension under way): no extension
 * follows an unlock. redlock_handle_free stops it too. While h is watched,
 * its owner may still read it and call redlock_extend (whose lease the
 * renewals then use). REDLOCK_ENOTHELD when h is not held; REDLOCK_EINVAL
 * when it is watched already.
 */
REDLOCK_API int redlock_handle_watch(redlock_handle *h, redlock_lost_fn lost, void *data);

/*
 * Whether h is lost: 1 whenever its keys can have expired while it was
 * held, for every lock, kept or not: a watched lock whose renewal failed
 * (above), a lock whose validity ran out before it was released (a lease
 * that nothing renewed, or a kept lock whose owner did not see the loss
 * yet), a lock an extension found no longer ours. Once 1 it stays 1, also
 * after redlock_unlock (which then fails with REDLOCK_ENOTHELD: the critical
 * section may not have been exclusive). 0 while validity remains, for a lock
 * released in time, and for NULL. It reads the clock; no I/O.
 */
REDLOCK_API int redlock_handle_lost(const redlock_handle *h);

/* ---- 1.2: reentry (acquiring a held lock again) ----
 *
 * The rule every binding follows: when the holder of a lock acquires it
 * again (Java's RLock and Python's RLock by the owning thread or task, Lua's
 * Lock through the same object), no acquisition is made: the binding calls
 * redlock_handle_reenter, which counts one more hold and keeps the first
 * terms: the keys' TTL is not changed and a kept lock's renewal goes on as
 * before (its lease and period), a lock with a lease stays unrenewed. So no
 * lease is ever left without its renewal, nor a renewal on a shorter lease.
 * Each hold is given back with redlock_handle_leave; the last one is
 * released with redlock_unlock. The owner (which thread or task holds it)
 * is the binding's business; the count and the rule are here.
 */

/*
 * Counts one more hold of h by its holder. REDLOCK_OK when h is held with
 * validity left; REDLOCK_ENOTHELD (nothing counted) when it was released or
 * is lost (redlock_handle_lost: its lease ran out, its renewal failed): the
 * holder's acquisition is then not a reentry but a new one (the bindings'
 * rule: it starts afresh, and a success replaces h, whose unlock would fail
 * with REDLOCK_ENOTHELD). REDLOCK_EINVAL for NULL. No I/O: the nodes are not
 * contacted.
 */
REDLOCK_API int redlock_handle_reenter(redlock_handle *h);

/* The holds of h: 1 after its acquisition, plus those counted by
 * redlock_handle_reenter and not yet left; 0 once released, and for NULL. */
REDLOCK_API int redlock_handle_holds(const redlock_handle *h);

/*
 * Gives back one hold of h: *left (may be NULL) is the number of holds that
 * remain after it. When *left is 0 this was the last hold, which this call
 * does not give back (redlock_handle_holds stays 1): the caller releases it
 * with redlock_unlock. REDLOCK_ENOTHELD when h was released already,
 * REDLOCK_EINVAL for NULL.
 */
REDLOCK_API int redlock_handle_leave(redlock_handle *h, int *left);

/* ---- 1.2: asking the nodes about a lock, and forcing it open ---- */

/*
 * Asks the nodes whether resource is locked, by anyone (as Redisson's
 * isLocked and remainTimeToLive): *locked is 1 when a quorum of the nodes
 * has its key with one token, and *ttl_ms then how long a quorum still has
 * it (the quorum-th longest of their remaining leases, in ms; -1 when the
 * key has no expiry); *locked 0 and *ttl_ms -2 when no holder can have a
 * quorum. One round to every node at once, decided as soon as the answers
 * allow. REDLOCK_ENOQUORUM when too few nodes answered to tell (then *locked
 * is 0 and *ttl_ms -2). The answer may be stale as soon as it is returned:
 * it is for display and diagnosis; to hold the lock, take it. locked and
 * ttl_ms may be NULL.
 */
REDLOCK_API int redlock_inspect(redlock_ctx *ctx, const char *resource, int *locked,
                                int64_t *ttl_ms);

/*
 * redlock_inspect for a multi-lock (the n_resources taken together by
 * redlock_lock_multi): *locked is 1 when any of them is locked, by anyone
 * (the multi-lock cannot be taken now), and *ttl_ms then the longest of the
 * locked ones' times to live (-1 when one has no expiry): how long until
 * all of them could be free; *locked 0 and *ttl_ms -2 when none is locked.
 * The rule is redlock_inspect_merge's. One round per resource, one after
 * the other (for display and diagnosis, as redlock_inspect). The first
 * failure is returned (REDLOCK_ENOQUORUM, REDLOCK_EWRONGTYPE...), with
 * *locked 0 and *ttl_ms -2. REDLOCK_EINVAL for no resources or a NULL one.
 */
REDLOCK_API int redlock_inspect_multi(redlock_ctx *ctx, const char *const *resources,
                                      size_t n_resources, int *locked, int64_t *ttl_ms);

/*
 * The multi-lock's answer from its resources' answers, one at a time (for a
 * binding that asks the nodes itself, as an event loop does with
 * redlock_op_inspect): ttl_ms is the answer so far (-2 to start with),
 * more_ttl_ms one more resource's ttl_ms from redlock_inspect (-2: not
 * locked, -1: no expiry). Returns -2 while no resource is locked, -1 once one
 * has no expiry, else the longest. Locked is "the result is not -2".
 */
REDLOCK_API int64_t redlock_inspect_merge(int64_t ttl_ms, int64_t more_ttl_ms);

/*
 * Deletes resource's key on every node whatever its token, and wakes the
 * clients waiting for it: for an operator clearing a lock whose holder is
 * known to be gone. DANGEROUS: a holder still alive keeps running its
 * critical section while another client takes the lock. *deleted (may be
 * NULL) is the number of nodes on which a lock was deleted. REDLOCK_OK when
 * a quorum of the nodes answered (the lock is no longer held);
 * REDLOCK_ENOQUORUM when too few did; REDLOCK_EWRONGTYPE when the key is not
 * a lock (it is left alone).
 */
REDLOCK_API int redlock_force_unlock(redlock_ctx *ctx, const char *resource, int *deleted);

/* ---- 1.2: fencing tokens ---- */

/*
 * The fencing token of resource `index` of h (0 for a lock of one resource;
 * for a multi-lock, in the order the resources were given): with the option
 * fencing, a number that is larger for every later holder of that resource
 * (each acquisition counts on a counter per resource, kept on the nodes
 * without expiry, and the fence is the largest count among a quorum). Give
 * it with every write to the storage the lock protects, and let the storage
 * refuse a write whose fence is smaller than one it has seen: a holder paused
 * past its lease is then stopped there. *fence is 0 when the lock was taken
 * without fencing; fences start at 1 and stay below 2^53. They increase only
 * while no node loses its counters: a node restarted without its data (no
 * persistence, or a snapshot older than its last writes) or evicting keys
 * (an allkeys-* maxmemory policy) can make them go back. REDLOCK_EINVAL for
 * a NULL h or fence or an index out of range.
 */
REDLOCK_API int redlock_handle_fence(const redlock_handle *h, size_t index, int64_t *fence);

/* ---- 1.2: events, and the health of the nodes ---- */

/*
 * Levels of events (the values are those of Python's logging module).
 */
#define REDLOCK_LOG_DEBUG 10   /* acquired, refused, extended, released */
#define REDLOCK_LOG_INFO  20   /* node_back, force_unlocked */
#define REDLOCK_LOG_WARN  30   /* no_quorum, failed, renewal_failed, node_down, node_slow,
                                * node_restarted */
#define REDLOCK_LOG_ERROR 40   /* lost, auth_refused, permission_denied (and failed with
                                * REDLOCK_EAUTH or REDLOCK_ENOPERM) */

/*
 * An event of the client: level (REDLOCK_LOG_*), event a stable short name
 * (below), message one human line of key=value fields, followed, for a
 * failure, by ": " and the detail (which nodes, and why). The strings are
 * valid during the call only. No message holds a password or a whole
 * token: a lock's owner is shown as the first 8 characters of its token.
 *
 * Events, with the fields of their messages:
 *   acquired        op resource owner nodes (yes/all) ms attempts validity_ms [fence]
 *   refused         op resource nodes ms attempts: held elsewhere until the wait ended
 *   extended        op resource owner nodes ms validity_ms
 *   released        op resource owner nodes ms
 *   force_unlocked  op resource nodes deleted ms
 *   no_quorum       op resource [owner] nodes need ms [attempts] code: too few nodes answered
 *   failed          op resource [owner] nodes ms code: any other failure of a call
 *                   (ERROR for code=auth and code=noperm, DEBUG for code=canceled,
 *                   else WARN)
 *   renewal_failed  resource owner code retry_in_ms validity_ms: a kept lock's extension
 *                   failed; it is tried again while validity remains
 *   lost            resource owner code: a kept lock is lost (redlock_handle_watch)
 *   node_down       node was retry_in_ms: the node cannot be connected to
 *   node_slow       node was: no answer within node_timeout_ms
 *   node_back       node was for_ms: the node answers again
 *   node_restarted  node run_id guard_ms: a new run_id (the restart guard holds the node's
 *                   votes back for guard_ms)
 *   auth_refused    node: the node refused the credentials (AUTH)
 *   permission_denied  node was: the node's ACL does not allow a command or key the
 *                   library uses (its NOPERM reply, which names the command, follows)
 * New events and fields may be added; names and existing fields do not change.
 * A message never holds a control byte (below 0x20, or 0x7f): one in a
 * resource name or a node's answer comes escaped, as \n, \r, \t or \xNN, so
 * an event is one line of a log whatever the names are (since 1.2).
 *
 * Threads: the hook is called synchronously, on whichever thread runs the
 * client's work at that moment: the caller's, for the blocking calls
 * (and for the engine's operations, on the driver's thread); the client's
 * thread, for the asynchronous calls and the renewal of kept locks; the
 * client's service thread, for releases it delivers to nodes that failed.
 * So it may be called from several threads at once. It is never called
 * with a lock of the library's held, and it must return quickly, must not
 * call into the same ctx (nor free it) and must not unwind (no longjmp, no
 * C++ exception).
 */
typedef void (*redlock_log_fn)(void *data, int level, const char *event, const char *message);

/*
 * Sends ctx's events of min_level and above to fn(data, ...); fn NULL turns
 * them off (the default). With no hook, or below min_level, an event costs
 * one test: nothing is formatted. Set it as the options are set, before the
 * ctx is shared between threads; calling it again with the same fn and data
 * to change min_level is safe at any time. REDLOCK_EINVAL for a NULL ctx.
 */
REDLOCK_API int redlock_ctx_set_log(redlock_ctx *ctx, redlock_log_fn fn, int min_level,
                                    void *data);

/* Room enough for one node's line of redlock_ctx_health. */
#define REDLOCK_HEALTH_LINE_MAX 640

/*
 * Writes into buf (buflen bytes, NUL included; REDLOCK_HEALTH_LINE_MAX per
 * node is always enough) what the client knows of each node, one line per
 * node in the order of the ctx's URIs, each line space-separated key=value
 * fields:
 *   node         "host:port" or "unix:path" (never a password)
 *   state        unknown (not contacted yet), up, slow (its last command got
 *                no answer within node_timeout_ms), busy (up or slow, but the
 *                client could not keep up with it in the last second: its
 *                connections all in use, or one owing too many replies; the
 *                event node_busy), down (cannot connect),
 *                guarded (restarted: its votes do not count yet, the restart
 *                guard), auth_refused (refused the credentials),
 *                permission_denied (its ACL refused a command or key: last_error
 *                says which)
 *   for_ms       how long it has been in that state
 *   retry_in_ms  down: when a connection will be tried again (0: at the next call)
 *   guard_ms     guarded: for how long its votes do not count yet
 *   rtt_ms       a recent round trip, an average of its replies' times on the
 *                library's millisecond clock (-1 before any)
 *   commands failures timeouts   counts since the client was made: commands
 *                sent to the node, its failed parts of calls (no connection,
 *                no answer in time, an error reply), and among those the
 *                deadlines that passed without an answer
 *   run_id version   what its INFO said ("" and 0 before)
 *   last_error   the last failure seen, "" for none
 *   conns        the connections the client has open to it now (at most
 *                pool_size + 2: pooled, in use, connecting)
 *   scripts      how it runs the library's scripts, as the last connection
 *                to it found: functions (FCALL of the function library),
 *                eval (EVALSHA and EVAL) or unknown (not asked yet)
 *   native       the commands it takes in place of a plain lock's scripts,
 *                as its INFO says (Valkey): ifeq,delifeq (an extend is SET
 *                IFEQ, a release DELIFEQ), ifeq, delifeq, none (another
 *                server, or one whose reply refused them), or unknown (no
 *                INFO read yet)
 *   scripting    whether it runs Lua scripts: yes (one ran there), no (a reply
 *                said none can: Lua unloaded from Valkey 9.1, or an ACL
 *                without EVAL and FCALL; last_error says which), unknown (not
 *                known yet, or restarted since). Where it is no, plain locks
 *                go by plain commands (docs/servers.md) and a multi-lock,
 *                read-write lock, semaphore or fair lock is refused with
 *                REDLOCK_EUNSUPPORTED
 * Values are percent-encoded where they hold a space, '%', a control
 * character or a byte beyond ASCII (so the text is ASCII and every field
 * splits at its first '='). New fields may be
 * added at the end. The counters are the client's own: thread-safe, read
 * without stopping calls. REDLOCK_EINVAL for a NULL ctx or buf, or a buf
 * too small (the message says how much is needed).
 *
 * Why text rather than a count and getters: one call gives a consistent line
 * per node, any FFI can read it without new types, and a field added later
 * changes no function. redlock_health_type and redlock_health_value (1.3)
 * read a field of it back, decoded, with its type: no binding parses it.
 */
REDLOCK_API int redlock_ctx_health(const redlock_ctx *ctx, char *buf, size_t buflen);

/*
 * Sends PING to every node at once, connecting where needed, and waits for
 * each answer up to the node's deadline (all of them: the health above is
 * refreshed for every node). REDLOCK_OK when a quorum of the nodes answered
 * and counts (as for a lock: not a node under the restart guard, nor a
 * second name of one server); else REDLOCK_ENOQUORUM, or the code of the
 * failures that alone leave too few nodes for a quorum (REDLOCK_EAUTH for
 * refused credentials, REDLOCK_ENOPERM when the ACL does not allow PING),
 * with the message naming each failed node. *answered (may be NULL) is how many
 * counted. The blocking driver; on the calling thread.
 */
REDLOCK_API int redlock_ctx_ping(redlock_ctx *ctx, int *answered);

/* ---- 1.2: read-write locks ---- */

/* The locks of a read-write lock (redlock_lock_rw's mode). */
#define REDLOCK_READ  1   /* shared: held beside any number of other read locks */
#define REDLOCK_WRITE 2   /* exclusive: no read lock beside it */

/*
 * A read-write lock of resource: with mode REDLOCK_READ one of its read
 * locks, held beside any other read locks of it; with REDLOCK_WRITE its
 * write lock, held alone. The write lock and a plain lock of the same name
 * (redlock_lock) are one key, so they exclude each other too. Over N nodes
 * each takes a quorum, and a read quorum and a write quorum always share a
 * node, where the conflict shows. Each read lock has its own token and
 * lease (renewed, when watched, as any lock).
 * held: NULL, or a lock of this read-write lock that the caller holds. Its
 * write lock lets the read lock be taken beside it (a downgrade: release
 * the write lock after, and the read lock stays, with no writer in
 * between); its read lock refuses the write lock with REDLOCK_EINVAL (no
 * upgrade: two readers upgrading would wait for each other for ever).
 * The handle is extended, released, watched and freed as any other; the
 * release of the last read lock, or of the write lock, wakes the calls
 * waiting for it. With the option fencing, the write lock has fences
 * (redlock_handle_fence) and a read lock none. Other arguments and codes as
 * redlock_lock's; REDLOCK_EINVAL for another mode.
 */
REDLOCK_API int redlock_lock_rw(redlock_handle **out, redlock_ctx *ctx, const char *resource,
                                int mode, const redlock_handle *held, int64_t ttl_ms,
                                int64_t wait_ms);
/* redlock_lock_rw on the client's thread, as redlock_lock_async. */
REDLOCK_API int redlock_lock_rw_async(redlock_ctx *ctx, const char *resource, int mode,
                                      const redlock_handle *held, int64_t ttl_ms,
                                      int64_t wait_ms, redlock_done_fn done, void *data);

/*
 * A permit of a semaphore (1.2): resource names a semaphore of `permits`
 * permits (1 to REDLOCK_MAX_PERMITS), at most that many held at once by all
 * its clients together; the handle is the permit, and its token
 * (redlock_handle_token) the permit's id. It is extended, released, watched
 * (renewed, with the lost signal) and freed as a lock is; its release wakes
 * one call waiting for a permit. A semaphore is not a lock: a lock and a
 * semaphore of the same name do not exclude each other.
 *
 * Every client of the semaphore must give the same `permits`: a node that
 * holds permits of the semaphore under another number refuses with
 * REDLOCK_EINVAL, and the message says both numbers.
 *
 * Over N nodes a permit is held on more than permits * N / (permits + 1)
 * of them, each of which lets at most `permits` hold it: then no more than
 * `permits` clients can hold it at once (on a majority, with 3 nodes and 2
 * permits, holders on {A,B}, {B,C} and {A,C} would be 3). So fewer nodes
 * may fail as permits grow: with N = 5, 2 may fail for 1 permit, 1 for 2
 * or 3 permits, none from 4 permits on (docs/kinds.md has the table).
 * Other arguments and codes as redlock_lock; REDLOCK_ELOCKED when every
 * permit stayed taken until wait_ms ran out.
 */
REDLOCK_API int redlock_acquire_permit(redlock_handle **out, redlock_ctx *ctx,
                                       const char *resource, int permits, int64_t ttl_ms,
                                       int64_t wait_ms);
/* redlock_acquire_permit on the client's thread, as redlock_lock_async. */
REDLOCK_API int redlock_acquire_permit_async(redlock_ctx *ctx, const char *resource,
                                             int permits, int64_t ttl_ms, int64_t wait_ms,
                                             redlock_done_fn done, void *data);
/*
 * How many permits of the semaphore resource (of `permits`) could be taken
 * now: the nodes are asked how many each has free, and *available is the
 * number free on a permit's quorum of them (a node that does not answer has
 * none). REDLOCK_OK when a permit's quorum answered; REDLOCK_ENOQUORUM
 * (with *available 0) when too few did; REDLOCK_EINVAL when a node has the
 * semaphore under another number of permits. For display and diagnosis: the
 * answer may be stale as soon as it is given.
 */
REDLOCK_API int redlock_permits_available(redlock_ctx *ctx, const char *resource, int permits,
                                          int *available);

/*
 * A fair lock of resource (1.2): waiters get it in the order they arrived,
 * across clients and nodes. It is the plain lock of the name (the same key:
 * a plain lock of the name excludes it, and is taken without waiting its
 * turn), extended, released, watched and freed as any lock.
 *
 * A call refused at first is given a ticket, one more than the counters of
 * the nodes it asked, and queued under it on every node; every node orders
 * its queue by ticket, so the waiter that arrived first heads every queue
 * it is on, and the lock goes to the head alone. A waiter keeps its place
 * while it tries again: one that dies or gives up (wait_ms ran out) leaves
 * every queue 2 x (retry_delay_ms + retry_jitter_ms + node_timeout_ms)
 * after its last attempt (700 ms by default), and the next one gets its
 * turn. A release wakes the head alone (on its own channel: the key,
 * ":waiter:" and its id; an ACL that grants channels must grant these).
 * A waiter has arrived once it is queued on a quorum of the nodes (by its
 * second attempt, a retry pause after its first was refused): it gets the
 * lock before any call whose first attempt starts later. Of two waiters
 * arriving at once, either may come first. Fence 0: a fair lock has no
 * fence. Other arguments and codes as redlock_lock.
 */
REDLOCK_API int redlock_lock_fair(redlock_handle **out, redlock_ctx *ctx, const char *resource,
                                  int64_t ttl_ms, int64_t wait_ms);
/* redlock_lock_fair on the client's thread, as redlock_lock_async. */
REDLOCK_API int redlock_lock_fair_async(redlock_ctx *ctx, const char *resource, int64_t ttl_ms,
                                        int64_t wait_ms, redlock_done_fn done, void *data);

/* ---- 1.3: what every binding checks and decodes, once ----
 *
 * The rules of arguments, the health of the nodes field by field, the
 * options' table and lists of node URIs: a binding calls these instead of
 * keeping a copy, so that every language checks, decodes and words them
 * alike. Each is a pure function of its arguments (no I/O, no ctx), safe
 * from any thread.
 */

/* The types of a value, which each binding maps to its own: a field of a
 * node's health (redlock_health_type) and an option (redlock_option_type). */
#define REDLOCK_TYPE_NONE 0   /* no value: None in Python, nil in Lua, empty in Java */
#define REDLOCK_TYPE_TEXT 1   /* text */
#define REDLOCK_TYPE_INT  2   /* a whole number, in decimal */
#define REDLOCK_TYPE_REAL 3   /* a number in decimal, which may have a fraction */
#define REDLOCK_TYPE_BOOL 4   /* an option that is 0 or 1 */

/* The arguments redlock_arg_check knows, each with one rule. */
#define REDLOCK_ARG_WAIT    1 /* a time to wait, in ms: finite, 0 or more */
#define REDLOCK_ARG_LEASE   2 /* a lease, in ms: above 0, at most REDLOCK_MAX_TTL_MS */
#define REDLOCK_ARG_PERMITS 3 /* a semaphore's permits: a whole number from 1 to
                               * REDLOCK_MAX_PERMITS */

/*
 * Checks value, an argument of kind arg (REDLOCK_ARG_*) as a caller got it,
 * and writes into *out (may be NULL) what the calls take: a time (a binding
 * converts its own unit to milliseconds first, with any fraction) rounded
 * to the microsecond, then up to a whole millisecond (a float of seconds
 * times 1000 is off by a little: 1.1 s is 1100 ms, not 1101), and a wait
 * beyond 2^62 ms as 2^62; the permits as they are. REDLOCK_EINVAL when value
 * breaks the rule, with the rule's one message, which every binding shows as
 * it is: "lease must be a time above 0 ms and at most 2147483647 ms, not
 * -1000 ms", "wait must be a finite time of 0 ms or more, not NaN", "permits
 * must be a whole number from 1 to 10000, not 0". what names the argument
 * in it (NULL: "wait", "lease" or "permits"). redlock_lock and the other
 * calls refuse a bad ttl_ms, wait_ms or permits with the same messages.
 */
REDLOCK_API int redlock_arg_check(int64_t *out, int arg, const char *what, double value);

/* The fields of a line of redlock_ctx_health, in their order: the name of
 * field index ("node", "state", ...), NULL past the last. Static. */
REDLOCK_API const char *redlock_health_field(size_t index);

/* How many nodes' lines text (from redlock_ctx_health) holds; 0 for NULL. */
REDLOCK_API size_t redlock_health_nodes(const char *text);

/*
 * The type of field (a name of redlock_health_field) on the line of node
 * index node (from 0) of text, from redlock_ctx_health: REDLOCK_TYPE_NONE
 * where the node has no value (last_error "", rtt_ms -1, server "-"), else
 * the field's own type, REDLOCK_TYPE_TEXT, REDLOCK_TYPE_INT or
 * REDLOCK_TYPE_REAL. REDLOCK_EINVAL (the message says which) for a NULL
 * text or field, an unknown field, or a node past the last.
 */
REDLOCK_API int redlock_health_type(const char *text, size_t node, const char *field);

/*
 * The value of field on node's line of text into buf (buflen bytes, NUL
 * included), decoded (the percent-encoding undone): "" where its type is
 * REDLOCK_TYPE_NONE; REDLOCK_HEALTH_LINE_MAX bytes are always enough.
 * REDLOCK_EINVAL as redlock_health_type, and for a NULL buf or one too
 * small (the message says how much is needed).
 */
REDLOCK_API int redlock_health_value(const char *text, size_t node, const char *field,
                                     char *buf, size_t buflen);

/* The options of redlock_ctx_set_option, in their order: how many, and the
 * name of option index (NULL past the last). Static. */
REDLOCK_API size_t redlock_option_count(void);
REDLOCK_API const char *redlock_option_name(size_t index);

/* The type of option name: REDLOCK_TYPE_INT, REDLOCK_TYPE_BOOL,
 * REDLOCK_TYPE_REAL or REDLOCK_TYPE_TEXT; REDLOCK_EINVAL for NULL or an
 * unknown name (the message lists the known ones). */
REDLOCK_API int redlock_option_type(const char *name);

/*
 * The default of option name into buf (buflen bytes, NUL included), as the
 * text redlock_ctx_set_option takes (the list above). watchdog_lease_ms's is
 * its own: a ctx where it is not set uses max_lease_ms when that is less.
 * REDLOCK_EINVAL for NULL or an unknown name, or a buf too small (the
 * message says how much is needed).
 */
REDLOCK_API int redlock_option_default(const char *name, char *buf, size_t buflen);

/* How many node URIs list holds, split as redlock_uri_list_next says: 0 for
 * NULL, "" or only spaces, else one more than the commas that start a URI. */
REDLOCK_API size_t redlock_uri_list_count(const char *list);

/*
 * URI index (from 0) of list into buf (buflen bytes, NUL included), without
 * the spaces around it. REDLOCK_EINVAL when it is empty ("URI 1 of the list
 * of nodes is empty": the rule of every binding and the tool), for a NULL
 * list, an index past the last, or a buf too small (the message says how
 * much is needed).
 */
REDLOCK_API int redlock_uri_list_item(const char *list, size_t index, char *buf, size_t buflen);

#ifdef __cplusplus
}
#endif

#endif /* REDLOCK_H */
