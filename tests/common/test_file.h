/* Reading a whole file back, for tests of unit and integration suites alike
 * (checkpoints, snapshots, audit files, broker logs). Header-only, so no
 * suite links anything extra. */
#ifndef CAIRN_TESTS_COMMON_TEST_FILE_H
#define CAIRN_TESTS_COMMON_TEST_FILE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* The file's bytes, NUL-terminated, malloc'd (the caller frees); the length
 * in *len when len is not NULL. NULL when it cannot be opened or read. */
static inline char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (n < cap - 1)
            break;
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    bool failed = ferror(f) != 0;
    fclose(f);
    if (!buf || failed) {
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

#endif
