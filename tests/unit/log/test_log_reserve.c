/* Block reservation ahead of appends in the active segment: the file keeps
 * its exact size and contents while blocks are reserved past the end, the
 * reservation is bounded, released on seal, close and truncate, and a crash
 * with blocks still reserved recovers exactly the written data. These tests
 * read st_blocks, so they assume a filesystem with fallocate (ext4, xfs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "log/log_segment.h"
#include "log_test_util.h"

/* Extent-tree blocks count in st_blocks too. */
#define METADATA_SLACK (64 * 1024)
#define STEP LOG_SEGMENT_RESERVE_STEP

static char *g_dir;
static bool g_can_fallocate;

static int setup(void **state)
{
    (void)state;
    g_dir = test_make_dir();
    if (!g_dir)
        return -1;
    /* On a filesystem without fallocate (tmpfs before 3.5, some network
     * filesystems) reservation is off by design: nothing to check. */
    char probe[512];
    snprintf(probe, sizeof probe, "%s/probe", g_dir);
    int fd = open(probe, O_RDWR | O_CREAT, 0644);
    g_can_fallocate = fd >= 0 && fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
    if (fd >= 0)
        close(fd);
    unlink(probe);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_remove_tree(g_dir);
    free(g_dir);
    return 0;
}

static int64_t round_up(int64_t v, int64_t to)
{
    return (v + to - 1) / to * to;
}

static void log_path(char *out, size_t n)
{
    snprintf(out, n, "%s/%020d.log", g_dir, 0);
}

static int64_t allocated_bytes(void)
{
    char path[512];
    struct stat st;
    log_path(path, sizeof path);
    assert_int_equal(stat(path, &st), 0);
    return (int64_t)st.st_blocks * 512;
}

/* True when the file holds no blocks past its data (rounded to a block),
 * beyond the extent tree's own. */
static bool holds_only_data(int64_t len)
{
    return allocated_bytes() <= round_up(len, 4096) + METADATA_SLACK;
}

/* Everything written so far, to compare with the file. */
struct written {
    uint8_t *data;
    size_t len, cap;
};

static struct log_config reserve_config(int64_t segment_bytes, bool preallocate)
{
    struct log_config cfg;
    log_config_defaults(&cfg);
    cfg.segment_bytes = segment_bytes;
    cfg.preallocate = preallocate;
    return cfg;
}

static struct log_segment *create_or_fail(const struct log_config *cfg)
{
    struct log_segment *seg = NULL;
    char err[256] = "";
    if (log_segment_create(g_dir, 0, cfg, 0, &seg, err, sizeof err) != 0)
        fail_msg("create: %s", err);
    return seg;
}

/* Append one batch of 64 records of 4 KiB (~260 KiB) at the segment's end. */
static void append_batch(struct log_segment *seg, const struct log_config *cfg, struct written *w)
{
    size_t len;
    uint8_t *b = test_batch(64, 1000 + seg->next_offset, 4096, &len);
    assert_non_null(b);
    record_batch_set_base_offset(b, seg->next_offset);
    assert_int_equal(log_segment_write(seg, b, len), 0);
    assert_int_equal(log_segment_commit(seg, b, len, cfg), 0);
    if (w) {
        if (w->len + len > w->cap) {
            w->cap = (w->len + len) * 2;
            w->data = realloc(w->data, w->cap);
            assert_non_null(w->data);
        }
        memcpy(w->data + w->len, b, len);
        w->len += len;
    }
    free(b);
}

static void assert_file_holds(const struct written *w)
{
    char path[512];
    log_path(path, sizeof path);
    assert_int_equal(test_file_size(path), (int64_t)w->len);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    uint8_t *buf = malloc(w->len + 1);
    assert_int_equal(pread(fd, buf, w->len + 1, 0), (ssize_t)w->len);
    close(fd);
    assert_memory_equal(buf, w->data, w->len);
    free(buf);
}

static void test_appends_keep_a_bounded_reservation(void **state)
{
    if (!g_can_fallocate)
        skip();
    (void)state;
    struct log_config cfg = reserve_config(1 << 30, false);
    struct log_segment *seg = create_or_fail(&cfg);
    struct written w = {0};
    while (w.len < 3 * STEP + STEP / 2) {
        append_batch(seg, &cfg, &w);
        int64_t blocks = allocated_bytes();
        if (w.len < STEP) {
            /* Nothing reserved before a step of data. */
            assert_true(blocks <= round_up((int64_t)w.len, 4096) + METADATA_SLACK);
            continue;
        }
        /* At least half a step ahead of the data, at most one and a half. */
        assert_true(blocks >= (int64_t)w.len + STEP / 2);
        assert_true(blocks <= (int64_t)w.len + STEP + STEP / 2 + METADATA_SLACK);
    }
    assert_int_equal(seg->size, (int64_t)w.len);
    assert_file_holds(&w);
    /* Read back from the disk, not the page cache: data written into
     * reserved (unwritten) blocks must be converted on writeback. */
    assert_int_equal(log_segment_flush_data(seg), 0);
    assert_int_equal(posix_fadvise(seg->log_fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    assert_file_holds(&w);
    log_segment_close(seg, false);
    free(w.data);
}

/* Twenty 260 KiB batches: past the first step, so blocks are reserved
 * beyond the data. */
static void append_past_a_step(struct log_segment *seg, const struct log_config *cfg, struct written *w)
{
    for (int i = 0; i < 20; i++)
        append_batch(seg, cfg, w);
    assert_false(holds_only_data((int64_t)w->len));
}

static void test_seal_releases_and_keeps_mtime(void **state)
{
    if (!g_can_fallocate)
        skip();
    (void)state;
    struct log_config cfg = reserve_config(1 << 30, false);
    struct log_segment *seg = create_or_fail(&cfg);
    struct written w = {0};
    append_past_a_step(seg, &cfg, &w);
    const struct timespec old[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    assert_int_equal(futimens(seg->log_fd, old), 0);

    assert_int_equal(log_segment_seal(seg), 0);
    assert_true(holds_only_data((int64_t)w.len));
    struct stat st;
    assert_int_equal(fstat(seg->log_fd, &st), 0);
    assert_int_equal(st.st_mtim.tv_sec, 1000000000);
    assert_file_holds(&w);
    log_segment_close(seg, false);
    free(w.data);
}

static void test_close_releases(void **state)
{
    if (!g_can_fallocate)
        skip();
    (void)state;
    struct log_config cfg = reserve_config(1 << 30, false);
    struct log_segment *seg = create_or_fail(&cfg);
    struct written w = {0};
    append_past_a_step(seg, &cfg, &w);
    log_segment_close(seg, false);
    assert_true(holds_only_data((int64_t)w.len));
    assert_file_holds(&w);
    free(w.data);
}

static void test_truncate_releases_then_reserves_again(void **state)
{
    if (!g_can_fallocate)
        skip();
    (void)state;
    struct log_config cfg = reserve_config(1 << 30, false);
    struct log_segment *seg = create_or_fail(&cfg);
    struct written w = {0};
    for (int i = 0; i < 30; i++)
        append_batch(seg, &cfg, &w);
    /* Batches hold 64 offsets each: keep the first twenty (over a step). */
    assert_int_equal(log_segment_truncate_to(seg, 20 * 64, &cfg), 0);
    w.len = (size_t)seg->size;
    assert_int_equal(seg->next_offset, 20 * 64);
    assert_true(holds_only_data((int64_t)w.len));
    assert_file_holds(&w);

    append_batch(seg, &cfg, &w);
    assert_true(allocated_bytes() >= (int64_t)w.len + STEP / 2);
    assert_file_holds(&w);
    log_segment_close(seg, false);
    free(w.data);
}

static void test_reservation_stops_at_segment_bytes(void **state)
{
    if (!g_can_fallocate)
        skip();
    (void)state;
    struct log_config cfg = reserve_config(STEP + STEP / 4, false);
    struct log_segment *seg = create_or_fail(&cfg);
    while (seg->size < STEP) {
        append_batch(seg, &cfg, NULL);
        if (seg->size < STEP)
            assert_true(holds_only_data(seg->size));
    }
    assert_true(allocated_bytes() <= cfg.segment_bytes + METADATA_SLACK);
    assert_true(allocated_bytes() >= cfg.segment_bytes);
    log_segment_close(seg, false);
}

static void test_preallocate_reserves_whole_segment_until_seal(void **state)
{
    if (!g_can_fallocate)
        skip();
    (void)state;
    struct log_config cfg = reserve_config(6 * STEP, true);
    struct log_segment *seg = create_or_fail(&cfg);
    struct written w = {0};
    append_batch(seg, &cfg, &w);
    assert_true(allocated_bytes() >= cfg.segment_bytes);
    assert_int_equal(log_segment_seal(seg), 0);
    assert_true(holds_only_data((int64_t)w.len));
    assert_file_holds(&w);
    log_segment_close(seg, false);
    free(w.data);
}

/* A child appends and dies without closing anything, blocks still reserved
 * past the end and (with torn) half a batch after the last whole one; the
 * reopened segment holds exactly the whole batches. */
static void crash_and_recover(bool torn)
{
    struct log_config cfg = reserve_config(1 << 30, false);
    struct written w = {0};
    int batches = 3 * STEP / (260 * 1024);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        struct log_segment *seg = NULL;
        char err[256];
        if (log_segment_create(g_dir, 0, &cfg, 0, &seg, err, sizeof err) != 0)
            _exit(1);
        for (int i = 0; i < batches; i++)
            append_batch(seg, &cfg, NULL);
        if (torn) {
            size_t len;
            uint8_t *b = test_batch(64, 1, 4096, &len);
            if (pwrite(seg->log_fd, b, len / 2, seg->size) != (ssize_t)(len / 2))
                _exit(1);
        }
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    /* The same batches again, in memory, to compare with. */
    struct log_segment shadow = {.next_offset = 0};
    for (int i = 0; i < batches; i++) {
        size_t len;
        uint8_t *b = test_batch(64, 1000 + shadow.next_offset, 4096, &len);
        record_batch_set_base_offset(b, shadow.next_offset);
        w.data = realloc(w.data, w.len + len);
        memcpy(w.data + w.len, b, len);
        w.len += len;
        shadow.next_offset += 64;
        free(b);
    }
    assert_true(allocated_bytes() >= (int64_t)w.len + STEP / 2);

    struct log_segment *seg = NULL;
    bool truncated = false;
    char err[256] = "";
    if (log_segment_open(g_dir, 0, &cfg, true, true, 0, &seg, &truncated, err, sizeof err) != 0)
        fail_msg("open: %s", err);
    assert_int_equal(truncated, torn);
    assert_int_equal(seg->size, (int64_t)w.len);
    assert_int_equal(seg->next_offset, (int64_t)batches * 64);
    assert_file_holds(&w);

    /* Still the active segment: appends go on and close releases. */
    append_batch(seg, &cfg, &w);
    log_segment_close(seg, false);
    assert_file_holds(&w);
    assert_true(holds_only_data((int64_t)w.len));
    free(w.data);
}

static void test_crash_with_reservation_recovers(void **state)
{
    if (!g_can_fallocate)
        skip();
    (void)state;
    crash_and_recover(false);
}

static void test_crash_with_torn_tail_recovers(void **state)
{
    if (!g_can_fallocate)
        skip();
    (void)state;
    crash_and_recover(true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_appends_keep_a_bounded_reservation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_seal_releases_and_keeps_mtime, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_releases, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_releases_then_reserves_again, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reservation_stops_at_segment_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_preallocate_reserves_whole_segment_until_seal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_with_reservation_recovers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_with_torn_tail_recovers, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
