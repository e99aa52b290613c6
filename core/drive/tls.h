/*
 * tls.h - TLS for the blocking driver's sockets (rediss:// nodes), with the
 * system's OpenSSL 3, loaded at run time: libssl.so.3 and libcrypto.so.3 are
 * opened (dlopen) on first use, never linked, so the library carries no
 * OpenSSL of its own and the distribution's security updates apply.
 *
 * A session does no socket I/O of its own beyond one non-blocking send or
 * recv at a time on the driver's socket (OpenSSL works on memory buffers:
 * sans-I/O as the engine, and no SIGPIPE). Bytes that OpenSSL has read but
 * not yet returned do not make the socket readable: rl_tls_read is called
 * until it says it would block, which empties them.
 */
#ifndef RL_TLS_H
#define RL_TLS_H

#include <sys/types.h>

#include "base.h"
#include "options.h"

/* The lowest protocol version a session accepts (TLS 1.2, its number on
 * the wire and in OpenSSL). */
#define RL_TLS_MIN_VERSION 0x0303

/* The rules of the tls_* options, which rl_tls_ctx_new follows and which
 * drivers with a TLS of their own are given (redlock_engine.h):
 *   - the files named must be readable (tls_ca_dir searchable), the CA files
 *     only when certificates are checked (tls_verify); tls_key_file needs
 *     tls_cert_file: REDLOCK_OK, or REDLOCK_ETLS with why naming the option;
 *   - the client's key is in tls_key_file, or else in tls_cert_file;
 *   - a server name that is an IP address is checked against the
 *     certificate's addresses and not sent as SNI; a host name is both. */
int rl_tls_check_options(const rl_options *o, char *why, size_t whylen);
const char *rl_tls_key_file(const rl_options *o);
bool rl_tls_name_is_ip(const char *name);

/* A client's TLS settings: whom it trusts, and its own certificate. */
typedef struct rl_tls_ctx rl_tls_ctx;
/* One connection's TLS session. */
typedef struct rl_tls rl_tls;

/* Settings from the client's options (tls_*): REDLOCK_OK,
 * REDLOCK_EUNSUPPORTED when OpenSSL 3 cannot be loaded, REDLOCK_ETLS when a
 * file of the options cannot be used, or REDLOCK_ENOMEM; why says which. */
int rl_tls_ctx_new(rl_tls_ctx **out, const rl_options *o, char *why, size_t whylen);
void rl_tls_ctx_free(rl_tls_ctx *t);

/* A session on fd, a connected socket, to a server whose certificate must
 * be for name (a host name, sent as SNI too, or an IP address). */
int rl_tls_new(rl_tls **out, rl_tls_ctx *ctx, int fd, const char *name, char *why,
               size_t whylen);
/* Frees the session; with notify, after one try at sending close_notify
 * (never waits). Without, it does no I/O (a child's copy after fork()). */
void rl_tls_free(rl_tls *t, bool notify);

/* Steps the handshake: 1 when done, 0 while it goes on (wait for
 * rl_tls_events), or a negative code with why: REDLOCK_ETLS (refused, or a
 * certificate that fails the check: OpenSSL's reason), REDLOCK_ENOQUORUM
 * (the socket failed or was closed). */
int rl_tls_handshake(rl_tls *t, char *why, size_t whylen);

/* Plain bytes in and out: > 0 bytes moved, 0 when it would block, or -1
 * with *code (REDLOCK_ETLS, REDLOCK_ENOQUORUM) and why when the session
 * failed or ended. rl_tls_write takes the start of what is to be written:
 * until the bytes it took are on the socket it returns 0, then how many;
 * called again meanwhile, buf must begin with the same bytes. */
ssize_t rl_tls_read(rl_tls *t, char *buf, size_t len, int *code, char *why, size_t whylen);
ssize_t rl_tls_write(rl_tls *t, const char *buf, size_t len, int *code, char *why,
                     size_t whylen);

/* The poll events the session waits for beyond the caller's own: POLLOUT
 * while it has bytes the socket did not take; in a handshake, POLLIN. */
short rl_tls_events(const rl_tls *t);

/* A non-blocking socket's bytes, through its session when it has one (tls
 * NULL: in the clear): > 0 moved, 0 when it would block, or -1 with *code
 * (REDLOCK_ENOQUORUM, or the session's) and why when the socket failed or
 * (recv) was closed. */
ssize_t rl_sock_send(int fd, rl_tls *tls, const char *buf, size_t len, int *code, char *why,
                     size_t whylen);
ssize_t rl_sock_recv(int fd, rl_tls *tls, char *buf, size_t len, int *code, char *why,
                     size_t whylen);

#endif /* RL_TLS_H */
