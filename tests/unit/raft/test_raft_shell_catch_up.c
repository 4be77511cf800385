/* A node that starts late catches up: through byte-bounded fetches from
 * the leader's disk, or, behind the leader's log start, through a
 * snapshot downloaded in chunks; restarted, it loads what it wrote. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "raft_shell_support.h"

/* ---- a log larger than any in-memory bound ---- */

#define BIG_BATCHES 40
#define BIG_RECORDS 8
#define BIG_RECORD_BYTES 20000 /* 160 kB a batch, 6.4 MB in all: several 1 MiB fetches and load chunks */

static void big_record(uint8_t *buf, int batch, int record)
{
    for (int i = 0; i < BIG_RECORD_BYTES; i++)
        buf[i] = (uint8_t)(batch * 31 + record * 7 + i);
}

static int64_t wait_caught_up(struct node *nodes)
{
    /* Seconds when idle; a machine loaded enough to time fetches out
     * (and move the leadership meanwhile) has taken over 20 s. */
    int64_t deadline = clock_mono_ms() + 60000;
    for (;;) {
        struct raft_shell_status st[N];
        for (int i = 0; i < N; i++)
            raft_shell_status(nodes[i].shell, &st[i]);
        pthread_mutex_lock(&nodes[N - 1].seen.mu);
        int64_t total = nodes[N - 1].seen.total;
        pthread_mutex_unlock(&nodes[N - 1].seen.mu);
        bool same = total == BIG_BATCHES * BIG_RECORDS;
        for (int i = 1; i < N; i++)
            same = same && st[i].end_offset == st[0].end_offset && st[i].high_watermark == st[0].high_watermark;
        if (same)
            return st[0].end_offset;
        if (clock_mono_ms() > deadline)
            fail_msg("the late node is at %lld/%lld (hw %lld), %lld of %d records delivered; the others at %lld",
                     (long long)st[N - 1].end_offset, (long long)st[0].end_offset, (long long)st[N - 1].high_watermark,
                     (long long)total, BIG_BATCHES * BIG_RECORDS, (long long)st[0].end_offset);
        usleep(20 * 1000);
    }
}

/* Waits until the leader commits the batch ending at `last` in `epoch`. A
 * new epoch first means the batch may be lost, as Raft allows for an
 * uncommitted entry, and the record count the test checks would not hold:
 * that is a failure named as such, not a silent retry. */
static void wait_committed(struct raft_shell *leader, int32_t epoch, int64_t last, int batch)
{
    int64_t deadline = clock_mono_ms() + 20000;
    for (;;) {
        struct raft_shell_status st;
        raft_shell_status(leader, &st);
        if (st.epoch != epoch)
            fail_msg("the leader changed (epoch %d to %d) before batch %d committed", (int)epoch, (int)st.epoch, batch);
        if (st.high_watermark > last)
            return;
        if (clock_mono_ms() > deadline)
            fail_msg("batch %d (last offset %lld) not committed within 20 s (hw %lld)", batch, (long long)last,
                     (long long)st.high_watermark);
        usleep(2 * 1000);
    }
}

/* Every batch of two logs, read back from their directories, byte for byte. */
static void assert_same_logs(const char *dir_a, const char *dir_b)
{
    char err[256] = "";
    struct raft_store *a = NULL, *b = NULL;
    assert_int_equal(raft_store_open(dir_a, &a, err, sizeof err), 0);
    assert_int_equal(raft_store_open(dir_b, &b, err, sizeof err), 0);
    assert_int_equal(raft_store_end_offset(a), raft_store_end_offset(b));
    int64_t offset = 0, batches = 0;
    while (offset < raft_store_end_offset(a)) {
        struct raft_entry *ea, *eb;
        int64_t na, nb;
        assert_int_equal(raft_store_read(a, offset, 1, &ea, &na, err, sizeof err), 0);
        assert_int_equal(raft_store_read(b, offset, 1, &eb, &nb, err, sizeof err), 0);
        assert_int_equal(na, 1);
        assert_int_equal(nb, 1);
        assert_int_equal(ea->epoch, eb->epoch);
        assert_int_equal(ea->count, eb->count);
        assert_int_equal(ea->len, eb->len);
        assert_memory_equal(ea->data, eb->data, ea->len);
        offset = ea->offset + ea->count;
        batches++;
        raft_store_entries_free(ea, na);
        raft_store_entries_free(eb, nb);
    }
    assert_true(batches > BIG_BATCHES);
    raft_store_close(a);
    raft_store_close(b);
}

/* The leader answers fetches from its disk (its core keeps headers only):
 * a node that starts after 6.4 MB were committed catches up in fetches
 * bounded by bytes, delivers every record to its listener, and ends with
 * the same bytes on disk; restarted, every node loads that log back in
 * bounded chunks. */
static void test_late_follower_catches_up_from_disk(void **state)
{
    (void)state;
    election_timeout_ms = 2000;
    int ports[N];
    struct node nodes[N];
    make_nodes(nodes, ports);
    for (int i = 0; i < N - 1; i++)
        start_node(nodes, ports, i);
    int leader = wait_leader_of(nodes, N - 1);
    struct raft_shell_metadata *at_leader = nodes[leader - 1].log;
    int32_t epoch = raft_shell_metadata_ops.leader_epoch(at_leader);
    struct raft_shell_status leader_status;
    raft_shell_status(nodes[leader - 1].shell, &leader_status);
    int32_t quorum_epoch = leader_status.epoch;
    static uint8_t bufs[BIG_RECORDS][BIG_RECORD_BYTES];
    for (int b = 0; b < BIG_BATCHES; b++) {
        struct metadata_log_entry records[BIG_RECORDS];
        for (int r = 0; r < BIG_RECORDS; r++) {
            big_record(bufs[r], b, r);
            records[r] = (struct metadata_log_entry){bufs[r], BIG_RECORD_BYTES};
        }
        char err[256] = "";
        int64_t last = -1;
        if (raft_shell_metadata_ops.append(at_leader, epoch, records, BIG_RECORDS, &last, err, sizeof err) != 0)
            fail_msg("append %d at the leader: %s", b, err);
        wait_committed(nodes[leader - 1].shell, quorum_epoch, last, b);
    }
    start_node(nodes, ports, N - 1);
    int64_t end = wait_caught_up(nodes);
    /* The late node's listener saw the records as written. */
    pthread_mutex_lock(&nodes[N - 1].seen.mu);
    assert_int_equal(nodes[N - 1].seen.n, MAX_SEEN);
    pthread_mutex_unlock(&nodes[N - 1].seen.mu);
    uint8_t want[BIG_RECORD_BYTES];
    big_record(want, 1, 7);
    assert_memory_equal(nodes[N - 1].seen.values[BIG_RECORDS + 7], want, sizeof nodes[0].seen.values[0] - 1);
    stop_nodes_leader_last(nodes, leader);
    for (int i = 0; i < N; i++)
        if (i != leader - 1)
            assert_same_logs(nodes[leader - 1].dir, nodes[i].dir);

    struct node again[N];
    memset(again, 0, sizeof again);
    for (int i = 0; i < N; i++)
        memcpy(again[i].dir, nodes[i].dir, sizeof again[i].dir);
    /* The old leader starts resigned and tells the others to elect soon:
     * on a slow start a new leader may already have written its
     * LeaderChange record (one entry, in a later epoch) before the last
     * node is up. Anything short of the whole log is a failed load. */
    start_nodes(again, ports);
    for (int i = 0; i < N; i++) {
        struct raft_shell_status st;
        raft_shell_status(again[i].shell, &st);
        if (st.end_offset != end && !(st.end_offset > end && st.epoch > quorum_epoch))
            fail_msg("node %d restarted at end offset %lld in epoch %d; it wrote %lld in epoch %d", i + 1,
                     (long long)st.end_offset, (int)st.epoch, (long long)end, (int)quorum_epoch);
    }
    stop_nodes(again);
    for (int i = 0; i < N; i++)
        nftw(nodes[i].dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    election_timeout_ms = 300;
}

static void read_whole(const char *path, uint8_t **buf, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    *buf = malloc(size > 0 ? (size_t)size : 1);
    assert_non_null(*buf);
    assert_int_equal(fread(*buf, 1, (size_t)size, f), (size_t)size);
    *len = (size_t)size;
    fclose(f);
}

static void wait_log_start(struct raft_shell *shell, int64_t want)
{
    int64_t deadline = clock_mono_ms() + 15000;
    struct raft_shell_status st;
    for (raft_shell_status(shell, &st); st.log_start != want; raft_shell_status(shell, &st)) {
        if (clock_mono_ms() > deadline)
            fail_msg("log start %lld, want %lld", (long long)st.log_start, (long long)want);
        usleep(20 * 1000);
    }
}

/* KIP-630: with metadata.max.retention.bytes at 0 the two running nodes
 * clean their logs behind the snapshot at offset 4; a node that was down
 * fetches from offset 0, is answered with that snapshot's id, downloads
 * it with FetchSnapshot in chunks of 64 bytes, installs a byte-identical
 * copy, loads it and goes on fetching the log after it. */
static void test_late_follower_fetches_snapshot(void **state)
{
    (void)state;
    retention_bytes = 0;
    chunk_bytes = 64;
    int ports[N];
    struct node nodes[N];
    make_nodes(nodes, ports);
    for (int i = 0; i < N - 1; i++)
        start_node(nodes, ports, i);
    int leader = wait_leader_of(nodes, N - 1);
    struct raft_shell_metadata *at_leader = nodes[leader - 1].log;
    int32_t epoch = wait_writable(at_leader);
    /* Offset 0 is the LeaderChange entry: a 1, b 2, snap 3, d 4. */
    append_values(at_leader, epoch, (const char *[]){"a", "b"}, 2);
    append_values(at_leader, epoch, (const char *[]){"snap"}, 1);
    append_values(at_leader, epoch, (const char *[]){"d"}, 1);
    for (int i = 0; i < N - 1; i++) {
        wait_node_seen(&nodes[i], 4);
        wait_log_start(nodes[i].shell, 4);
    }
    start_node(nodes, ports, N - 1);
    struct node *late = &nodes[N - 1];
    wait_node_seen(late, 1);
    wait_log_start(late->shell, 4);
    pthread_mutex_lock(&late->seen.mu);
    assert_int_equal(late->seen.snapshot_loads, 1);
    assert_int_equal(late->seen.loaded.end_offset, 4);
    assert_int_equal(late->seen.loaded_count, 3);
    assert_string_equal(late->seen.loaded_values[0], "a");
    assert_string_equal(late->seen.loaded_values[2], "snap");
    /* Only the log after the snapshot was delivered. */
    assert_int_equal(late->seen.offsets[0], 4);
    assert_string_equal(late->seen.values[0], "d");
    pthread_mutex_unlock(&late->seen.mu);
    /* Its log goes on with the quorum's. */
    append_values(at_leader, epoch, (const char *[]){"e"}, 1);
    wait_node_seen(late, 2);
    /* The status is published apart from the delivery: look until the
     * two agree. */
    struct raft_shell_status st, lst;
    int64_t deadline = clock_mono_ms() + 10000;
    for (;;) {
        raft_shell_status(late->shell, &st);
        raft_shell_status(nodes[leader - 1].shell, &lst);
        if (st.end_offset == lst.end_offset || clock_mono_ms() > deadline)
            break;
        usleep(20 * 1000);
    }
    assert_int_equal(st.end_offset, lst.end_offset);

    char logdir[PATH_MAX], mine[PATH_MAX], theirs[PATH_MAX];
    struct metadata_snapshot_id id = {4, late->seen.loaded.epoch};
    snprintf(logdir, sizeof logdir, "%s/__cluster_metadata-0", late->dir);
    assert_int_equal(metadata_snapshot_path(mine, sizeof mine, logdir, &id), 0);
    snprintf(logdir, sizeof logdir, "%s/__cluster_metadata-0", nodes[leader - 1].dir);
    assert_int_equal(metadata_snapshot_path(theirs, sizeof theirs, logdir, &id), 0);
    uint8_t *a, *b;
    size_t alen, blen;
    read_whole(mine, &a, &alen);
    read_whole(theirs, &b, &blen);
    assert_true(alen > 3 * 64); /* several chunks */
    assert_int_equal(alen, blen);
    assert_memory_equal(a, b, alen);
    free(a);
    free(b);
    char part[PATH_MAX + 16];
    snprintf(part, sizeof part, "%s.download", mine);
    assert_int_not_equal(access(part, F_OK), 0);
    stop_nodes(nodes);

    /* Restarted, the late node starts its log at the snapshot, and a
     * download a crash cut short is removed. */
    snprintf(part, sizeof part, "%s/__cluster_metadata-0/00000000000000000099-0000000001.checkpoint.download",
             late->dir);
    FILE *torn = fopen(part, "w");
    assert_non_null(torn);
    fclose(torn);
    struct node again[N];
    memset(again, 0, sizeof again);
    for (int i = 0; i < N; i++)
        memcpy(again[i].dir, nodes[i].dir, sizeof again[i].dir);
    /* The late node first and alone: no leader can write before it is
     * looked at. */
    start_node(again, ports, N - 1);
    raft_shell_status(again[N - 1].shell, &st);
    assert_int_equal(st.log_start, 4);
    assert_int_equal(st.end_offset, lst.end_offset);
    for (int i = 0; i < N - 1; i++)
        start_node(again, ports, i);
    pthread_mutex_lock(&again[N - 1].seen.mu);
    assert_int_equal(again[N - 1].seen.snapshot_loads, 1);
    assert_int_equal(again[N - 1].seen.loaded.end_offset, 4);
    pthread_mutex_unlock(&again[N - 1].seen.mu);
    assert_int_not_equal(access(part, F_OK), 0);
    stop_nodes(again);
    for (int i = 0; i < N; i++)
        nftw(nodes[i].dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    retention_bytes = 104857600;
    chunk_bytes = 1 << 20;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_late_follower_catches_up_from_disk),
        cmocka_unit_test(test_late_follower_fetches_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
