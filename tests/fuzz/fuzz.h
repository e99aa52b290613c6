/*
 * fuzz.h - what the fuzz targets share: a check that aborts with the failed
 * condition, so libFuzzer saves the input that broke it.
 */
#ifndef REDLOCK_FUZZ_H
#define REDLOCK_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                             \
        }                                                                        \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* REDLOCK_FUZZ_H */
