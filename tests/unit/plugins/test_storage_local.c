/* The storage-local plugin, loaded with dlopen into a test host, against a
 * real temporary directory: the layout a person lists, ranged reads,
 * indexes, a missing transaction index, idempotent delete, no temp files
 * left behind, and refusal of a topic name that would leave the root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_host.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Owned by the test's main thread. */
static struct test_host sl_host;
static char sl_root[128];
static char sl_src[256];

struct sl_buffer {
    uint8_t *data;
    size_t len;
    int stop_after; /* >0: fail the write call number stop_after */
    int calls;
};

static int sl_buffer_write(void *ctx, const uint8_t *data, size_t len)
{
    struct sl_buffer *buf = ctx;
    if (buf->stop_after > 0 && ++buf->calls >= buf->stop_after)
        return CAIRN_ERROR;
    buf->data = realloc(buf->data, buf->len + len);
    assert_non_null(buf->data);
    memcpy(buf->data + buf->len, data, len);
    buf->len += len;
    return CAIRN_OK;
}

static void sl_write_file(const char *path, const uint8_t *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static void sl_rm_rf(const char *path)
{
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
    assert_int_equal(system(cmd), 0);
}

static int sl_setup(void **state)
{
    (void)state;
    snprintf(sl_root, sizeof(sl_root), "/tmp/cairn-sl-XXXXXX");
    assert_non_null(mkdtemp(sl_root));
    snprintf(sl_src, sizeof(sl_src), "%s-src", sl_root);
    assert_int_equal(mkdir(sl_src, 0755), 0);
    char store[300];
    snprintf(store, sizeof(store), "%s/store", sl_root);
    test_host_load(&sl_host, "storage-local");
    test_host_set(&sl_host, "dir", store);
    char err[512] = "";
    if (test_host_init(&sl_host, err, sizeof(err)) != CAIRN_OK)
        fail_msg("init: %s", err);
    return 0;
}

static int sl_teardown(void **state)
{
    (void)state;
    test_host_unload(&sl_host);
    sl_rm_rf(sl_root);
    sl_rm_rf(sl_src);
    return 0;
}

static const struct cairn_remote_storage_vtable *sl_vt(void)
{
    return sl_host.descriptor->remote_storage;
}

static struct cairn_remote_segment sl_segment(const char *topic, int64_t base)
{
    struct cairn_remote_segment seg = {
        .struct_size = sizeof(seg),
        .topic = topic,
        .partition = 3,
        .start_offset = base,
        .end_offset = base + 99,
    };
    for (int i = 0; i < 16; i++) {
        seg.topic_id[i] = (uint8_t)(0xa0 + i);
        seg.segment_id[i] = (uint8_t)(base + i);
    }
    return seg;
}

/* Writes a log of n bytes (byte i = i*7) and small index files. */
static struct cairn_remote_segment_files sl_files(size_t n, bool with_txn)
{
    static char log[300], idx[300], tidx[300], txn[300], snap[300];
    uint8_t *data = malloc(n);
    assert_non_null(data);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 7);
    snprintf(log, sizeof(log), "%s/seg.log", sl_src);
    snprintf(idx, sizeof(idx), "%s/seg.index", sl_src);
    snprintf(tidx, sizeof(tidx), "%s/seg.timeindex", sl_src);
    snprintf(txn, sizeof(txn), "%s/seg.txnindex", sl_src);
    snprintf(snap, sizeof(snap), "%s/seg.snapshot", sl_src);
    sl_write_file(log, data, n);
    sl_write_file(idx, (const uint8_t *)"offset-index", 12);
    sl_write_file(tidx, (const uint8_t *)"time-index", 10);
    sl_write_file(txn, (const uint8_t *)"txn", 3);
    sl_write_file(snap, (const uint8_t *)"snapshot!", 9);
    free(data);
    static const uint8_t checkpoint[] = "0\n1\n5 100\n";
    struct cairn_remote_segment_files files = {
        .struct_size = sizeof(files),
        .log_path = log,
        .offset_index_path = idx,
        .time_index_path = tidx,
        .txn_index_path = with_txn ? txn : NULL,
        .producer_snapshot_path = snap,
        .leader_epoch_checkpoint = checkpoint,
        .leader_epoch_checkpoint_len = sizeof(checkpoint) - 1,
    };
    return files;
}

static void sl_copy_ok(const struct cairn_remote_segment *seg, const struct cairn_remote_segment_files *files)
{
    uint8_t custom[128];
    size_t custom_len = sizeof(custom);
    char err[512] = "";
    int status = sl_vt()->copy_segment(sl_host.instance, seg, files, custom, &custom_len, err, sizeof(err));
    if (status != CAIRN_OK)
        fail_msg("copy_segment: %d %s", status, err);
    assert_int_equal(custom_len, 0);
}

static int sl_count_entries(const char *dir, const char *containing)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strstr(e->d_name, containing))
            n++;
    closedir(d);
    return n;
}

static void test_copy_layout_and_fetch(void **state)
{
    (void)state;
    struct cairn_remote_segment seg = sl_segment("orders.v1", 1200);
    struct cairn_remote_segment_files files = sl_files(700000, true);
    sl_copy_ok(&seg, &files);

    char dir[512];
    snprintf(dir, sizeof(dir), "%s/store/orders.v1-3/a0a1a2a3a4a5a6a7a8a9aaabacadaeaf", sl_root);
    const char *kinds[] = {"log", "index", "timeindex", "txnindex", "snapshot", "leader-epoch-checkpoint"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        char path[700];
        snprintf(path, sizeof(path), "%s/00000000000000001200-b0b1b2b3b4b5b6b7b8b9babbbcbdbebf.%s", dir, kinds[i]);
        struct stat st;
        if (stat(path, &st) != 0)
            fail_msg("missing %s", path);
    }
    assert_int_equal(sl_count_entries(dir, ".tmp"), 0);
    assert_int_equal(sl_count_entries(dir, ""), 6);

    /* A range across several read chunks, byte for byte. */
    struct sl_buffer buf = {0};
    char err[512] = "";
    struct cairn_byte_sink sink = {sizeof(sink), &buf, sl_buffer_write};
    assert_int_equal(sl_vt()->fetch_segment(sl_host.instance, &seg, 1000, 600001, &sink, err, sizeof(err)), CAIRN_OK);
    assert_int_equal(buf.len, 599001);
    for (size_t i = 0; i < buf.len; i++)
        if (buf.data[i] != (uint8_t)((i + 1000) * 7))
            fail_msg("byte %zu differs", i);
    free(buf.data);

    /* To the end. */
    memset(&buf, 0, sizeof(buf));
    assert_int_equal(sl_vt()->fetch_segment(sl_host.instance, &seg, 699990, -1, &sink, err, sizeof(err)), CAIRN_OK);
    assert_int_equal(buf.len, 10);
    assert_int_equal(buf.data[0], (uint8_t)(699990 * 7));
    free(buf.data);

    /* A start beyond the end is refused, not an empty success. */
    memset(&buf, 0, sizeof(buf));
    assert_int_equal(sl_vt()->fetch_segment(sl_host.instance, &seg, 700001, -1, &sink, err, sizeof(err)),
                     CAIRN_INVALID);
    free(buf.data);

    struct {
        int32_t type;
        const char *content;
    } indexes[] = {
        {CAIRN_REMOTE_INDEX_OFFSET, "offset-index"},
        {CAIRN_REMOTE_INDEX_TIMESTAMP, "time-index"},
        {CAIRN_REMOTE_INDEX_TRANSACTION, "txn"},
        {CAIRN_REMOTE_INDEX_PRODUCER_SNAPSHOT, "snapshot!"},
        {CAIRN_REMOTE_INDEX_LEADER_EPOCH, "0\n1\n5 100\n"},
    };
    for (size_t i = 0; i < sizeof(indexes) / sizeof(indexes[0]); i++) {
        memset(&buf, 0, sizeof(buf));
        assert_int_equal(sl_vt()->fetch_index(sl_host.instance, &seg, indexes[i].type, &sink, err, sizeof(err)),
                         CAIRN_OK);
        assert_int_equal(buf.len, strlen(indexes[i].content));
        assert_memory_equal(buf.data, indexes[i].content, buf.len);
        free(buf.data);
    }
    memset(&buf, 0, sizeof(buf));
    assert_int_equal(sl_vt()->fetch_index(sl_host.instance, &seg, 99, &sink, err, sizeof(err)), CAIRN_NOT_FOUND);
    assert_int_equal(test_host_metric(&sl_host, "bytes_written"), 700000 + 12 + 10 + 3 + 9 + 10);
}

static void test_no_txn_index_is_not_found(void **state)
{
    (void)state;
    struct cairn_remote_segment seg = sl_segment("clicks", 0);
    struct cairn_remote_segment_files files = sl_files(100, false);
    sl_copy_ok(&seg, &files);
    struct sl_buffer buf = {0};
    struct cairn_byte_sink sink = {sizeof(sink), &buf, sl_buffer_write};
    char err[512] = "";
    assert_int_equal(
        sl_vt()->fetch_index(sl_host.instance, &seg, CAIRN_REMOTE_INDEX_TRANSACTION, &sink, err, sizeof(err)),
        CAIRN_NOT_FOUND);
    assert_int_equal(buf.len, 0);
}

static void test_missing_segment_and_sink_stop(void **state)
{
    (void)state;
    struct cairn_remote_segment never = sl_segment("ghost", 5);
    struct sl_buffer buf = {0};
    struct cairn_byte_sink sink = {sizeof(sink), &buf, sl_buffer_write};
    char err[512] = "";
    assert_int_equal(sl_vt()->fetch_segment(sl_host.instance, &never, 0, -1, &sink, err, sizeof(err)), CAIRN_NOT_FOUND);
    assert_non_null(strstr(err, "ghost"));

    /* A reader that goes away stops the transfer with its own status. */
    struct cairn_remote_segment seg = sl_segment("big", 0);
    struct cairn_remote_segment_files files = sl_files(1 << 20, false);
    sl_copy_ok(&seg, &files);
    buf.stop_after = 2;
    assert_int_equal(sl_vt()->fetch_segment(sl_host.instance, &seg, 0, -1, &sink, err, sizeof(err)), CAIRN_ERROR);
    assert_true(buf.len < (1 << 20));
    free(buf.data);
}

static void test_delete_is_idempotent_and_cleans_dirs(void **state)
{
    (void)state;
    struct cairn_remote_segment a = sl_segment("gone", 0);
    struct cairn_remote_segment b = sl_segment("gone", 100);
    struct cairn_remote_segment_files files = sl_files(50, true);
    sl_copy_ok(&a, &files);
    sl_copy_ok(&b, &files);
    char err[512] = "";
    char part[400];
    snprintf(part, sizeof(part), "%s/store/gone-3", sl_root);
    assert_int_equal(sl_vt()->delete_segment(sl_host.instance, &a, err, sizeof(err)), CAIRN_OK);
    assert_int_equal(sl_count_entries(part, ""), 1); /* b's folder stays */
    assert_int_equal(sl_vt()->delete_segment(sl_host.instance, &a, err, sizeof(err)), CAIRN_OK);
    assert_int_equal(sl_vt()->delete_segment(sl_host.instance, &b, err, sizeof(err)), CAIRN_OK);
    struct stat st;
    assert_int_not_equal(stat(part, &st), 0);
    struct cairn_remote_segment never = sl_segment("never-copied", 0);
    assert_int_equal(sl_vt()->delete_segment(sl_host.instance, &never, err, sizeof(err)), CAIRN_OK);
}

/* A copy cut short by a crash leaves <object>.tmp files and no .log; the
 * broker deletes that unfinished copy with delete_segment, which must take
 * the .tmp files too, or they stay in the store for good. */
static void test_delete_takes_a_cut_copy(void **state)
{
    (void)state;
    struct cairn_remote_segment seg = sl_segment("cut", 40);
    struct cairn_remote_segment_files files = sl_files(80, false);
    sl_copy_ok(&seg, &files);
    char part[400], folder[700], path[1000], moved[1100];
    snprintf(part, sizeof(part), "%s/store/cut-3", sl_root);
    DIR *d = opendir(part);
    assert_non_null(d);
    struct dirent *e;
    folder[0] = '\0';
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            snprintf(folder, sizeof(folder), "%s/%s", part, e->d_name);
    closedir(d);
    assert_true(folder[0] != '\0');
    /* The state a kill leaves mid-copy: the .log still a .tmp, and another
     * object half written. */
    d = opendir(folder);
    assert_non_null(d);
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        bool log = len > 4 && strcmp(e->d_name + len - 4, ".log") == 0;
        bool index = len > 6 && strcmp(e->d_name + len - 6, ".index") == 0;
        if (!log && !index)
            continue;
        snprintf(path, sizeof(path), "%s/%s", folder, e->d_name);
        snprintf(moved, sizeof(moved), "%s.tmp", path);
        if (log)
            assert_int_equal(rename(path, moved), 0);
        else
            sl_write_file(moved, (const uint8_t *)"half", 4);
    }
    closedir(d);
    assert_int_equal(sl_count_entries(folder, ".tmp"), 2);
    char err[512] = "";
    assert_int_equal(sl_vt()->delete_segment(sl_host.instance, &seg, err, sizeof(err)), CAIRN_OK);
    struct stat st;
    assert_int_not_equal(stat(part, &st), 0); /* nothing left, so no folder either */
}

static void test_recopy_replaces(void **state)
{
    (void)state;
    /* A retried copy of the same segment id overwrites atomically. */
    struct cairn_remote_segment seg = sl_segment("again", 7);
    struct cairn_remote_segment_files files = sl_files(300, false);
    sl_copy_ok(&seg, &files);
    files = sl_files(200, false);
    sl_copy_ok(&seg, &files);
    struct sl_buffer buf = {0};
    struct cairn_byte_sink sink = {sizeof(sink), &buf, sl_buffer_write};
    char err[512] = "";
    assert_int_equal(sl_vt()->fetch_segment(sl_host.instance, &seg, 0, -1, &sink, err, sizeof(err)), CAIRN_OK);
    assert_int_equal(buf.len, 200);
    free(buf.data);
}

static void test_bad_names_and_config(void **state)
{
    (void)state;
    const char *bad[] = {"..", "a/b", "", "x\n"};
    struct cairn_remote_segment_files files = sl_files(10, false);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct cairn_remote_segment seg = sl_segment(bad[i], 0);
        uint8_t custom[8];
        size_t custom_len = sizeof(custom);
        char err[512] = "";
        assert_int_equal(sl_vt()->copy_segment(sl_host.instance, &seg, &files, custom, &custom_len, err, sizeof(err)),
                         CAIRN_INVALID);
    }
    struct cairn_remote_segment neg = sl_segment("ok", -1);
    char err[512] = "";
    uint8_t custom[8];
    size_t custom_len = sizeof(custom);
    assert_int_equal(sl_vt()->copy_segment(sl_host.instance, &neg, &files, custom, &custom_len, err, sizeof(err)),
                     CAIRN_INVALID);

    /* A relative dir and a file as dir both fail init. */
    test_host_fini(&sl_host);
    test_host_clear_config(&sl_host);
    test_host_set(&sl_host, "dir", "relative/path");
    assert_int_equal(test_host_init(&sl_host, err, sizeof(err)), CAIRN_ERROR);
    assert_non_null(strstr(err, "absolute"));
    char file[400];
    snprintf(file, sizeof(file), "%s/plainfile", sl_src);
    sl_write_file(file, (const uint8_t *)"x", 1);
    test_host_clear_config(&sl_host);
    test_host_set(&sl_host, "dir", file);
    assert_int_equal(test_host_init(&sl_host, err, sizeof(err)), CAIRN_ERROR);
    test_host_clear_config(&sl_host);
    assert_int_equal(test_host_init(&sl_host, err, sizeof(err)), CAIRN_ERROR); /* dir is required */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_copy_layout_and_fetch, sl_setup, sl_teardown),
        cmocka_unit_test_setup_teardown(test_no_txn_index_is_not_found, sl_setup, sl_teardown),
        cmocka_unit_test_setup_teardown(test_missing_segment_and_sink_stop, sl_setup, sl_teardown),
        cmocka_unit_test_setup_teardown(test_delete_is_idempotent_and_cleans_dirs, sl_setup, sl_teardown),
        cmocka_unit_test_setup_teardown(test_delete_takes_a_cut_copy, sl_setup, sl_teardown),
        cmocka_unit_test_setup_teardown(test_recopy_replaces, sl_setup, sl_teardown),
        cmocka_unit_test_setup_teardown(test_bad_names_and_config, sl_setup, sl_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
