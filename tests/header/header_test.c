/*
 * header_test.c - compiled as strict C99 and as C++11: redlock.h and
 * redlock_engine.h must stand on their own, survive a second inclusion, and
 * declare the API with exactly these signatures.
 */
#include "redlock.h"
#include "redlock.h"
#include "redlock_engine.h"
#include "redlock_engine.h"

int header_test(int code);

/* Each status code is a distinct integer constant: a duplicate value would
 * be a duplicate case label. */
int header_test(int code)
{
    int (*ctx_new)(redlock_ctx **, const char *const *, size_t) = redlock_ctx_new;
    int (*set_option)(redlock_ctx *, const char *, const char *) = redlock_ctx_set_option;
    void (*ctx_free)(redlock_ctx *) = redlock_ctx_free;
    int (*lock)(redlock_handle **, redlock_ctx *, const char *, int64_t, int64_t) = redlock_lock;
    int (*lock_multi)(redlock_handle **, redlock_ctx *, const char *const *, size_t, int64_t,
                      int64_t) = redlock_lock_multi;
    int (*extend)(redlock_handle *, int64_t) = redlock_extend;
    int (*unlock)(redlock_handle *) = redlock_unlock;
    void (*handle_free)(redlock_handle *) = redlock_handle_free;
    int64_t (*validity)(const redlock_handle *) = redlock_handle_validity_ms;
    const char *(*token)(const redlock_handle *) = redlock_handle_token;
    const char *(*str_error)(int) = redlock_strerror;
    const char *(*errmsg)(void) = redlock_errmsg;
    const char *(*version_string)(void) = redlock_version_string;
    int (*version_number)(void) = redlock_version_number;
    int (*get_option)(const redlock_ctx *, const char *, char *, size_t) = redlock_ctx_get_option;
    void (*set_check)(redlock_interrupt_fn, void *) = redlock_set_interrupt_check;
    int (*op_lock)(redlock_op **, redlock_ctx *, const char *const *, size_t, int64_t, int64_t,
                   int64_t) = redlock_op_lock;
    int (*conn_received)(redlock_conn *, const char *, size_t, int64_t) = redlock_conn_received;
    size_t (*conn_output)(const redlock_conn *, const char **) = redlock_conn_output;
    const void *all[] = {
        (const void *)&get_option, (const void *)&set_check, (const void *)&op_lock,
        (const void *)&conn_received, (const void *)&conn_output,
        (const void *)&ctx_new, (const void *)&set_option, (const void *)&ctx_free,
        (const void *)&lock, (const void *)&lock_multi, (const void *)&extend,
        (const void *)&unlock, (const void *)&handle_free, (const void *)&validity,
        (const void *)&token, (const void *)&str_error, (const void *)&errmsg,
        (const void *)&version_string, (const void *)&version_number,
    };
    int64_t limits[] = {REDLOCK_MAX_NODES, REDLOCK_MAX_RESOURCES, REDLOCK_MAX_NAME_BYTES,
                        REDLOCK_MAX_TTL_MS, REDLOCK_VERSION_NUMBER};
    const char *version = REDLOCK_VERSION_STRING;

    switch (code) {
    case REDLOCK_OK:
    case REDLOCK_ELOCKED:
    case REDLOCK_ENOQUORUM:
    case REDLOCK_ENOTHELD:
    case REDLOCK_EINVAL:
    case REDLOCK_ENOMEM:
    case REDLOCK_EEXPIRED:
    case REDLOCK_EUNSUPPORTED:
    case REDLOCK_EAUTH:
    case REDLOCK_EWRONGTYPE:
    case REDLOCK_EREDIS:
    case REDLOCK_ESYSTEM:
    case REDLOCK_ECANCELED:
    case REDLOCK_ETLS:
    case REDLOCK_ENOPERM:
        return all[0] != NULL && limits[0] > 0 && version[0] != '\0';
    default:
        return 0;
    }
}
