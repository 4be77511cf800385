/* Log manager start-up with num.recovery.threads.per.data.dir > 1: an
 * unclean data dir of many partitions (some with a torn or corrupt tail,
 * one that cannot be opened) loads to the same partitions, offsets and
 * bytes with one thread and with several, and reports the same errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "log/log_manager.h"
#include "log_test_util.h"
#include "protocol/generated/errors.h"

#define PARTITIONS 40
#define TOPIC "recover-me"

static char *g_root;
static char g_pristine[512]; /* the unclean data dir, never opened by the tests */
static char g_work[512];     /* a copy of it that each load recovers (and modifies) */
static size_t g_batch_len;   /* every batch appended has this size */

/* What loading the copy gave, per partition index (-1 when not loaded). */
struct load_outcome {
    int rc;
    size_t count;
    int64_t start[PARTITIONS];
    int64_t end[PARTITIONS];
    uint64_t digest[PARTITIONS]; /* FNV-1a of every stored byte, in offset order */
    int64_t batches[PARTITIONS];
    char *error_lines; /* the "cannot load" lines logged, timestamps removed */
};

static int batches_for(int p)
{
    return 3 + p % 11;
}

static void append_batches(struct partition_log *log, int count)
{
    for (int i = 0; i < count; i++) {
        size_t len;
        uint8_t *b = test_batch(2, 1000 + i, 100, &len);
        assert_non_null(b);
        g_batch_len = len;
        struct log_append_result res;
        assert_int_equal(partition_log_append(log, b, len, 0, &res), KAFKA_ERR_NONE);
        free(b);
    }
}

static void segment_path(char *buf, size_t len, const char *dir, int p, int64_t base, const char *ext)
{
    snprintf(buf, len, "%s/" TOPIC "-%d/%020lld%s", dir, p, (long long)base, ext);
}

static struct log_config small_segments(void)
{
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = 2048; /* several segments per partition */
    return cfg;
}

static struct log_manager_config manager_config(int32_t threads)
{
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    mcfg.recovery_threads_per_data_dir = threads;
    return mcfg;
}

/* Fill the pristine dir and stop without the clean-shutdown marker; the
 * recovery checkpoint written at open is empty, so every segment is
 * rescanned at the next start. */
static int setup(void **state)
{
    (void)state;
    g_root = test_make_dir();
    if (!g_root)
        return -1;
    snprintf(g_pristine, sizeof g_pristine, "%s/pristine", g_root);
    snprintf(g_work, sizeof g_work, "%s/work", g_root);
    struct log_config cfg = small_segments();
    struct log_manager_config mcfg = manager_config(1);
    const char *dirs[] = {g_pristine};
    struct log_manager *m = NULL;
    char err[256];
    if (log_manager_open(dirs, 1, &cfg, &mcfg, &m, err, sizeof err) != 0)
        return -1;
    for (int p = 0; p < PARTITIONS; p++) {
        struct partition_log *log;
        if (log_manager_create(m, TOPIC, p, NULL, NULL, &log, err, sizeof err) != 0)
            return -1;
        append_batches(log, batches_for(p));
        partition_log_close(log);
    }
    log_manager_close(m, false);
    char path[1024];
    /* A torn write at the end of every fifth partition. */
    for (int p = 0; p < PARTITIONS; p += 5) {
        int64_t last_base = 0;
        for (int64_t base = 0; base < 2 * batches_for(p); base++) {
            segment_path(path, sizeof path, g_pristine, p, base, ".log");
            if (access(path, F_OK) == 0)
                last_base = base;
        }
        segment_path(path, sizeof path, g_pristine, p, last_base, ".log");
        FILE *fp = fopen(path, "ab");
        if (!fp)
            return -1;
        fputs("torn write torn write torn write torn write", fp);
        fclose(fp);
    }
    /* A flipped byte in the second batch of partitions 3, 17 and 31: everything
     * from there on, later segments included, is cut. */
    for (int p = 3; p < PARTITIONS; p += 14) {
        segment_path(path, sizeof path, g_pristine, p, 0, ".log");
        FILE *fp = fopen(path, "r+b");
        if (!fp || fseek(fp, (long)(g_batch_len + 80), SEEK_SET) != 0) {
            if (fp)
                fclose(fp);
            return -1;
        }
        int c = fgetc(fp);
        fseek(fp, (long)(g_batch_len + 80), SEEK_SET);
        fputc(c ^ 0x5a, fp);
        fclose(fp);
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_remove_tree(g_root);
    free(g_root);
    return 0;
}

static void copy_pristine(void)
{
    test_remove_tree(g_work);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "cp -a '%s' '%s'", g_pristine, g_work);
    assert_int_equal(system(cmd), 0);
}

/* The partition's first offset index becomes a directory: opening it then
 * fails whatever the thread count. */
static void break_partition(int p)
{
    char path[1024];
    segment_path(path, sizeof path, g_work, p, 0, ".index");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkdir(path, 0755), 0);
}

static void digest_partition(struct partition_log *log, struct load_outcome *o, int p)
{
    uint64_t h = 1469598103934665603ull;
    int64_t offset = partition_log_start_offset(log), end = partition_log_end_offset(log);
    int64_t batches = 0;
    while (offset < end) {
        struct log_read_result r;
        assert_int_equal(partition_log_read(log, offset, 1 << 20, INT64_MAX, &r), KAFKA_ERR_NONE);
        assert_true(r.len > 0);
        uint8_t *buf = test_read_region(&r);
        assert_non_null(buf);
        for (int64_t i = 0; i < r.len; i++)
            h = (h ^ buf[i]) * 1099511628211ull;
        struct record_batch_iter it;
        const uint8_t *batch;
        size_t blen;
        record_batch_iter_init(&it, buf, (size_t)r.len);
        while (record_batch_iter_next(&it, &batch, &blen) == 1)
            batches++;
        free(buf);
        assert_true(r.next_offset > offset);
        offset = r.next_offset;
    }
    o->digest[p] = h;
    o->batches[p] = batches;
}

/* Read what fd 2 received into a string of its "cannot load" lines. */
static char *error_lines(FILE *captured)
{
    size_t cap = 4096, len = 0;
    char *out = calloc(1, cap);
    char line[2048];
    rewind(captured);
    while (fgets(line, sizeof line, captured)) {
        const char *msg = strstr(line, "cannot load ");
        if (!msg)
            continue;
        size_t n = strlen(msg);
        while (len + n + 1 > cap)
            out = realloc(out, cap *= 2);
        memcpy(out + len, msg, n + 1);
        len += n;
    }
    return out;
}

static void load_copy(int32_t threads, int broken, struct load_outcome *o)
{
    copy_pristine();
    if (broken >= 0)
        break_partition(broken);
    memset(o, 0, sizeof *o);
    struct log_config cfg = small_segments();
    struct log_manager_config mcfg = manager_config(threads);
    const char *dirs[] = {g_work};
    struct log_manager *m = NULL;
    char err[256] = "";

    FILE *captured = tmpfile();
    assert_non_null(captured);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(captured), 2) >= 0);
    o->rc = log_manager_open(dirs, 1, &cfg, &mcfg, &m, err, sizeof err);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    o->error_lines = error_lines(captured);
    fclose(captured);

    assert_int_equal(o->rc, 0);
    o->count = log_manager_partition_count(m);
    for (int p = 0; p < PARTITIONS; p++) {
        struct partition_log *log = log_manager_get(m, TOPIC, p);
        o->start[p] = o->end[p] = -1;
        if (!log)
            continue;
        o->start[p] = partition_log_start_offset(log);
        o->end[p] = partition_log_end_offset(log);
        digest_partition(log, o, p);
        partition_log_close(log);
    }
    log_manager_close(m, false);
}

static void assert_same_outcome(const struct load_outcome *a, const struct load_outcome *b)
{
    assert_int_equal(a->rc, b->rc);
    assert_int_equal(a->count, b->count);
    for (int p = 0; p < PARTITIONS; p++) {
        assert_int_equal(a->start[p], b->start[p]);
        assert_int_equal(a->end[p], b->end[p]);
        assert_int_equal(a->batches[p], b->batches[p]);
        assert_true(a->digest[p] == b->digest[p]);
    }
    assert_string_equal(a->error_lines, b->error_lines);
}

static void test_same_logs_with_one_and_four_threads(void **state)
{
    (void)state;
    struct load_outcome one, four, many;
    load_copy(1, -1, &one);
    load_copy(4, -1, &four);
    load_copy(64, -1, &many); /* more threads than partitions */
    assert_int_equal(one.count, PARTITIONS);
    for (int p = 0; p < PARTITIONS; p++) {
        bool corrupt = p % 14 == 3;
        /* Torn tails lose only the garbage; a corrupt batch loses itself
         * and everything after it. */
        int64_t expect = corrupt ? 2 : 2 * batches_for(p);
        assert_int_equal(one.end[p], expect);
        assert_int_equal(one.batches[p], expect / 2);
    }
    assert_string_equal(one.error_lines, "");
    assert_same_outcome(&one, &four);
    assert_same_outcome(&one, &many);
    free(one.error_lines);
    free(four.error_lines);
    free(many.error_lines);
}

static void test_unopenable_partition_same_error(void **state)
{
    (void)state;
    struct load_outcome one, four;
    load_copy(1, 29, &one);
    load_copy(4, 29, &four);
    assert_int_equal(one.count, PARTITIONS - 1);
    assert_int_equal(one.end[29], -1);
    char expect[1200];
    snprintf(expect, sizeof expect,
             "cannot load %s/" TOPIC "-29: cannot open segment %s/" TOPIC "-29/00000000000000000000: Is a directory\n",
             g_work, g_work);
    assert_string_equal(one.error_lines, expect);
    assert_same_outcome(&one, &four);
    free(one.error_lines);
    free(four.error_lines);
}

static void test_empty_dir_many_threads(void **state)
{
    (void)state;
    test_remove_tree(g_work);
    struct log_config cfg = small_segments();
    struct log_manager_config mcfg = manager_config(8);
    const char *dirs[] = {g_work};
    struct log_manager *m = NULL;
    char err[256];
    assert_int_equal(log_manager_open(dirs, 1, &cfg, &mcfg, &m, err, sizeof err), 0);
    assert_int_equal(log_manager_partition_count(m), 0);
    log_manager_close(m, false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_logs_with_one_and_four_threads),
        cmocka_unit_test(test_unopenable_partition_same_error),
        cmocka_unit_test(test_empty_dir_many_threads),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
