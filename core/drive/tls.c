/*
 * tls.c - TLS on the blocking driver's sockets (see tls.h), with the
 * system's OpenSSL 3 loaded at run time. OpenSSL's headers give the types
 * and constants; every function used is fetched by dlsym into one table,
 * once per process. Functions that OpenSSL's headers define as macros over
 * SSL_ctrl and SSL_CTX_ctrl (the SNI, the mode, the lowest version) are
 * called through those two.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tls.h"

/* ---- a socket's bytes, plain or through TLS ---- */

ssize_t rl_sock_send(int fd, rl_tls *tls, const char *buf, size_t len, int *code, char *why,
                     size_t whylen)
{
    if (tls)
        return rl_tls_write(tls, buf, len, code, why, whylen);
    for (;;) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w >= 0)
            return w;
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        *code = REDLOCK_ENOQUORUM;
        snprintf(why, whylen, "connection lost: %s", strerror(errno));
        return -1;
    }
}

ssize_t rl_sock_recv(int fd, rl_tls *tls, char *buf, size_t len, int *code, char *why,
                     size_t whylen)
{
    if (tls)
        return rl_tls_read(tls, buf, len, code, why, whylen);
    for (;;) {
        ssize_t r = recv(fd, buf, len, 0);
        if (r > 0)
            return r;
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        *code = REDLOCK_ENOQUORUM;
        snprintf(why, whylen, "connection lost: %s",
                 r == 0 ? "closed by the server" : strerror(errno));
        return -1;
    }
}

/* ---- the rules of the options ---- */

/* A file option that cannot be read: REDLOCK_ETLS with why. */
static int unreadable(const char *option, const char *path, int mode, char *why, size_t whylen)
{
    if (access(path, mode) == 0)
        return REDLOCK_OK;
    snprintf(why, whylen, "%s '%.80s': %s", option, path, strerror(errno));
    return REDLOCK_ETLS;
}

/* The CA files, when given. */
static int check_trust(const rl_options *o, char *why, size_t whylen)
{
    int rc = REDLOCK_OK;
    if (o->tls_ca_file[0])
        rc = unreadable("tls_ca_file", o->tls_ca_file, R_OK, why, whylen);
    if (rc == REDLOCK_OK && o->tls_ca_dir[0])
        rc = unreadable("tls_ca_dir", o->tls_ca_dir, R_OK | X_OK, why, whylen);
    return rc;
}

/* The client's certificate and key, when given. */
static int check_identity(const rl_options *o, char *why, size_t whylen)
{
    if (!o->tls_cert_file[0]) {
        if (!o->tls_key_file[0])
            return REDLOCK_OK;
        snprintf(why, whylen, "tls_key_file is set without tls_cert_file");
        return REDLOCK_ETLS;
    }
    int rc = unreadable("tls_cert_file", o->tls_cert_file, R_OK, why, whylen);
    return rc == REDLOCK_OK ? unreadable("tls_key_file", rl_tls_key_file(o), R_OK, why, whylen)
                            : rc;
}

int rl_tls_check_options(const rl_options *o, char *why, size_t whylen)
{
    int rc = o->tls_verify ? check_trust(o, why, whylen) : REDLOCK_OK;
    return rc == REDLOCK_OK ? check_identity(o, why, whylen) : rc;
}

const char *rl_tls_key_file(const rl_options *o)
{
    return o->tls_key_file[0] ? o->tls_key_file : o->tls_cert_file;
}

bool rl_tls_name_is_ip(const char *name)
{
    unsigned char addr[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, name, addr) == 1 || inet_pton(AF_INET6, name, addr) == 1;
}

#ifndef RL_HAVE_OPENSSL

/* Built without OpenSSL 3's headers: rediss:// is not supported. */
int rl_tls_ctx_new(rl_tls_ctx **out, const rl_options *o, char *why, size_t whylen)
{
    (void)o;
    *out = NULL;
    snprintf(why, whylen, "TLS is not supported by this build (made without OpenSSL 3's headers)");
    return REDLOCK_EUNSUPPORTED;
}

void rl_tls_ctx_free(rl_tls_ctx *t)
{
    (void)t;
}

int rl_tls_new(rl_tls **out, rl_tls_ctx *ctx, int fd, const char *name, char *why,
               size_t whylen)
{
    *out = NULL;
    snprintf(why, whylen, "TLS is not supported by this build");
    return REDLOCK_EUNSUPPORTED;
}

void rl_tls_free(rl_tls *t, bool notify)
{
    (void)t;
}

int rl_tls_handshake(rl_tls *t, char *why, size_t whylen)
{
    snprintf(why, whylen, "TLS is not supported by this build");
    return REDLOCK_EUNSUPPORTED;
}

ssize_t rl_tls_read(rl_tls *t, char *buf, size_t len, int *code, char *why, size_t whylen)
{
    *code = REDLOCK_EUNSUPPORTED;
    snprintf(why, whylen, "TLS is not supported by this build");
    return -1;
}

ssize_t rl_tls_write(rl_tls *t, const char *buf, size_t len, int *code, char *why,
                     size_t whylen)
{
    return rl_tls_read(t, NULL, 0, code, why, whylen);
}

short rl_tls_events(const rl_tls *t)
{
    return 0;
}

#else /* RL_HAVE_OPENSSL */

#include <dlfcn.h>
#include <pthread.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#if OPENSSL_VERSION_MAJOR < 3
#error "core/tls.c needs OpenSSL 3's headers: it loads libssl.so.3"
#endif
#if RL_TLS_MIN_VERSION != TLS1_2_VERSION
#error "RL_TLS_MIN_VERSION is TLS 1.2"
#endif

/* ---- OpenSSL, loaded once ---- */

#define LIBSSL_FUNCTIONS(X)                                                                   \
    X(OPENSSL_init_ssl) X(TLS_client_method) X(SSL_CTX_new) X(SSL_CTX_free)                 \
    X(SSL_CTX_set_verify) X(SSL_CTX_set_default_verify_paths)                                \
    X(SSL_CTX_load_verify_locations) X(SSL_CTX_use_certificate_chain_file)                   \
    X(SSL_CTX_use_PrivateKey_file) X(SSL_CTX_check_private_key)                              \
    X(SSL_CTX_set_default_passwd_cb) X(SSL_CTX_ctrl) X(SSL_new) X(SSL_free) X(SSL_set_bio)   \
    X(SSL_connect) X(SSL_read) X(SSL_write) X(SSL_shutdown) X(SSL_get_error) X(SSL_ctrl)      \
    X(SSL_set1_host) X(SSL_set_hostflags) X(SSL_get0_param) X(SSL_get_verify_result)         \
    X(SSL_is_init_finished)
#define LIBCRYPTO_FUNCTIONS(X)                                                                \
    X(BIO_new) X(BIO_s_mem) X(BIO_free) X(BIO_read) X(BIO_write) X(BIO_ctrl_pending)         \
    X(X509_VERIFY_PARAM_set1_ip_asc) X(X509_verify_cert_error_string) X(ERR_peek_last_error) \
    X(ERR_reason_error_string) X(ERR_error_string_n) X(ERR_clear_error)

#define DECLARE(name) __typeof__(&name) name;
static struct {
    LIBSSL_FUNCTIONS(DECLARE)
    LIBCRYPTO_FUNCTIONS(DECLARE)
} ossl;
#undef DECLARE

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[200];     /* "" once loaded */

/* Opens the library by its versioned name (the distribution's OpenSSL 3)
 * and fetches the functions; the handles stay open for the process. */
static void *open_library(const char *name)
{
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        const char *err = dlerror();
        snprintf(load_error, sizeof load_error,
                 "TLS needs OpenSSL 3's %s, which was not found (%.120s)", name,
                 err ? err : "dlopen failed");
    }
    return lib;
}

static bool fetch(void *lib, const char *name, void *slot)
{
    void *fn = dlsym(lib, name);
    if (!fn) {
        snprintf(load_error, sizeof load_error, "the OpenSSL found lacks %s: TLS needs OpenSSL 3",
                 name);
        return false;
    }
    memcpy(slot, &fn, sizeof fn);
    return true;
}

static void load(void)
{
    void *ssl = open_library("libssl.so.3");
    void *crypto = ssl ? open_library("libcrypto.so.3") : NULL;
    if (!crypto)
        return;
#define FETCH_SSL(name) if (!fetch(ssl, #name, &ossl.name)) return;
#define FETCH_CRYPTO(name) if (!fetch(crypto, #name, &ossl.name)) return;
    LIBSSL_FUNCTIONS(FETCH_SSL)
    LIBCRYPTO_FUNCTIONS(FETCH_CRYPTO)
#undef FETCH_SSL
#undef FETCH_CRYPTO
    if (ossl.OPENSSL_init_ssl(0, NULL) != 1) {
        snprintf(load_error, sizeof load_error, "OpenSSL 3 failed to initialise");
        return;
    }
    load_error[0] = '\0';
}

/* ---- settings ---- */

struct rl_tls_ctx {
    SSL_CTX *ssl;
    bool verify;
};

/* OpenSSL's reason for its last error, and the queue emptied. */
static const char *openssl_reason(char *buf, size_t len)
{
    unsigned long e = ossl.ERR_peek_last_error();
    const char *reason = e ? ossl.ERR_reason_error_string(e) : NULL;
    if (!reason && e) {
        ossl.ERR_error_string_n(e, buf, len);
        reason = buf;
    }
    ossl.ERR_clear_error();
    return reason ? reason : "no detail from OpenSSL";
}

/* An encrypted key would make OpenSSL ask a terminal for its passphrase. */
static int no_passphrase(char *buf, int size, int rwflag, void *data)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    (void)data;
    return 0;
}

/* Whom to trust: the options' CAs, or the system's. */
static int load_trust(rl_tls_ctx *t, const rl_options *o, char *why, size_t whylen)
{
    const char *file = o->tls_ca_file[0] ? o->tls_ca_file : NULL;
    const char *dir = o->tls_ca_dir[0] ? o->tls_ca_dir : NULL;
    int rc = check_trust(o, why, whylen);
    if (rc != REDLOCK_OK)
        return rc;
    int ok = file || dir ? ossl.SSL_CTX_load_verify_locations(t->ssl, file, dir)
                         : ossl.SSL_CTX_set_default_verify_paths(t->ssl);
    if (ok != 1) {
        char buf[120];
        const char *reason = openssl_reason(buf, sizeof buf);
        snprintf(why, whylen, "%s: cannot load the certificates (%s)",
                 file ? "tls_ca_file" : dir ? "tls_ca_dir" : "the system's CA certificates",
                 reason);
        return REDLOCK_ETLS;
    }
    return REDLOCK_OK;
}

/* The client's own certificate and key, when given. */
static int load_identity(rl_tls_ctx *t, const rl_options *o, char *why, size_t whylen)
{
    const char *cert = o->tls_cert_file, *key = rl_tls_key_file(o);
    int rc = check_identity(o, why, whylen);
    if (rc != REDLOCK_OK || !cert[0])
        return rc;
    const char *what = "tls_cert_file: cannot load the certificate";
    if (ossl.SSL_CTX_use_certificate_chain_file(t->ssl, cert) == 1) {
        what = "tls_key_file: cannot use the private key (PEM, not encrypted, of tls_cert_file)";
        if (ossl.SSL_CTX_use_PrivateKey_file(t->ssl, key, SSL_FILETYPE_PEM) == 1) {
            what = "tls_key_file: the key does not match tls_cert_file";
            if (ossl.SSL_CTX_check_private_key(t->ssl) == 1)
                return REDLOCK_OK;
        }
    }
    char buf[120];
    const char *reason = openssl_reason(buf, sizeof buf);
    snprintf(why, whylen, "%s (%s)", what, reason);
    return REDLOCK_ETLS;
}

int rl_tls_ctx_new(rl_tls_ctx **out, const rl_options *o, char *why, size_t whylen)
{
    *out = NULL;
    pthread_once(&load_once, load);
    if (load_error[0]) {
        snprintf(why, whylen, "%s", load_error);
        return REDLOCK_EUNSUPPORTED;
    }
    rl_tls_ctx *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(why, whylen, "out of memory");
        return REDLOCK_ENOMEM;
    }
    ossl.ERR_clear_error();
    if (!(t->ssl = ossl.SSL_CTX_new(ossl.TLS_client_method()))) {
        char buf[120];
        snprintf(why, whylen, "cannot make an OpenSSL context (%s)",
                 openssl_reason(buf, sizeof buf));
        free(t);
        return REDLOCK_ENOMEM;
    }
    t->verify = o->tls_verify;
    ossl.SSL_CTX_set_verify(t->ssl, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    ossl.SSL_CTX_set_default_passwd_cb(t->ssl, no_passphrase);
    ossl.SSL_CTX_ctrl(t->ssl, SSL_CTRL_SET_MIN_PROTO_VERSION, RL_TLS_MIN_VERSION, NULL);
    ossl.SSL_CTX_ctrl(t->ssl, SSL_CTRL_MODE, SSL_MODE_ENABLE_PARTIAL_WRITE, NULL);
    int rc = t->verify ? load_trust(t, o, why, whylen) : REDLOCK_OK;
    if (rc == REDLOCK_OK)
        rc = load_identity(t, o, why, whylen);
    if (rc != REDLOCK_OK) {
        rl_tls_ctx_free(t);
        return rc;
    }
    *out = t;
    return REDLOCK_OK;
}

void rl_tls_ctx_free(rl_tls_ctx *t)
{
    if (!t)
        return;
    ossl.SSL_CTX_free(t->ssl);
    free(t);
}

/* ---- sessions ---- */

struct rl_tls {
    SSL *ssl;
    BIO *in, *out;           /* the socket's bytes, both ways (the SSL owns them) */
    int fd;
    bool verify;
    bool failed;             /* a fatal error: no close_notify */
    short wants;             /* POLLIN while the handshake waits for the server */
    bool replied;            /* the node sent plain bytes (it accepted the session) */
    size_t in_flight;        /* plain bytes taken by SSL_write, not all on the socket yet */
    size_t stage_off, stage_len;
    char name[256];          /* the name the certificate must carry */
    char stage[16 * 1024 + 512];   /* bytes for the socket, taken from out, not all sent */
};

int rl_tls_new(rl_tls **out, rl_tls_ctx *ctx, int fd, const char *name, char *why,
               size_t whylen)
{
    *out = NULL;
    rl_tls *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(why, whylen, "out of memory");
        return REDLOCK_ENOMEM;
    }
    t->fd = fd;
    t->verify = ctx->verify;
    snprintf(t->name, sizeof t->name, "%s", name);
    ossl.ERR_clear_error();
    t->ssl = ossl.SSL_new(ctx->ssl);
    t->in = ossl.BIO_new(ossl.BIO_s_mem());
    t->out = ossl.BIO_new(ossl.BIO_s_mem());
    if (!t->ssl || !t->in || !t->out) {
        if (t->ssl)
            ossl.SSL_free(t->ssl);
        if (t->in)
            ossl.BIO_free(t->in);
        if (t->out)
            ossl.BIO_free(t->out);
        free(t);
        ossl.ERR_clear_error();
        snprintf(why, whylen, "out of memory");
        return REDLOCK_ENOMEM;
    }
    ossl.SSL_set_bio(t->ssl, t->in, t->out);
    /* An address is checked against the certificate's IP addresses and not
     * sent as SNI; a name against its DNS names, and sent. */
    bool is_ip = rl_tls_name_is_ip(name);
    int ok = 1;
    if (!is_ip)
        ok = (int)ossl.SSL_ctrl(t->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                                (void *)t->name);
    if (ok == 1 && t->verify) {
        if (is_ip) {
            ok = ossl.X509_VERIFY_PARAM_set1_ip_asc(ossl.SSL_get0_param(t->ssl), name);
        } else {
            ossl.SSL_set_hostflags(t->ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = ossl.SSL_set1_host(t->ssl, name);
        }
    }
    if (ok != 1) {
        char buf[120];
        snprintf(why, whylen, "TLS: cannot check the name '%.80s' (%s)", name,
                 openssl_reason(buf, sizeof buf));
        ossl.SSL_free(t->ssl);
        free(t);
        return REDLOCK_ETLS;
    }
    *out = t;
    return REDLOCK_OK;
}

/* Sends what OpenSSL wrote for the socket: 1 once all of it went, 0 when
 * the socket takes no more now, -1 when it failed (code and why). */
static int send_out(rl_tls *t, int *code, char *why, size_t whylen)
{
    for (;;) {
        if (t->stage_off == t->stage_len) {
            t->stage_off = t->stage_len = 0;
            if (ossl.BIO_ctrl_pending(t->out) == 0)
                return 1;
            int n = ossl.BIO_read(t->out, t->stage, (int)sizeof t->stage);
            if (n <= 0)
                return 1;
            t->stage_len = (size_t)n;
        }
        ssize_t w = rl_sock_send(t->fd, NULL, t->stage + t->stage_off,
                                 t->stage_len - t->stage_off, code, why, whylen);
        if (w <= 0)
            return w < 0 ? -1 : 0;
        t->stage_off += (size_t)w;
    }
}

/* Reads what the socket has for OpenSSL: 1 when some came, 0 when none is
 * there now, -1 when the socket failed or was closed (code and why). */
static int recv_in(rl_tls *t, int *code, char *why, size_t whylen)
{
    char buf[16384];
    ssize_t r = rl_sock_recv(t->fd, NULL, buf, sizeof buf, code, why, whylen);
    if (r <= 0)
        return r < 0 ? -1 : 0;
    if (ossl.BIO_write(t->in, buf, (int)r) != (int)r) {
        ossl.ERR_clear_error();
        *code = REDLOCK_ENOMEM;
        snprintf(why, whylen, "out of memory");
        return -1;
    }
    return 1;
}

/* The failure of an OpenSSL call (err from SSL_get_error): a certificate
 * that failed the check says so, with OpenSSL's reason; anything else is
 * OpenSSL's reason for the handshake or session failing. */
static int failure(rl_tls *t, int err, bool handshake, char *why, size_t whylen)
{
    t->failed = true;
    long verified = ossl.SSL_get_verify_result(t->ssl);
    if (err == SSL_ERROR_ZERO_RETURN) {
        snprintf(why, whylen, "connection lost: the node closed the TLS session");
        ossl.ERR_clear_error();
        return REDLOCK_ENOQUORUM;
    }
    if (handshake && t->verify && verified != X509_V_OK) {
        const char *reason = ossl.X509_verify_cert_error_string(verified);
        if (verified == X509_V_ERR_HOSTNAME_MISMATCH || verified == X509_V_ERR_IP_ADDRESS_MISMATCH)
            snprintf(why, whylen, "TLS certificate check failed: %s (it is not for %.80s)",
                     reason, t->name);
        else
            snprintf(why, whylen, "TLS certificate check failed: %s", reason);
        ossl.ERR_clear_error();
        return REDLOCK_ETLS;
    }
    char buf[120];
    const char *reason = err == SSL_ERROR_SSL ? openssl_reason(buf, sizeof buf) : "unexpected end";
    ossl.ERR_clear_error();
    snprintf(why, whylen, handshake ? "TLS handshake failed: %s"
                                    : "TLS session failed (the node ended it): %s", reason);
    return REDLOCK_ETLS;
}

/* A connection cut before the node sent a single byte over a finished
 * handshake: with TLS 1.3 a node that refuses the session (it requires a
 * client certificate, or refuses this one) does so only after the client
 * finished, and its alert is often lost in the reset of the connection. */
static int cut_before_reply(rl_tls *t, int code, char *why, size_t whylen)
{
    if (code != REDLOCK_ENOQUORUM || t->replied)
        return code;
    char cause[64];
    snprintf(cause, sizeof cause, "%s",
             strncmp(why, "connection lost: ", 17) == 0 ? why + 17 : why);
    snprintf(why, whylen, "TLS session refused: the node cut it before any reply (%s); does it "
             "require a client certificate (tls_cert_file)?", cause);
    t->failed = true;
    return REDLOCK_ETLS;
}

int rl_tls_handshake(rl_tls *t, char *why, size_t whylen)
{
    int code = REDLOCK_ETLS;
    for (;;) {
        ossl.ERR_clear_error();
        int r = ossl.SSL_connect(t->ssl);
        int err = r == 1 ? SSL_ERROR_NONE : ossl.SSL_get_error(t->ssl, r);
        if (send_out(t, &code, why, whylen) < 0)
            return code;
        t->wants = 0;
        if (err == SSL_ERROR_NONE)
            return 1;
        if (err != SSL_ERROR_WANT_READ)
            return failure(t, err, true, why, whylen);
        int got = recv_in(t, &code, why, whylen);
        if (got > 0)
            continue;
        if (got == 0) {
            t->wants = POLLIN;
            return 0;
        }
        if (code == REDLOCK_ENOQUORUM && strstr(why, "closed by the server")) {
            /* Refused without a word: the port may not serve TLS. */
            snprintf(why, whylen, "TLS handshake failed: the node closed the connection (does "
                     "this port serve TLS?)");
            code = REDLOCK_ETLS;
        }
        t->failed = true;
        return code;
    }
}

ssize_t rl_tls_read(rl_tls *t, char *buf, size_t len, int *code, char *why, size_t whylen)
{
    for (;;) {
        ossl.ERR_clear_error();
        int r = ossl.SSL_read(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
        int err = r > 0 ? SSL_ERROR_NONE : ossl.SSL_get_error(t->ssl, r);
        /* Reading may have made something to send (a key update's answer). */
        if (send_out(t, code, why, whylen) < 0) {
            *code = cut_before_reply(t, *code, why, whylen);
            return -1;
        }
        if (r > 0) {
            t->replied = true;
            return r;
        }
        if (err != SSL_ERROR_WANT_READ) {
            *code = failure(t, err, false, why, whylen);
            return -1;
        }
        int got = recv_in(t, code, why, whylen);
        if (got < 0)
            *code = cut_before_reply(t, *code, why, whylen);
        if (got <= 0)
            return got;
    }
}

ssize_t rl_tls_write(rl_tls *t, const char *buf, size_t len, int *code, char *why,
                     size_t whylen)
{
    if (t->in_flight == 0 && len > 0) {
        ossl.ERR_clear_error();
        int r = ossl.SSL_write(t->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
        if (r <= 0) {
            int err = ossl.SSL_get_error(t->ssl, r);
            if (err == SSL_ERROR_WANT_READ)
                return 0;   /* the session reads first: the reader goes on */
            *code = failure(t, err, false, why, whylen);
            return -1;
        }
        t->in_flight = (size_t)r;
    }
    int sent = send_out(t, code, why, whylen);
    if (sent < 0)
        *code = cut_before_reply(t, *code, why, whylen);
    if (sent <= 0)
        return sent;
    size_t n = t->in_flight;
    t->in_flight = 0;
    return (ssize_t)n;
}

short rl_tls_events(const rl_tls *t)
{
    short events = t->wants;
    if (t->stage_off < t->stage_len || ossl.BIO_ctrl_pending(t->out) > 0)
        events |= POLLOUT;
    return events;
}

void rl_tls_free(rl_tls *t, bool notify)
{
    if (!t)
        return;
    if (notify && !t->failed && ossl.SSL_is_init_finished(t->ssl)) {
        int code;
        char why[8];
        ossl.ERR_clear_error();
        if (ossl.SSL_shutdown(t->ssl) >= 0)
            send_out(t, &code, why, sizeof why);
    }
    ossl.SSL_free(t->ssl);
    ossl.ERR_clear_error();
    free(t);
}

#endif /* RL_HAVE_OPENSSL */
