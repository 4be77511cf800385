/* Controller, metadata log and loader apart: prepared records leave the
 * image alone until committed; the loader builds the same image as applying
 * the log directly; snapshots load to the same image as a full replay and
 * cut the replay to the tail; a corrupt snapshot fails the open; ACL records
 * replay into the image; data dirs without snapshots still load. The
 * controller's locked image, older than one the loader published while
 * the lock was held (a new quorum leader applying its log), is brought up
 * to date before a creation is validated. */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "metadata/metadata_builder.h"
#include "metadata/metadata_log.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_snapshot.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"
#include "protocol/record_batch.h"

static void reopen_store(struct fixture *f, int64_t snapshot_bytes)
{
    close_store(f);
    f->opts.snapshot_bytes = snapshot_bytes;
    open_store(f);
}

static int setup(void **state)
{
    struct fixture *f = fixture_new("/tmp/cairn-mdloader-XXXXXX");
    if (!f)
        return -1;
    f->opts.default_num_partitions = 3;
    f->opts.default_replication_factor = 1;
    f->opts.snapshot_bytes = -1;
    open_store(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    return fixture_free(*state);
}

static void create_topic(struct fixture *f, const char *name, int32_t partitions)
{
    char err[256] = "";
    int16_t rc = metadata_create_topic(f->store, name, partitions, 1, NULL, 0, NULL, 0, false, NULL, err, sizeof(err));
    if (rc != KAFKA_ERR_NONE)
        fail_msg("create %s: %d %s", name, rc, err);
}

static struct metadata_acl test_acl(uint8_t id_byte, const char *principal)
{
    struct metadata_acl acl = {
        .resource_type = 2, /* TOPIC */
        .resource_name = "orders",
        .pattern_type = 3, /* LITERAL */
        .principal = (char *)principal,
        .host = "*",
        .operation = 3,       /* READ */
        .permission_type = 3, /* ALLOW */
    };
    memset(acl.id.bytes, id_byte, sizeof(acl.id.bytes));
    return acl;
}

/* Commits one batch holding ACL records through the real controller path. */
static void submit_acls(struct fixture *f, const struct metadata_acl *add, int add_count,
                        const struct kafka_uuid *remove, int remove_count)
{
    struct metadata_record_list records;
    assert_int_equal(metadata_record_list_init(&records), 0);
    for (int i = 0; i < add_count; i++) {
        metadata_record_write_acl(&records.w, &add[i]);
        metadata_record_list_mark(&records);
    }
    for (int i = 0; i < remove_count; i++) {
        metadata_record_write_remove_acl(&records.w, &remove[i]);
        metadata_record_list_mark(&records);
    }
    char err[256] = "";
    assert_int_equal(metadata_controller_submit(f->store, &records, err, sizeof(err)), KAFKA_ERR_NONE);
    metadata_record_list_free(&records);
}

/* Snapshot files in the log dir, newest last; returns the count. */
static int list_snapshots(struct fixture *f, char names[][64], int max)
{
    DIR *d = opendir(f->log_dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        size_t suffix = strlen(METADATA_SNAPSHOT_SUFFIX);
        if (len > suffix && strcmp(e->d_name + len - suffix, METADATA_SNAPSHOT_SUFFIX) == 0 && n < max)
            snprintf(names[n++], 64, "%.63s", e->d_name); /* snapshot names are 42 bytes */
    }
    closedir(d);
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            char tmp[64];
            memcpy(tmp, names[j], 64);
            memcpy(names[j], names[j - 1], 64);
            memcpy(names[j - 1], tmp, 64);
        }
    return n;
}

/* Some of every kind of state a snapshot has to carry. */
static void populate(struct fixture *f)
{
    char err[256] = "";
    create_topic(f, "orders", 4);
    create_topic(f, "payments", 2);
    create_topic(f, "doomed", 1);
    struct metadata_config_kv cfg[] = {{"retention.ms", "1000"}, {"cleanup.policy", "compact"}};
    assert_int_equal(metadata_alter_topic_configs(f->store, "orders", cfg, 2, false, err, sizeof(err)), KAFKA_ERR_NONE);
    assert_int_equal(metadata_create_partitions(f->store, "payments", 5, NULL, 0, false, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    assert_int_equal(metadata_delete_topic(f->store, "doomed", NULL, err, sizeof(err)), KAFKA_ERR_NONE);
    int64_t first = -1;
    assert_int_equal(metadata_allocate_producer_ids(f->store, 1, &first, err, sizeof(err)), KAFKA_ERR_NONE);
    assert_int_equal(metadata_allocate_producer_ids(f->store, 1, &first, err, sizeof(err)), KAFKA_ERR_NONE);
    struct metadata_acl acls[] = {test_acl(7, "User:alice"), test_acl(9, "User:bob")};
    submit_acls(f, acls, 2, NULL, 0);
}

static void test_prepared_records_leave_the_image_until_commit(void **state)
{
    struct fixture *f = *state;
    const struct metadata_image *before = metadata_image_acquire(f->store);
    struct metadata_record_list records;
    assert_int_equal(metadata_record_list_init(&records), 0);
    char err[256] = "";
    assert_int_equal(metadata_controller_prepare_create_topic(f->store, "prepared", 3, 1, &records, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    assert_int_equal(records.count, 4); /* TopicRecord + 3 PartitionRecords */

    const struct metadata_image *during = metadata_image_acquire(f->store);
    assert_ptr_equal(during, before);
    assert_null(metadata_image_topic_by_name(during, "prepared", 8));
    metadata_image_release(during);
    /* Nothing reached the log either: a reopen does not see it. */
    reopen_store(f, -1);
    const struct metadata_image *reopened = metadata_image_acquire(f->store);
    assert_null(metadata_image_topic_by_name(reopened, "prepared", 8));
    assert_int_equal(reopened->last_offset, before->last_offset);
    metadata_image_release(reopened);

    assert_int_equal(metadata_controller_submit(f->store, &records, err, sizeof(err)), KAFKA_ERR_NONE);
    const struct metadata_image *after = metadata_image_acquire(f->store);
    const struct metadata_topic *t = metadata_image_topic_by_name(after, "prepared", 8);
    assert_non_null(t);
    assert_int_equal(t->partition_count, 3);
    assert_int_equal(after->last_offset, before->last_offset + 4);
    metadata_image_release(after);
    metadata_image_release(before);
    metadata_record_list_free(&records);
}

/* Applies every committed record straight to one builder, as the replay did
 * before the loader existed. */
struct direct_apply {
    struct metadata_builder *b;
    int64_t last;
};

static int direct_commit(void *ctx, const struct metadata_batch *batch)
{
    struct direct_apply *d = ctx;
    for (int32_t i = 0; i < batch->count; i++) {
        char why[256];
        metadata_record_apply(d->b, batch->records[i].value, batch->records[i].len, batch->base_offset + i, why,
                              sizeof(why));
    }
    d->last = batch->base_offset + batch->count - 1;
    return 0;
}

static int direct_snapshot(void *ctx, const struct metadata_snapshot_id *id, const struct metadata_log_entry *r,
                           int32_t n)
{
    (void)ctx, (void)id, (void)r, (void)n;
    fail_msg("no snapshot expected");
    return -1;
}

static void test_loader_builds_the_image_of_a_direct_replay(void **state)
{
    struct fixture *f = *state;
    populate(f);
    const struct metadata_image *loaded = metadata_image_acquire(f->store);
    metadata_store_close(f->store);
    f->store = NULL;

    char err[256] = "";
    struct metadata_log *log;
    assert_int_equal(metadata_log_open(f->dir, &log, err, sizeof(err)), 0);
    struct direct_apply d = {.b = metadata_builder_new(NULL), .last = -1};
    struct metadata_log_listener l = {
        .ctx = &d, .handle_commit = direct_commit, .handle_load_snapshot = direct_snapshot};
    assert_int_equal(metadata_local_log_ops.register_listener(log, &l, err, sizeof(err)), 0);
    assert_int_equal(metadata_builder_set_cluster(d.b, f->opts.cluster_id, 1, err, sizeof(err)), 0);
    struct metadata_image *direct = metadata_builder_finish(d.b, d.last);
    metadata_log_close(log);

    assert_true(metadata_image_equal(loaded, direct));
    assert_int_equal(loaded->last_offset, direct->last_offset);
    assert_int_equal(direct->acl_count, 2);
    metadata_image_release(direct);
    metadata_image_release(loaded);
    open_store(f);
}

/* Kafka's layout: a header control batch at offset 0, data batches, and a
 * footer control batch, all at the snapshot's epoch; returns data records. */
static int64_t check_snapshot_layout(const char *path, int32_t epoch)
{
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    uint8_t *buf = malloc((size_t)st.st_size);
    assert_int_equal(read(fd, buf, (size_t)st.st_size), st.st_size);
    close(fd);
    struct record_batch_iter it;
    record_batch_iter_init(&it, buf, (size_t)st.st_size);
    const uint8_t *batch;
    size_t len;
    int batches = 0;
    int64_t next_offset = 0, data_records = 0;
    int16_t last_control = -1;
    while (record_batch_iter_next(&it, &batch, &len) == 1) {
        struct record_batch_header h;
        assert_int_equal(record_batch_parse_header(batch, len, &h), 0);
        assert_true(record_batch_crc_ok(batch, len));
        assert_int_equal(h.base_offset, next_offset);
        assert_int_equal(h.partition_leader_epoch, epoch);
        next_offset = record_batch_last_offset(&h) + 1;
        struct record_batch_record_iter ri;
        struct record_batch_record rec;
        assert_int_equal(record_batch_records_begin(&ri, batch, len), 0);
        if (record_batch_is_control(&h)) {
            assert_int_equal(record_batch_records_next(&ri, &rec), 1);
            assert_int_equal(rec.key_len, 4);
            last_control = (int16_t)((rec.key[2] << 8) | rec.key[3]);
            if (batches == 0)
                assert_int_equal(last_control, 3); /* SnapshotHeaderRecord */
        } else {
            assert_true(batches > 0);
            last_control = -1;
            while (record_batch_records_next(&ri, &rec) == 1)
                data_records++;
        }
        batches++;
    }
    assert_int_equal(last_control, 4); /* SnapshotFooterRecord */
    free(buf);
    return data_records;
}

static void test_snapshot_load_equals_full_replay(void **state)
{
    struct fixture *f = *state;
    reopen_store(f, 1); /* a snapshot after every commit */
    populate(f);
    metadata_snapshot_writer_flush(f->store);
    struct metadata_load_stats stats;
    metadata_store_load_stats(f->store, &stats);
    /* Commits while a snapshot is written share the next one: at least
     * the first commit's and the last state's. */
    assert_true(stats.snapshots_written >= 2);
    const struct metadata_image *live = metadata_image_acquire(f->store);

    /* Kafka's names, and only the last two kept. */
    char names[16][64];
    assert_int_equal(list_snapshots(f, names, 16), METADATA_SNAPSHOTS_KEPT);
    char expect[64];
    snprintf(expect, sizeof(expect), "%020lld-%010d.checkpoint", (long long)live->last_offset + 1, 1);
    assert_string_equal(names[1], expect);
    char path[1200];
    snprintf(path, sizeof(path), "%s/%s", f->log_dir, names[1]);
    assert_true(check_snapshot_layout(path, 1) > 10);

    reopen_store(f, -1);
    metadata_store_load_stats(f->store, &stats);
    assert_int_equal(stats.snapshot_end_offset, live->last_offset + 1);
    assert_int_equal(stats.log_records, 0);
    const struct metadata_image *from_snapshot = metadata_image_acquire(f->store);
    assert_true(metadata_image_equal(live, from_snapshot));
    assert_int_equal(from_snapshot->last_offset, live->last_offset);

    /* Moving the snapshots aside gives a full replay: the same image. */
    for (int i = 0; i < METADATA_SNAPSHOTS_KEPT; i++) {
        char from[1200], to[1200];
        snprintf(from, sizeof(from), "%s/%s", f->log_dir, names[i]);
        snprintf(to, sizeof(to), "%s/%s.aside", f->log_dir, names[i]);
        assert_int_equal(rename(from, to), 0);
    }
    reopen_store(f, -1);
    metadata_store_load_stats(f->store, &stats);
    assert_int_equal(stats.snapshot_end_offset, -1);
    const struct metadata_image *replayed = metadata_image_acquire(f->store);
    assert_true(metadata_image_equal(replayed, from_snapshot));
    /* The pieces the equality covers are really there. */
    const struct metadata_topic *orders = metadata_image_topic_by_name(replayed, "orders", 6);
    assert_non_null(orders);
    assert_string_equal(metadata_topic_config(orders, "cleanup.policy"), "compact");
    assert_int_equal(metadata_image_topic_by_name(replayed, "payments", 8)->partition_count, 5);
    assert_null(metadata_image_topic_by_name(replayed, "doomed", 6));
    assert_int_equal(replayed->next_producer_id, 2 * METADATA_PRODUCER_ID_BLOCK_SIZE);
    assert_int_equal(replayed->acl_count, 2);
    metadata_image_release(replayed);
    metadata_image_release(from_snapshot);
    metadata_image_release(live);
}

static void test_restart_after_snapshot_replays_only_the_tail(void **state)
{
    struct fixture *f = *state;
    reopen_store(f, 1);
    create_topic(f, "before", 2);
    reopen_store(f, -1); /* no more snapshots from here */
    struct metadata_load_stats stats;
    metadata_store_load_stats(f->store, &stats);
    int64_t snapshot_at = stats.snapshot_end_offset;
    assert_true(snapshot_at > 0);
    create_topic(f, "after1", 3); /* 4 records */
    create_topic(f, "after2", 1); /* 2 records */

    reopen_store(f, -1);
    metadata_store_load_stats(f->store, &stats);
    assert_int_equal(stats.snapshot_end_offset, snapshot_at);
    assert_int_equal(stats.log_records, 6);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_non_null(metadata_image_topic_by_name(img, "before", 6));
    assert_non_null(metadata_image_topic_by_name(img, "after1", 6));
    assert_non_null(metadata_image_topic_by_name(img, "after2", 6));
    assert_int_equal(img->last_offset, snapshot_at - 1 + 6);
    metadata_image_release(img);
}

static void expect_open_fails(struct fixture *f, const char *needle)
{
    metadata_store_close(f->store);
    f->store = NULL;
    char err[512] = "";
    assert_int_not_equal(metadata_store_open(&f->opts, &f->store, err, sizeof(err)), 0);
    assert_null(f->store);
    if (!strstr(err, needle) || !strstr(err, ".checkpoint"))
        fail_msg("unexpected open error: %s", err);
}

static void test_corrupt_snapshot_fails_open(void **state)
{
    struct fixture *f = *state;
    reopen_store(f, 1);
    create_topic(f, "kept", 2);
    metadata_snapshot_writer_flush(f->store);
    char names[4][64];
    int n = list_snapshots(f, names, 4);
    assert_true(n >= 1);
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", f->log_dir, names[n - 1]);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);

    /* A flipped byte inside a data batch fails its CRC. */
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t byte;
    off_t at = st.st_size / 2;
    assert_int_equal(pread(fd, &byte, 1, at), 1);
    byte ^= 0x5a;
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    close(fd);
    expect_open_fails(f, "corrupt");

    /* A snapshot cut short has no footer. */
    byte ^= 0x5a;
    fd = open(path, O_RDWR);
    assert_int_equal(pwrite(fd, &byte, 1, at), 1);
    assert_int_equal(ftruncate(fd, st.st_size - 10), 0);
    close(fd);
    expect_open_fails(f, "corrupt");

    /* An empty file has no header; without the newest, the older one loads. */
    fd = open(path, O_RDWR);
    assert_int_equal(ftruncate(fd, 0), 0);
    close(fd);
    expect_open_fails(f, "SnapshotHeaderRecord");
    assert_int_equal(unlink(path), 0);
    open_store(f);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_non_null(metadata_image_topic_by_name(img, "kept", 4));
    metadata_image_release(img);
}

static void test_acl_records_replay_and_remove(void **state)
{
    struct fixture *f = *state;
    struct metadata_acl acls[] = {test_acl(3, "User:alice"), test_acl(1, "User:bob"), test_acl(2, "User:carol")};
    submit_acls(f, acls, 3, NULL, 0);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_int_equal(img->acl_count, 3);
    /* Kept by id. */
    assert_string_equal(img->acls[0].principal, "User:bob");
    assert_string_equal(img->acls[2].principal, "User:alice");
    const struct metadata_acl *a = metadata_image_acl(img, &acls[0].id);
    assert_non_null(a);
    assert_string_equal(a->resource_name, "orders");
    assert_string_equal(a->host, "*");
    assert_int_equal(a->operation, 3);
    metadata_image_release(img);

    submit_acls(f, NULL, 0, &acls[1].id, 1);
    reopen_store(f, -1);
    img = metadata_image_acquire(f->store);
    assert_int_equal(img->acl_count, 2);
    assert_null(metadata_image_acl(img, &acls[1].id));
    assert_non_null(metadata_image_acl(img, &acls[2].id));
    metadata_image_release(img);

    /* Removing an unknown binding is refused before it reaches the log. */
    struct metadata_record_list records;
    assert_int_equal(metadata_record_list_init(&records), 0);
    metadata_record_write_remove_acl(&records.w, &acls[1].id);
    metadata_record_list_mark(&records);
    char err[256] = "";
    assert_int_equal(metadata_controller_submit(f->store, &records, err, sizeof(err)), KAFKA_ERR_UNKNOWN_SERVER_ERROR);
    metadata_record_list_free(&records);
}

static struct metadata_scram test_scram(const char *name, int8_t mechanism, uint8_t fill)
{
    static uint8_t salt[8][8]; /* one per fill value used */
    struct metadata_scram c = {.name = (char *)name, .mechanism = mechanism, .iterations = 4096 + fill};
    memset(salt[fill % 8], fill, sizeof salt[0]);
    c.salt = salt[fill % 8];
    c.salt_len = sizeof salt[0];
    c.key_len = mechanism == 1 ? 32 : 64;
    memset(c.stored_key, fill, sizeof c.stored_key);
    memset(c.server_key, fill + 1, sizeof c.server_key);
    return c;
}

/* SCRAM credentials: applied per user (a failed change of a user keeps all
 * of that user's out), kept through a snapshot, removed by their record. */
static void test_scram_credentials_replay_and_snapshot(void **state)
{
    struct fixture *f = *state;
    reopen_store(f, 1); /* a snapshot after every commit */
    struct metadata_scram alice = test_scram("alice", 1, 1), bob = test_scram("bob", 2, 2),
                          alice512 = test_scram("alice", 2, 3), carol = test_scram("carol", 2, 4);
    struct metadata_scram_change changes[] = {
        {"alice", 1, &alice, KAFKA_ERR_NONE},
        {"bob", 2, &bob, KAFKA_ERR_NONE},
        {"carol", 1, NULL, KAFKA_ERR_NONE}, /* no such credential */
        {"carol", 2, &carol, KAFKA_ERR_NONE},
    };
    char err[256] = "";
    assert_int_equal(metadata_alter_scram(f->store, changes, 4, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(changes[0].error_code, KAFKA_ERR_NONE);
    assert_int_equal(changes[2].error_code, KAFKA_ERR_RESOURCE_NOT_FOUND);
    struct metadata_scram_change more[] = {{"alice", 2, &alice512, KAFKA_ERR_NONE}};
    assert_int_equal(metadata_alter_scram(f->store, more, 1, err, sizeof err), KAFKA_ERR_NONE);

    const struct metadata_image *live = metadata_image_acquire(f->store);
    assert_int_equal(live->scram_count, 3); /* carol's upsert went with her failed delete */
    assert_null(metadata_image_scram(live, "carol", 2));
    const struct metadata_scram *c = metadata_image_scram(live, "bob", 2);
    assert_non_null(c);
    assert_int_equal(c->iterations, 4098);
    assert_int_equal(c->key_len, 64);
    assert_int_equal(c->server_key[63], 3);
    assert_string_equal(live->scrams[0].name, "alice");
    assert_int_equal(live->scrams[1].mechanism, 2);

    reopen_store(f, -1);
    const struct metadata_image *loaded = metadata_image_acquire(f->store);
    assert_true(metadata_image_equal(live, loaded));
    metadata_image_release(loaded);
    metadata_image_release(live);

    struct metadata_scram_change removal[] = {{"alice", 1, NULL, KAFKA_ERR_NONE}};
    assert_int_equal(metadata_alter_scram(f->store, removal, 1, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(removal[0].error_code, KAFKA_ERR_NONE);
    reopen_store(f, -1);
    live = metadata_image_acquire(f->store);
    assert_int_equal(live->scram_count, 2);
    assert_null(metadata_image_scram(live, "alice", 1));
    assert_non_null(metadata_image_scram(live, "alice", 2));
    metadata_image_release(live);
}

static void test_data_dir_without_snapshots_loads(void **state)
{
    struct fixture *f = *state;
    populate(f);
    const struct metadata_image *before = metadata_image_acquire(f->store);
    reopen_store(f, 0); /* Kafka's default: far more bytes than this writes */
    char names[4][64];
    assert_int_equal(list_snapshots(f, names, 4), 0);
    struct metadata_load_stats stats;
    metadata_store_load_stats(f->store, &stats);
    assert_int_equal(stats.snapshot_end_offset, -1);
    assert_int_equal(stats.log_records, before->last_offset + 1);
    const struct metadata_image *after = metadata_image_acquire(f->store);
    assert_true(metadata_image_equal(before, after));
    metadata_image_release(after);
    metadata_image_release(before);
}

/* A topic the loader applies while the controller lock is held (as a new
 * quorum leader applies the previous leader's entries) is missing from the
 * image the lock took; metadata_store_sync_locked brings it in, so the
 * creation of that name is validated against it. */
static void test_sync_brings_the_locked_image_up_to_date(void **state)
{
    struct fixture *f = *state;
    struct metadata_record_list records;
    assert_int_equal(metadata_record_list_init(&records), 0);
    char err[256] = "";
    assert_int_equal(metadata_controller_prepare_create_topic(f->store, "late", 1, 1, &records, err, sizeof(err)),
                     KAFKA_ERR_NONE);
    struct metadata_log_entry entries[8];
    assert_true(records.count <= 8);
    size_t start = 0;
    for (int32_t i = 0; i < records.count; i++) {
        entries[i] = (struct metadata_log_entry){records.w.buf + start, records.ends[i] - start};
        start = records.ends[i];
    }
    const struct metadata_image *before = metadata_image_acquire(f->store);
    struct metadata_batch batch = {.base_offset = before->last_offset + 1,
                                   .epoch = 0,
                                   .records = entries,
                                   .count = records.count,
                                   .bytes = records.w.len};
    metadata_image_release(before);

    metadata_controller_lock(f->store);
    struct metadata_log_listener listener = metadata_loader_listener(f->store);
    assert_int_equal(listener.handle_commit(listener.ctx, &batch), 0);
    assert_null(metadata_image_topic_by_name(metadata_store_current_locked(f->store), "late", 4));
    assert_true(metadata_store_sync_locked(f->store));
    assert_non_null(metadata_image_topic_by_name(metadata_store_current_locked(f->store), "late", 4));
    assert_false(metadata_store_sync_locked(f->store)); /* nothing new since */
    metadata_controller_unlock(f->store);
    metadata_record_list_free(&records);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_prepared_records_leave_the_image_until_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loader_builds_the_image_of_a_direct_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_snapshot_load_equals_full_replay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_restart_after_snapshot_replays_only_the_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_snapshot_fails_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_acl_records_replay_and_remove, setup, teardown),
        cmocka_unit_test_setup_teardown(test_scram_credentials_replay_and_snapshot, setup, teardown),
        cmocka_unit_test_setup_teardown(test_data_dir_without_snapshots_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sync_brings_the_locked_image_up_to_date, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
