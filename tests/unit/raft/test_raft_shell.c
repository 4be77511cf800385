/* Three networked shells in one process, each behind a real network server
 * on a loopback port, with the metadata log ops on top: they elect one
 * leader; a batch appended at the leader is committed, in order and with
 * the same offsets, to every node's metadata listener; a follower refuses
 * appends. Each node keeps its log and quorum state on disk: restarted on
 * the same directories, every node comes back with its log and epoch, and
 * with a snapshot it loads that and is handed only the log after it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "raft_shell_support.h"

static void test_batches_commit_on_every_node(void **state)
{
    (void)state;
    int ports[N];
    struct node nodes[N];
    int leader = start_cluster(nodes, ports);

    const char *values[] = {"topic-a", "topic-b", "topic-c"};
    struct metadata_log_entry records[3];
    for (int i = 0; i < 3; i++)
        records[i] = (struct metadata_log_entry){(const uint8_t *)values[i], strlen(values[i])};
    char err[256] = "";
    struct raft_shell_metadata *at_leader = nodes[leader - 1].log;
    int32_t epoch = wait_writable(at_leader);
    int64_t last = -1;
    if (raft_shell_metadata_ops.append(at_leader, epoch, records, 3, &last, err, sizeof err) != 0)
        fail_msg("append at the leader: %s", err);
    /* Offset 0 is the leader's LeaderChange entry. */
    assert_int_equal(last, 3);

    /* A follower refuses, and so does the leader at a stale epoch. */
    int follower = leader % N + 1;
    assert_int_equal(raft_shell_metadata_ops.leader_epoch(nodes[follower - 1].log), -1);
    assert_int_equal(raft_shell_metadata_ops.append(nodes[follower - 1].log, epoch, records, 1, &last, err, sizeof err),
                     METADATA_LOG_NOT_LEADER);
    assert_non_null(strstr(err, "not the quorum leader"));
    assert_int_equal(raft_shell_metadata_ops.append(at_leader, epoch - 1, records, 1, &last, err, sizeof err),
                     METADATA_LOG_NOT_LEADER);

    wait_seen(nodes, 3);
    for (int i = 0; i < N; i++) {
        assert_int_equal(nodes[i].seen.n, 3);
        for (int r = 0; r < 3; r++) {
            assert_int_equal(nodes[i].seen.offsets[r], r + 1);
            assert_string_equal(nodes[i].seen.values[r], values[r]);
        }
    }
    stop_nodes(nodes);

    /* Restarted on the same directories: the log and the epoch are back
     * before any election, and the committed records are delivered again. */
    struct node again[N];
    memset(again, 0, sizeof again);
    for (int i = 0; i < N; i++)
        memcpy(again[i].dir, nodes[i].dir, sizeof again[i].dir);
    start_nodes(again, ports);
    for (int i = 0; i < N; i++) {
        struct raft_shell_status st;
        raft_shell_status(again[i].shell, &st);
        assert_true(st.end_offset >= 4);
        assert_true(st.epoch >= epoch);
    }
    wait_leader(again);
    wait_seen(again, 3);
    for (int i = 0; i < N; i++)
        for (int r = 0; r < 3; r++)
            assert_string_equal(again[i].seen.values[r], values[r]);
    stop_nodes(again);
    for (int i = 0; i < N; i++)
        nftw(nodes[i].dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* One FetchSnapshot round trip (v1) to a controller port. */
struct snapshot_chunk {
    int16_t error;
    int64_t size, position;
    int32_t len;
    uint8_t data[256];
};

static void read_full(int fd, void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t n = read(fd, (uint8_t *)buf + got, len - got);
        assert_true(n > 0);
        got += (size_t)n;
    }
}

static struct snapshot_chunk fetch_snapshot(int port, int32_t epoch, struct metadata_snapshot_id id, int64_t position,
                                            int32_t max_bytes)
{
    struct kafka_writer w;
    assert_int_equal(kafka_writer_init(&w, 256), 0);
    size_t size_at = kafka_writer_reserve(&w, 4);
    struct request_header h = {.request_api_key = 59, .request_api_version = 1, .correlation_id = 7};
    h.client_id = kafka_str_from_cstr("test");
    assert_int_equal(request_header_encode(&h, &w, kafka_request_header_version(59, 1)), 0);
    struct fetch_snapshot_request_partition_snapshot p;
    fetch_snapshot_request_partition_snapshot_init(&p);
    p.partition = 0;
    p.current_leader_epoch = epoch;
    p.snapshot_id.end_offset = id.end_offset;
    p.snapshot_id.epoch = id.epoch;
    p.position = position;
    struct fetch_snapshot_request_topic_snapshot t;
    fetch_snapshot_request_topic_snapshot_init(&t);
    t.name = kafka_str_from_cstr("__cluster_metadata");
    t.partitions = &p;
    t.partitions_count = 1;
    struct fetch_snapshot_request req;
    fetch_snapshot_request_init(&req);
    req.cluster_id = kafka_str_from_cstr("MkU3OEVBNTcwNTJENDM2Qg");
    req.replica_id = 99;
    req.max_bytes = max_bytes;
    req.topics = &t;
    req.topics_count = 1;
    assert_int_equal(fetch_snapshot_request_encode(&req, &w, 1), 0);
    kafka_writer_patch_int32(&w, size_at, (int32_t)(w.len - 4));

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(write(fd, w.buf, w.len), (ssize_t)w.len);
    kafka_writer_free(&w);
    uint8_t size_buf[4];
    read_full(fd, size_buf, 4);
    uint32_t size = (uint32_t)size_buf[0] << 24 | (uint32_t)size_buf[1] << 16 | (uint32_t)size_buf[2] << 8 |
                    size_buf[3];
    uint8_t *frame = malloc(size);
    assert_non_null(frame);
    read_full(fd, frame, size);
    close(fd);

    struct kafka_reader r;
    kafka_reader_init(&r, frame, size);
    assert_int_equal(kafka_read_int32(&r), 7);   /* the correlation id */
    assert_int_equal(kafka_read_uvarint(&r), 0); /* response header v1: no tagged fields */
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct fetch_snapshot_response resp;
    fetch_snapshot_response_init(&resp);
    assert_int_equal(fetch_snapshot_response_decode(&resp, &r, 1, &arena), 0);
    assert_int_equal(resp.error_code, 0);
    assert_int_equal(resp.topics_count, 1);
    assert_int_equal(resp.topics[0].partitions_count, 1);
    const struct fetch_snapshot_response_partition_snapshot *ps = &resp.topics[0].partitions[0];
    struct snapshot_chunk c = {.error = ps->error_code, .size = ps->size, .position = ps->position};
    c.len = ps->unaligned_records.len > 0 ? ps->unaligned_records.len : 0;
    assert_true(c.len <= (int32_t)sizeof c.data);
    if (c.len > 0)
        memcpy(c.data, ps->unaligned_records.data, (size_t)c.len);
    kafka_arena_free(&arena);
    free(frame);
    return c;
}

/* The leader serves its snapshot file in chunks of at most max_bytes that
 * reassemble to the file, byte for byte; a follower refuses. */
static void check_fetch_snapshot(struct node *nodes, const int *ports, int leader, struct metadata_snapshot_id id)
{
    struct raft_shell_status st;
    raft_shell_status(nodes[leader - 1].shell, &st);
    char logdir[PATH_MAX], path[PATH_MAX];
    snprintf(logdir, sizeof logdir, "%s/__cluster_metadata-0", nodes[leader - 1].dir);
    assert_int_equal(metadata_snapshot_path(path, sizeof path, logdir, &id), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static uint8_t file[65536], got[65536];
    size_t file_len = fread(file, 1, sizeof file, f);
    fclose(f);
    assert_true(file_len > 100 && file_len < sizeof file);
    int64_t position = 0;
    int chunks = 0;
    while (position < (int64_t)file_len) {
        struct snapshot_chunk c = fetch_snapshot(ports[leader - 1], st.epoch, id, position, 100);
        assert_int_equal(c.error, 0);
        assert_int_equal(c.size, (int64_t)file_len);
        assert_int_equal(c.position, position);
        assert_true(c.len > 0 && c.len <= 100);
        memcpy(got + position, c.data, (size_t)c.len);
        position += c.len;
        chunks++;
    }
    assert_true(chunks >= 2);
    assert_memory_equal(got, file, file_len);
    int follower = leader % N + 1;
    assert_int_equal(fetch_snapshot(ports[follower - 1], st.epoch, id, 0, 100).error, KAFKA_ERR_NOT_LEADER_OR_FOLLOWER);
    assert_int_equal(fetch_snapshot(ports[leader - 1], st.epoch - 1, id, 0, 100).error, KAFKA_ERR_FENCED_LEADER_EPOCH);
    assert_int_equal(fetch_snapshot(ports[leader - 1], st.epoch, id, (int64_t)file_len + 1, 100).error,
                     KAFKA_ERR_POSITION_OUT_OF_RANGE);
    struct metadata_snapshot_id none = {id.end_offset + 1, id.epoch};
    assert_int_equal(fetch_snapshot(ports[leader - 1], st.epoch, none, 0, 100).error, KAFKA_ERR_SNAPSHOT_NOT_FOUND);
}

/* Every node writes a snapshot at the committed batch "snap" asks for; on
 * restart it loads it and is handed only the entries after it. A node
 * whose snapshot file is torn skips it and replays the whole log. */
static void test_restart_after_snapshot_replays_tail(void **state)
{
    (void)state;
    int ports[N];
    struct node nodes[N];
    int leader = start_cluster(nodes, ports);
    struct raft_shell_metadata *at_leader = nodes[leader - 1].log;
    int32_t epoch = wait_writable(at_leader);
    /* Offset 0 is the LeaderChange entry: a 1, b 2, snap 3, d 4, e 5. */
    append_values(at_leader, epoch, (const char *[]){"a", "b"}, 2);
    append_values(at_leader, epoch, (const char *[]){"snap"}, 1);
    append_values(at_leader, epoch, (const char *[]){"d", "e"}, 2);
    wait_seen(nodes, 5);
    struct metadata_snapshot_id want = {0};
    char path[PATH_MAX], logdir[PATH_MAX], err[256] = "";
    for (int i = 0; i < N; i++) {
        snprintf(logdir, sizeof logdir, "%s/__cluster_metadata-0", nodes[i].dir);
        struct metadata_snapshot_id got;
        assert_int_equal(metadata_snapshot_latest(logdir, &got, err, sizeof err), 1);
        assert_int_equal(got.end_offset, 4);
        want = got;
        assert_true(raft_shell_metadata_ops.latest_snapshot(nodes[i].log, &got));
        assert_int_equal(got.end_offset, 4);
    }
    check_fetch_snapshot(nodes, ports, leader, want);
    stop_nodes(nodes);
    /* A torn snapshot on the last node: half of it. */
    snprintf(logdir, sizeof logdir, "%s/__cluster_metadata-0", nodes[N - 1].dir);
    assert_int_equal(metadata_snapshot_path(path, sizeof path, logdir, &want), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size / 2), 0);

    struct node again[N];
    memset(again, 0, sizeof again);
    for (int i = 0; i < N; i++)
        memcpy(again[i].dir, nodes[i].dir, sizeof again[i].dir);
    start_nodes(again, ports);
    wait_leader(again);
    for (int i = 0; i < N - 1; i++) {
        wait_node_seen(&again[i], 2);
        pthread_mutex_lock(&again[i].seen.mu);
        assert_int_equal(again[i].seen.snapshot_loads, 1);
        assert_int_equal(again[i].seen.loaded.end_offset, 4);
        assert_int_equal(again[i].seen.loaded_count, 3);
        assert_string_equal(again[i].seen.loaded_values[2], "snap");
        /* Only the tail: d and e, at their offsets. */
        assert_int_equal(again[i].seen.offsets[0], 4);
        assert_string_equal(again[i].seen.values[0], "d");
        assert_string_equal(again[i].seen.values[1], "e");
        pthread_mutex_unlock(&again[i].seen.mu);
    }
    wait_node_seen(&again[N - 1], 5);
    pthread_mutex_lock(&again[N - 1].seen.mu);
    assert_int_equal(again[N - 1].seen.snapshot_loads, 0);
    assert_int_equal(again[N - 1].seen.offsets[0], 1);
    assert_string_equal(again[N - 1].seen.values[0], "a");
    assert_string_equal(again[N - 1].seen.values[4], "e");
    pthread_mutex_unlock(&again[N - 1].seen.mu);
    stop_nodes(again);
    for (int i = 0; i < N; i++)
        nftw(nodes[i].dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* ---- a slow listener ---- */

/* An observer (a broker) whose listener takes longer than the fetch timeout
 * to apply a batch (a broker opening thousands of partitions) must keep
 * publishing the leader it follows meanwhile: its heartbeats go to the
 * leader raft_shell_status names, and a status stuck at "no leader" for a
 * whole apply got brokers fenced while they created partitions. */
struct slow_listener {
    pthread_mutex_t mu;
    int slow_started; /* "slow" records whose apply began */
    int slow_done;
};

#define SLOW_APPLY_MS 2500

static int on_slow_commit(void *ctx, const struct metadata_batch *batch)
{
    struct slow_listener *l = ctx;
    for (int32_t i = 0; i < batch->count; i++) {
        if (batch->records[i].len != 4 || memcmp(batch->records[i].value, "slow", 4) != 0)
            continue;
        pthread_mutex_lock(&l->mu);
        l->slow_started++;
        pthread_mutex_unlock(&l->mu);
        usleep(SLOW_APPLY_MS * 1000);
        pthread_mutex_lock(&l->mu);
        l->slow_done++;
        pthread_mutex_unlock(&l->mu);
    }
    return 0;
}

static int slow_count(struct slow_listener *l, bool done)
{
    pthread_mutex_lock(&l->mu);
    int n = done ? l->slow_done : l->slow_started;
    pthread_mutex_unlock(&l->mu);
    return n;
}

static void test_slow_apply_keeps_leader_visible(void **state)
{
    (void)state;
    int ports[N];
    struct node nodes[N];
    int leader = start_cluster(nodes, ports);
    int32_t epoch = wait_writable(nodes[leader - 1].log);

    char dir[64] = "/tmp/raft_shell_XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct slow_listener sl = {.mu = PTHREAD_MUTEX_INITIALIZER};
    struct raft_shell_metadata *log = raft_shell_metadata_create();
    assert_non_null(log);
    struct metadata_log_listener listener = {.ctx = &sl, .handle_commit = on_slow_commit};
    char err[256] = "";
    assert_int_equal(raft_shell_metadata_set_dir(log, dir, err, sizeof err), 0);
    assert_int_equal(raft_shell_metadata_ops.register_listener(log, &listener, err, sizeof err), 0);
    struct raft_shell_config cfg;
    raft_shell_config_defaults(&cfg);
    cfg.node_id = N + 1; /* no voter: an observer */
    for (int v = 0; v < N; v++) {
        cfg.voters[v].id = v + 1;
        snprintf(cfg.voters[v].host, sizeof cfg.voters[v].host, "127.0.0.1");
        cfg.voters[v].port = ports[v];
    }
    cfg.n_voters = N;
    snprintf(cfg.cluster_id, sizeof cfg.cluster_id, "MkU3OEVBNTcwNTJENDM2Qg");
    cfg.election_timeout_ms = election_timeout_ms;
    cfg.fetch_timeout_ms = 2 * election_timeout_ms;
    int32_t ids[N] = {1, 2, 3};
    snprintf(cfg.snapshot_dir, sizeof cfg.snapshot_dir, "%s/__cluster_metadata-0", dir);
    cfg.store_ops = &raft_shell_disk_store_ops;
    cfg.store = raft_shell_disk_store_open(dir, cfg.cluster_id, ids, N, err, sizeof err);
    assert_non_null(cfg.store);
    cfg.listener = raft_shell_metadata_listener(log);
    struct raft_shell *shell = NULL;
    if (raft_shell_start(&cfg, &shell, err, sizeof err) != 0)
        fail_msg("observer: %s", err);
    raft_shell_metadata_attach(log, shell);

    /* Two slow batches, the second sent while the first is applied, so it
     * arrives after the observer's fetch timed out during the first. */
    struct metadata_log_entry slow = {(const uint8_t *)"slow", 4};
    int64_t last = -1;
    for (int round = 0; round < 2; round++) {
        if (raft_shell_metadata_ops.append(nodes[leader - 1].log, epoch, &slow, 1, &last, err, sizeof err) != 0)
            fail_msg("append: %s", err);
        int64_t deadline = clock_mono_ms() + 20000;
        while (slow_count(&sl, false) <= round && clock_mono_ms() < deadline)
            usleep(5 * 1000);
        assert_true(slow_count(&sl, false) > round);
    }
    /* During the second apply: the longest stretch without a leader in the
     * observer's status. Without it published before the apply it is the
     * whole apply (2.5 s); with it, at most a fetch round trip. */
    int64_t longest = 0, since = -1;
    int64_t deadline = clock_mono_ms() + 20000;
    while (slow_count(&sl, true) < 2 && clock_mono_ms() < deadline) {
        struct raft_shell_status st;
        raft_shell_status(shell, &st);
        int64_t now = clock_mono_ms();
        if (st.leader_id < 0 && since < 0)
            since = now;
        if (st.leader_id >= 0)
            since = -1;
        if (since >= 0 && now - since > longest)
            longest = now - since;
        usleep(5 * 1000);
    }
    assert_int_equal(slow_count(&sl, true), 2);
    if (longest >= SLOW_APPLY_MS / 2)
        fail_msg("the observer named no leader for %lld ms of a %d ms apply", (long long)longest, SLOW_APPLY_MS);

    raft_shell_stop(shell);
    raft_shell_metadata_destroy(log);
    stop_nodes(nodes);
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    for (int i = 0; i < N; i++)
        nftw(nodes[i].dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batches_commit_on_every_node),
        cmocka_unit_test(test_restart_after_snapshot_replays_tail),
        cmocka_unit_test(test_slow_apply_keeps_leader_visible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
