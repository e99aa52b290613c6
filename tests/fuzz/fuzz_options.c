/*
 * fuzz_options.c - option values (rl_options_set) from any text.
 *
 * The input is a list of records, one a line: a first byte that picks one of
 * the options by number, or, past their count, "name=value" taken as text.
 * Checked after every record: a refused value leaves every option as it was
 * and a message behind; an accepted one sets exactly its own option, to what
 * the text says (whole numbers: digits only).
 */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "fuzz.h"
#include "base.h"
#include "options.h"

typedef enum kind { WHOLE_MS, WHOLE_INT, FLAG, FRACTION, TEXT } kind;

/* Every option of core/engine/options.def, with the kind of its field. */
#define KIND_INT(size) ((size) == sizeof(int64_t) ? WHOLE_MS : WHOLE_INT)
#define KIND_BOOL(size) FLAG
#define KIND_FRACTION(size) FRACTION
#define KIND_STRING(size) TEXT
static const struct known {
    const char *name;
    kind kind;
    size_t offset;
} known[] = {
#define RL_OPTION(name, kind, field, min, max, def, help) \
    { #name, KIND_##kind(sizeof(((rl_options *)0)->field)), offsetof(rl_options, field) },
#include "options.def"
#undef RL_OPTION
};
#define N_KNOWN (sizeof known / sizeof known[0])

static const struct known *find(const char *name)
{
    for (size_t i = 0; i < N_KNOWN; i++)
        if (strcmp(known[i].name, name) == 0)
            return &known[i];
    return NULL;
}

static bool all_digits(const char *s)
{
    return s[0] != '\0' && strspn(s, "0123456789") == strlen(s);
}

/* Checks what an accepted value did, then puts the option back in `after` as
 * it was in `before`, so the caller can see that nothing else changed. */
static void check_accepted(const struct known *k, const rl_options *o, const char *value,
                           rl_options *after, const rl_options *before)
{
    const char *field = (const char *)o + k->offset;
    char *restore = (char *)after + k->offset;
    const char *saved = (const char *)before + k->offset;
    switch (k->kind) {
    case WHOLE_MS: {
        int64_t v;
        memcpy(&v, field, sizeof v);
        CHECK(all_digits(value) && v == strtoll(value, NULL, 10));
        memcpy(restore, saved, sizeof v);
        break;
    }
    case WHOLE_INT: {
        int v;
        memcpy(&v, field, sizeof v);
        CHECK(all_digits(value) && v == strtoll(value, NULL, 10));
        memcpy(restore, saved, sizeof v);
        break;
    }
    case FLAG: {
        bool v;
        memcpy(&v, field, sizeof v);
        CHECK(all_digits(value) && v == (strtoll(value, NULL, 10) == 1));
        memcpy(restore, saved, sizeof v);
        break;
    }
    case FRACTION: {
        double v;
        memcpy(&v, field, sizeof v);
        CHECK(isfinite(v) && v >= 0.0 && v < 1.0 && v == strtod(value, NULL));
        memcpy(restore, saved, sizeof v);
        break;
    }
    case TEXT: {
        char *v;
        memcpy(&v, field, sizeof v);
        CHECK(strcmp(v, value) == 0 && strlen(v) < REDLOCK_MAX_NAME_BYTES);
        if (k->offset == offsetof(rl_options, key_prefix)) {
            CHECK(o->key_prefix_len == strlen(value));
            after->key_prefix_len = before->key_prefix_len;
        }
        memcpy(restore, saved, sizeof v);
        break;
    }
    }
}

static void set_one(rl_options *o, const char *name, const char *value)
{
    rl_options before, after;
    memcpy(&before, o, sizeof before);
    char *old_prefix = strdup(o->key_prefix);
    CHECK(old_prefix != NULL);

    rl_clear_error();
    int rc = rl_options_set(o, name, value);
    memcpy(&after, o, sizeof after);
    if (rc == REDLOCK_OK) {
        const struct known *k = find(name);
        CHECK(k != NULL);
        check_accepted(k, o, value, &after, &before);
        /* What follows (options.c): setting watchdog_lease_ms marks it set;
         * unset, it is its default or max_lease_ms, whichever is less. */
        if (k->offset == offsetof(rl_options, watchdog_lease_ms)) {
            CHECK(o->watchdog_lease_set);
            after.watchdog_lease_set = before.watchdog_lease_set;
        }
        if (!o->watchdog_lease_set) {
            CHECK(o->watchdog_lease_ms == (o->max_lease_ms < 30000 ? o->max_lease_ms : 30000));
            after.watchdog_lease_ms = before.watchdog_lease_ms;
        }
    } else {
        CHECK(rc == REDLOCK_EINVAL || rc == REDLOCK_ENOMEM);
        CHECK(redlock_errmsg()[0] != '\0');
        CHECK(strcmp(o->key_prefix, old_prefix) == 0);
    }
    CHECK(memcmp(&after, &before, sizeof after) == 0);
    free(old_prefix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    rl_options o;
    CHECK(rl_options_init(&o) == REDLOCK_OK);
    char *text = malloc(size + 1);
    CHECK(text != NULL);
    memcpy(text, data, size);
    text[size] = '\0';

    size_t pos = 0;
    while (pos < size) {
        size_t end = pos;
        while (end < size && text[end] != '\n')
            end++;
        text[end] = '\0';
        unsigned char pick = (unsigned char)text[pos];
        char *record = pos < end ? text + pos + 1 : text + end;
        if (pick < N_KNOWN) {
            set_one(&o, known[pick].name, record);
        } else {
            char *eq = strchr(record, '=');
            if (eq)
                *eq = '\0';
            set_one(&o, record, eq ? eq + 1 : "");
        }
        pos = end + 1;
    }
    free(text);
    rl_options_free(&o);
    return 0;
}
