/* The quorum's disk state: the quorum-state file in Kafka's format (round
 * trip, corrupt -> error naming the file) and the Raft log as record
 * batches (round trip through recovery, a torn tail cut to the last whole
 * batch, truncate then append, reads within a byte budget); with small
 * segments, cleaning below a new log start deletes segment files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>
#include <ftw.h>

#include <cmocka.h>
#include <jansson.h>

#include "protocol/generated/leader_change_message.h"
#include "protocol/record_batch.h"
#include "raft/raft_store.h"

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static int setup(void **state)
{
    char *dir = strdup("/tmp/raft_store_testXXXXXX");
    if (!dir || !mkdtemp(dir))
        return -1;
    *state = dir;
    return 0;
}

static int teardown(void **state)
{
    nftw(*state, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(*state);
    return 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_qs_round_trip(void **state)
{
    const char *dir = *state;
    char err[512];
    struct raft_store_qs qs, back;
    assert_int_equal(raft_store_qs_read(dir, &back, err, sizeof err), 0); /* first start */
    memset(&qs, 0, sizeof qs);
    strcpy(qs.cluster_id, "MkU3OEVBNTcwNTJENDM2Qk");
    qs.qs = (struct raft_quorum_state){.leader_epoch = 7, .voted_id = 2, .leader_id = 3};
    qs.applied_offset = 42;
    qs.n_voters = 3;
    qs.voters[0] = 1;
    qs.voters[1] = 2;
    qs.voters[2] = 3;
    assert_int_equal(raft_store_qs_write(dir, &qs, err, sizeof err), 0);
    assert_int_equal(raft_store_qs_read(dir, &back, err, sizeof err), 1);
    assert_string_equal(back.cluster_id, qs.cluster_id);
    assert_int_equal(back.qs.leader_epoch, 7);
    assert_int_equal(back.qs.voted_id, 2);
    assert_int_equal(back.qs.leader_id, 3);
    assert_int_equal(back.applied_offset, 42);
    assert_int_equal(back.n_voters, 3);
    assert_int_equal(back.voters[2], 3);

    /* Kafka's field names and shape, as FileQuorumStateStore writes them. */
    char path[512];
    snprintf(path, sizeof path, "%s/quorum-state", dir);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    assert_non_null(root);
    assert_int_equal(json_integer_value(json_object_get(root, "leaderEpoch")), 7);
    assert_int_equal(json_integer_value(json_object_get(root, "data_version")), 0);
    json_t *v = json_array_get(json_object_get(root, "currentVoters"), 1);
    assert_int_equal(json_integer_value(json_object_get(v, "voterId")), 2);
    json_decref(root);

    /* A file Kafka wrote reads back too (no voters, a null cluster id). */
    write_file(dir, "quorum-state",
               "{\"clusterId\":null,\"leaderId\":-1,\"leaderEpoch\":3,\"votedId\":1,\"appliedOffset\":0,"
               "\"currentVoters\":null,\"data_version\":0}");
    assert_int_equal(raft_store_qs_read(dir, &back, err, sizeof err), 1);
    assert_int_equal(back.qs.leader_epoch, 3);
    assert_int_equal(back.qs.voted_id, 1);
    assert_int_equal(back.n_voters, 0);
}

static void test_qs_corrupt_is_error(void **state)
{
    const char *dir = *state;
    char err[512];
    struct raft_store_qs back;
    const char *bad[] = {
        "",
        "{\"leaderId\":1,\"leaderEpoch\":",
        "not json",
        "[1,2]",
        "{\"clusterId\":\"x\",\"leaderId\":1,\"leaderEpoch\":-4,\"votedId\":1,\"appliedOffset\":0,\"data_version\":0}",
        "{\"clusterId\":\"x\",\"leaderId\":1,\"leaderEpoch\":4,\"votedId\":1,\"appliedOffset\":0,\"data_version\":1}",
        "{\"clusterId\":\"x\",\"leaderId\":\"1\",\"leaderEpoch\":4,\"votedId\":1,\"appliedOffset\":0,\"data_version\":"
        "0}",
        "{\"clusterId\":\"x\",\"leaderId\":1,\"leaderEpoch\":4,\"votedId\":1,\"appliedOffset\":0,\"data_version\":0,"
        "\"currentVoters\":[{\"id\":1}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(dir, "quorum-state", bad[i]);
        err[0] = '\0';
        assert_int_equal(raft_store_qs_read(dir, &back, err, sizeof err), -1);
        assert_non_null(strstr(err, "quorum-state"));
        assert_non_null(strstr(err, dir));
    }
}

/* An encoded batch of count records for an entry at offset/epoch. */
static struct raft_entry make_entry(int64_t offset, int32_t epoch, int32_t count)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1000);
    for (int32_t i = 0; i < count; i++) {
        char value[32];
        int n = snprintf(value, sizeof value, "record-%lld", (long long)(offset + i));
        assert_int_equal(record_batch_builder_add(&b, 1000, NULL, -1, value, n, NULL, 0), 0);
    }
    uint8_t *batch;
    size_t len;
    assert_int_equal(record_batch_builder_finish(&b, &batch, &len), 0);
    record_batch_builder_free(&b);
    return (struct raft_entry){.offset = offset, .epoch = epoch, .count = count, .len = (uint32_t)len, .data = batch};
}

static void append(struct raft_store *s, struct raft_entry e)
{
    char err[512];
    assert_int_equal(raft_store_append(s, &e, err, sizeof err), 0);
    free(e.data);
}

/* The control record's value is Kafka's LeaderChangeMessage v0 naming the
 * leader and voters 1..n_voters. */
static void expect_leader_change(const struct raft_entry *e, int32_t leader, int n_voters)
{
    struct record_batch_record_iter it;
    struct record_batch_record rec;
    assert_int_equal(record_batch_records_begin(&it, e->data, e->len), 0);
    assert_int_equal(record_batch_records_next(&it, &rec), 1);
    assert_int_equal(rec.key_len, 4);
    assert_int_equal(rec.key[3], 2); /* ControlRecordType.LEADER_CHANGE */
    struct kafka_reader r;
    kafka_reader_init(&r, rec.value, (size_t)rec.value_len);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct leader_change_message m;
    leader_change_message_init(&m);
    assert_int_equal(leader_change_message_decode(&m, &r, 0, &arena), 0);
    assert_int_equal(m.leader_id, leader);
    assert_int_equal(m.voters_count, n_voters);
    for (int i = 0; i < n_voters; i++)
        assert_int_equal(m.voters[i].voter_id, i + 1);
    assert_int_equal(m.granting_voters_count, 0);
    kafka_arena_free(&arena);
}

static void test_log_round_trip(void **state)
{
    const char *dir = *state;
    char err[512];
    struct raft_store *s;
    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    /* The core's LeaderChange body: leader 2 of voters 1, 2, 3. */
    uint8_t lc[17] = {RAFT_LEADER_CHANGE_BYTE};
    int32_t ids[4] = {2, 1, 2, 3};
    memcpy(lc + 1, ids, sizeof ids);
    struct raft_entry e = {.offset = 0, .epoch = 1, .count = 1, .len = sizeof lc, .data = lc};
    assert_int_equal(raft_store_append(s, &e, err, sizeof err), 0);
    append(s, make_entry(1, 1, 4));
    append(s, make_entry(5, 2, 1));
    /* Not at the log end: refused, nothing written. */
    struct raft_entry gap = make_entry(9, 2, 1);
    assert_int_equal(raft_store_append(s, &gap, err, sizeof err), -1);
    free(gap.data);
    /* The data must be one batch of count records. */
    struct raft_entry wrong = make_entry(6, 2, 2);
    wrong.count = 3;
    assert_int_equal(raft_store_append(s, &wrong, err, sizeof err), -1);
    free(wrong.data);
    int64_t flushed;
    assert_int_equal(raft_store_flush(s, INT64_MAX, &flushed, err, sizeof err), 0);
    assert_int_equal(flushed, 6);
    raft_store_close(s);

    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    struct raft_entry *entries;
    int64_t n;
    assert_int_equal(raft_store_recover(s, &entries, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    int64_t offsets[] = {0, 1, 5};
    int32_t epochs[] = {1, 1, 2}, counts[] = {1, 4, 1};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(entries[i].offset, offsets[i]);
        assert_int_equal(entries[i].epoch, epochs[i]);
        assert_int_equal(entries[i].count, counts[i]);
        struct record_batch_header h;
        assert_int_equal(record_batch_parse_header(entries[i].data, entries[i].len, &h), 0);
        assert_int_equal(h.base_offset, offsets[i]);
        assert_int_equal(h.partition_leader_epoch, epochs[i]);
        assert_true(record_batch_crc_ok(entries[i].data, entries[i].len));
        assert_int_equal(record_batch_is_control(&h), i == 0); /* the LeaderChange entry */
    }
    expect_leader_change(&entries[0], 2, 3);
    /* A core restarted from them ends where the log does. */
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = 1;
    cfg.n_voters = 1;
    cfg.voters[0] = 1;
    struct raft_node *node;
    assert_int_equal(raft_node_create(&node, &cfg, NULL, entries, n, 0), RAFT_OK);
    assert_int_equal(raft_node_end_offset(node), 6);
    raft_node_destroy(node);
    raft_store_entries_free(entries, n);

    /* Fetch reads: whole entries from a boundary within a byte budget. */
    assert_int_equal(raft_store_read(s, 1, 1, &entries, &n, err, sizeof err), 0);
    assert_int_equal(n, 1); /* at least one, however small the budget */
    assert_int_equal(entries[0].count, 4);
    raft_store_entries_free(entries, n);
    assert_int_equal(raft_store_read(s, 1, 1 << 20, &entries, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    raft_store_entries_free(entries, n);
    assert_int_equal(raft_store_read(s, 6, 1 << 20, &entries, &n, err, sizeof err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(raft_store_read(s, 3, 1 << 20, &entries, &n, err, sizeof err), -1);
    assert_int_equal(raft_store_read(s, 7, 1 << 20, &entries, &n, err, sizeof err), -1);
    raft_store_close(s);
}

/* The newest .log segment of the Raft log. */
static void segment_path(const char *dir, char *path, size_t len)
{
    snprintf(path, len, "%s/__cluster_metadata-0/00000000000000000000.log", dir);
}

static void test_torn_tail_recovers_whole_batches(void **state)
{
    const char *dir = *state;
    char err[512];
    struct raft_store *s;
    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    append(s, make_entry(0, 1, 3));
    append(s, make_entry(3, 1, 2));
    append(s, make_entry(5, 2, 5));
    int64_t flushed;
    assert_int_equal(raft_store_flush(s, INT64_MAX, &flushed, err, sizeof err), 0);
    raft_store_close(s);

    /* A crash in the middle of writing the last batch. */
    char path[512];
    segment_path(dir, path, sizeof path);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 7), 0);

    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    assert_int_equal(raft_store_end_offset(s), 5);
    struct raft_entry *entries;
    int64_t n;
    assert_int_equal(raft_store_recover(s, &entries, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(entries[1].offset, 3);
    assert_int_equal(entries[1].count, 2);
    raft_store_entries_free(entries, n);
    /* The log goes on from there. */
    append(s, make_entry(5, 3, 1));
    assert_int_equal(raft_store_end_offset(s), 6);
    raft_store_close(s);
}

static void test_truncate_then_append(void **state)
{
    const char *dir = *state;
    char err[512];
    struct raft_store *s;
    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    append(s, make_entry(0, 1, 2));
    append(s, make_entry(2, 1, 3));
    append(s, make_entry(5, 2, 2));
    int64_t flushed;
    assert_int_equal(raft_store_flush(s, 2, &flushed, err, sizeof err), 0);
    assert_true(flushed >= 2 && flushed <= 7);
    /* The divergence the core reports is an entry boundary. */
    assert_int_equal(raft_store_truncate(s, 2, err, sizeof err), 0);
    assert_int_equal(raft_store_end_offset(s), 2);
    append(s, make_entry(2, 3, 4));
    assert_int_equal(raft_store_flush(s, INT64_MAX, &flushed, err, sizeof err), 0);
    assert_int_equal(flushed, 6);
    raft_store_close(s);

    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    struct raft_entry *entries;
    int64_t n;
    assert_int_equal(raft_store_recover(s, &entries, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(entries[1].offset, 2);
    assert_int_equal(entries[1].epoch, 3);
    assert_int_equal(entries[1].count, 4);
    raft_store_entries_free(entries, n);
    raft_store_close(s);
}

/* KIP-630: cleaning moves the start up (reads below it fail, recovery
 * starts there); installing a snapshot restarts an empty log at its end,
 * which survives a reopen. */
static void test_log_start(void **state)
{
    const char *dir = *state;
    char err[512];
    struct raft_store *s;
    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    append(s, make_entry(0, 1, 2));
    append(s, make_entry(2, 1, 3));
    append(s, make_entry(5, 2, 2));
    int64_t flushed;
    assert_int_equal(raft_store_flush(s, INT64_MAX, &flushed, err, sizeof err), 0);
    assert_int_equal(raft_store_start_offset(s), 0);
    assert_int_equal(raft_store_delete_before(s, 2, err, sizeof err), 0);
    assert_int_equal(raft_store_start_offset(s), 2);
    assert_int_equal(raft_store_delete_before(s, 8, err, sizeof err), -1); /* past the end */
    struct raft_entry *entries;
    int64_t n;
    assert_int_equal(raft_store_read(s, 0, 1 << 20, &entries, &n, err, sizeof err), -1);
    assert_int_equal(raft_store_recover(s, &entries, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(entries[0].offset, 2);
    raft_store_entries_free(entries, n);

    assert_int_equal(raft_store_start_at(s, 20, err, sizeof err), 0);
    assert_int_equal(raft_store_start_offset(s), 20);
    assert_int_equal(raft_store_end_offset(s), 20);
    append(s, make_entry(20, 4, 3));
    assert_int_equal(raft_store_flush(s, INT64_MAX, &flushed, err, sizeof err), 0);
    assert_int_equal(flushed, 23);
    raft_store_close(s);

    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    assert_int_equal(raft_store_start_offset(s), 20);
    assert_int_equal(raft_store_recover(s, &entries, &n, err, sizeof err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(entries[0].offset, 20);
    assert_int_equal(entries[0].epoch, 4);
    assert_int_equal(entries[0].count, 3);
    raft_store_entries_free(entries, n);
    raft_store_close(s);
}

/* Segment files (*.log) of the store opened on dir. */
static int count_segments(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/__cluster_metadata-0", dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        n += len > 4 && strcmp(e->d_name + len - 4, ".log") == 0;
    }
    closedir(d);
    return n;
}

/* Twenty batches, then cleaning below offset 60 (as behind a snapshot). */
static void fill_and_clean(const char *dir, int64_t segment_bytes, int *before, int *after)
{
    char err[512];
    struct raft_store *s;
    assert_int_equal(mkdir(dir, 0700), 0);
    assert_int_equal(raft_store_open(dir, &s, err, sizeof err), 0);
    raft_store_set_segments(s, segment_bytes, 0);
    for (int64_t offset = 0; offset < 80; offset += 4)
        append(s, make_entry(offset, 1, 4));
    int64_t flushed;
    assert_int_equal(raft_store_flush(s, INT64_MAX, &flushed, err, sizeof err), 0);
    *before = count_segments(dir);
    assert_int_equal(raft_store_delete_before(s, 60, err, sizeof err), 0);
    *after = count_segments(dir);
    /* What is left still reads from where the log now starts. */
    assert_true(raft_store_start_offset(s) <= 60);
    struct raft_entry *entries;
    int64_t n;
    assert_int_equal(raft_store_recover(s, &entries, &n, err, sizeof err), 0);
    assert_true(n >= 5);
    assert_int_equal(entries[n - 1].offset, 76);
    raft_store_entries_free(entries, n);
    raft_store_close(s);
}

/* metadata.log.segment.bytes: at the default one segment holds the whole
 * log and cleaning frees nothing; with small segments the log rolls and
 * cleaning deletes the segment files below the new start. */
static void test_small_segments_are_deleted_behind_start(void **state)
{
    char big[512], small[512];
    snprintf(big, sizeof big, "%s/big", (const char *)*state);
    snprintf(small, sizeof small, "%s/small", (const char *)*state);
    int before, after;
    fill_and_clean(big, 0, &before, &after);
    assert_int_equal(before, 1);
    assert_int_equal(after, 1);
    fill_and_clean(small, 300, &before, &after);
    assert_true(before >= 5);
    assert_true(after < before);
    assert_true(after <= before / 2); /* 60 of 80 offsets were cleaned */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_qs_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_qs_corrupt_is_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_recovers_whole_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncate_then_append, setup, teardown),
        cmocka_unit_test_setup_teardown(test_log_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_small_segments_are_deleted_behind_start, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
