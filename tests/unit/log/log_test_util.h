/* Helpers shared by the log unit tests: temp dirs, batch building, reading
 * back a returned file region. Test-only code. */
#ifndef CAIRN_TEST_LOG_TEST_UTIL_H
#define CAIRN_TEST_LOG_TEST_UTIL_H
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log/partition_log.h"
#include "protocol/record_batch.h"

static inline char *test_make_dir(void)
{
    char tmpl[] = "/tmp/cairn-log-test-XXXXXX";
    char *dir = mkdtemp(tmpl);
    if (!dir)
        return NULL;
    return strdup(dir);
}

static inline void test_remove_tree(const char *dir)
{
    char cmd[4200]; /* a path of up to PATH_MAX plus the command */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", dir);
}

/* A batch of `records` records, timestamps base_ts, base_ts+1, ..., each
 * value value_size bytes. */
static inline uint8_t *test_batch(int records, int64_t base_ts, size_t value_size, size_t *len)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, base_ts);
    uint8_t *value = malloc(value_size + 1);
    for (size_t i = 0; i < value_size; i++)
        value[i] = (uint8_t)('a' + i % 26);
    for (int i = 0; i < records; i++) {
        char key[16];
        int klen = snprintf(key, sizeof key, "key%d", i);
        record_batch_builder_add(&b, base_ts + i, key, klen, value, (int32_t)value_size, NULL, 0);
    }
    free(value);
    uint8_t *out = NULL;
    if (record_batch_builder_finish(&b, &out, len) != 0)
        return NULL;
    return out;
}

/* Read a returned region into memory (caller frees). Closes the fd. */
static inline uint8_t *test_read_region(struct log_read_result *r)
{
    if (r->len == 0)
        return NULL;
    uint8_t *buf = malloc((size_t)r->len);
    ssize_t n = pread(r->fd, buf, (size_t)r->len, r->file_pos);
    close(r->fd);
    r->fd = -1;
    if (n != r->len) {
        free(buf);
        return NULL;
    }
    return buf;
}

static inline int64_t test_file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* One partition log in a temp dir, for cmocka setups and teardowns. Owned
 * by the test running. */
struct log_fixture {
    char *dir;
    struct log_config cfg;     /* the defaults until the test changes them */
    struct partition_log *log; /* NULL until opened */
};

/* cmocka setup: a fresh dir and the default config; the log is not opened. */
static inline int log_fixture_setup(void **state)
{
    struct log_fixture *f = calloc(1, sizeof *f);
    if (!f)
        return -1;
    f->dir = test_make_dir();
    log_config_defaults(&f->cfg);
    *state = f;
    return f->dir ? 0 : -1;
}

/* cmocka setup that also opens the log (no recovery). */
static inline int log_fixture_setup_open(void **state)
{
    if (log_fixture_setup(state) != 0)
        return -1;
    struct log_fixture *f = *state;
    char err[256] = "";
    if (partition_log_open(f->dir, &f->cfg, false, &f->log, err, sizeof err) != 0) {
        fprintf(stderr, "open failed: %s\n", err);
        return -1;
    }
    return 0;
}

static inline int log_fixture_teardown(void **state)
{
    struct log_fixture *f = *state;
    if (!f)
        return 0;
    if (f->log)
        partition_log_close(f->log);
    if (f->dir) {
        test_remove_tree(f->dir);
        free(f->dir);
    }
    free(f);
    return 0;
}

/* A cmocka test entry on a fixture whose log is closed / open. */
#define LOG_FIXTURE_TEST(fn) cmocka_unit_test_setup_teardown(fn, log_fixture_setup, log_fixture_teardown)
#define LOG_FIXTURE_TEST_OPEN(fn) cmocka_unit_test_setup_teardown(fn, log_fixture_setup_open, log_fixture_teardown)

#endif
