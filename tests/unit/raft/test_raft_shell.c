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

#include "../../common/test_ports.h"

#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/server.h"
#include "protocol/generated/api_table.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/fetch_snapshot_request.h"
#include "protocol/generated/fetch_snapshot_response.h"
#include "protocol/generated/request_header.h"
#include "raft/raft_shell.h"
#include "raft/raft_shell_metadata.h"
#include "metadata/metadata_snapshot.h"
#include "raft/raft_store.h"
#include "util/clock.h"

#define N 3
#define MAX_SEEN 16

struct seen {
    pthread_mutex_t mu;
    int64_t total; /* every record delivered, also past MAX_SEEN */
    int n;
    int64_t offsets[MAX_SEEN];
    char values[MAX_SEEN][16];
    struct raft_shell_metadata *log; /* a record "snap" makes the node write a snapshot */
    int snapshot_loads;
    struct metadata_snapshot_id loaded;
    int32_t loaded_count;
    char loaded_values[MAX_SEEN][16];
};

struct node {
    char dir[64];
    struct raft_shell_metadata *log;
    struct raft_shell *shell;
    struct net_server *server;
    struct seen seen;
};

/* Below the ephemeral range: node 3 binds its port seconds after it is
 * chosen, and every node binds again at a restart. */
static int free_port(void)
{
    int port = test_free_port();
    assert_true(port > 0);
    return port;
}

static int on_commit(void *ctx, const struct metadata_batch *batch)
{
    struct seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->total += batch->count;
    for (int32_t i = 0; i < batch->count && s->n < MAX_SEEN; i++) {
        s->offsets[s->n] = batch->base_offset + i;
        snprintf(s->values[s->n], sizeof s->values[0], "%.*s", (int)batch->records[i].len,
                 (const char *)batch->records[i].value);
        s->n++;
    }
    /* As the loader does: a snapshot of everything delivered so far, at the
     * end of the committed batch that asked for it. */
    const struct metadata_log_entry *lastrec = &batch->records[batch->count - 1];
    int rc = 0;
    if (lastrec->len == 4 && memcmp(lastrec->value, "snap", 4) == 0 && s->n == s->total) {
        struct metadata_log_entry state[MAX_SEEN];
        for (int i = 0; i < s->n; i++)
            state[i] = (struct metadata_log_entry){(const uint8_t *)s->values[i], strlen(s->values[i])};
        struct metadata_snapshot_id id = {.end_offset = batch->base_offset + batch->count, .epoch = batch->epoch};
        char err[256] = "";
        rc = raft_shell_metadata_ops.create_snapshot(s->log, &id, 0, state, s->n, err, sizeof err);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

static int on_load_snapshot(void *ctx, const struct metadata_snapshot_id *id, const struct metadata_log_entry *records,
                            int32_t count)
{
    struct seen *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->snapshot_loads++;
    s->loaded = *id;
    s->loaded_count = count;
    for (int32_t i = 0; i < count && i < MAX_SEEN; i++)
        snprintf(s->loaded_values[i], sizeof s->loaded_values[0], "%.*s", (int)records[i].len,
                 (const char *)records[i].value);
    pthread_mutex_unlock(&s->mu);
    return 0;
}

/* Short, so elections in the tests are quick; the test that writes 6.4 MB
 * raises it, since a leader slowed by that much I/O on a busy machine (or
 * under ASan) can otherwise miss a follower's fetch timeout. */
static int election_timeout_ms = 300;
/* metadata.max.retention.bytes and the FetchSnapshot chunk size of the nodes
 * started next (the snapshot test cleans at once and downloads in small chunks). */
static int64_t retention_bytes = 104857600;
static int32_t chunk_bytes = 1 << 20;

static void start_node(struct node *nodes, const int *ports, int i)
{
    {
        struct node *n = &nodes[i];
        pthread_mutex_init(&n->seen.mu, NULL);
        n->log = raft_shell_metadata_create();
        assert_non_null(n->log);
        n->seen.log = n->log;
        struct metadata_log_listener listener = {
            .ctx = &n->seen, .handle_commit = on_commit, .handle_load_snapshot = on_load_snapshot};
        char err[256] = "";
        assert_int_equal(raft_shell_metadata_set_dir(n->log, n->dir, err, sizeof err), 0);
        assert_int_equal(raft_shell_metadata_ops.register_listener(n->log, &listener, err, sizeof err), 0);

        struct raft_shell_config cfg;
        raft_shell_config_defaults(&cfg);
        cfg.node_id = i + 1;
        for (int v = 0; v < N; v++) {
            cfg.voters[v].id = v + 1;
            snprintf(cfg.voters[v].host, sizeof cfg.voters[v].host, "127.0.0.1");
            cfg.voters[v].port = ports[v];
        }
        cfg.n_voters = N;
        snprintf(cfg.cluster_id, sizeof cfg.cluster_id, "MkU3OEVBNTcwNTJENDM2Qg");
        cfg.election_timeout_ms = election_timeout_ms;
        cfg.fetch_timeout_ms = 2 * election_timeout_ms;
        cfg.retention_bytes = retention_bytes;
        cfg.snapshot_chunk_bytes = chunk_bytes;
        int32_t ids[N] = {1, 2, 3};
        snprintf(cfg.snapshot_dir, sizeof cfg.snapshot_dir, "%s/__cluster_metadata-0", n->dir);
        cfg.store_ops = &raft_shell_disk_store_ops;
        cfg.store = raft_shell_disk_store_open(n->dir, cfg.cluster_id, ids, N, err, sizeof err);
        if (!cfg.store)
            fail_msg("store %d: %s", i + 1, err);
        cfg.listener = raft_shell_metadata_listener(n->log);
        if (raft_shell_start(&cfg, &n->shell, err, sizeof err) != 0)
            fail_msg("shell %d: %s", i + 1, err);
        raft_shell_metadata_attach(n->log, n->shell);

        struct net_config net;
        net_config_defaults(&net);
        snprintf(net.listeners[0].name, sizeof net.listeners[0].name, "CONTROLLER");
        snprintf(net.listeners[0].host, sizeof net.listeners[0].host, "127.0.0.1");
        net.listeners[0].port = ports[i];
        net.listener_count = 1;
        net.num_network_threads = 1;
        net.num_io_threads = 1;
        if (net_server_start(&net, raft_shell_handle_request, n->shell, &n->server, err, sizeof err) != 0)
            fail_msg("server %d: %s", i + 1, err);
    }
}

static void start_nodes(struct node *nodes, const int *ports)
{
    for (int i = 0; i < N; i++)
        start_node(nodes, ports, i);
}

static void stop_node(struct node *n)
{
    net_server_stop(n->server, 1000);
    raft_shell_stop(n->shell);
    net_server_free(n->server);
    raft_shell_metadata_destroy(n->log);
    pthread_mutex_destroy(&n->seen.mu);
}

static void stop_nodes(struct node *nodes)
{
    for (int i = 0; i < N; i++)
        stop_node(&nodes[i]);
}

/* Followers first: a stop can take a second (a parked fetch holds the
 * server's drain), and with the leader gone first the two left could
 * elect a new leader between their stops and append to one log only. */
static void stop_nodes_leader_last(struct node *nodes, int leader)
{
    for (int i = 0; i < N; i++)
        if (i != leader - 1)
            stop_node(&nodes[i]);
    stop_node(&nodes[leader - 1]);
}

/* The node the first `count` shells name as leader, once they agree. */
static int wait_leader_of(struct node *nodes, int count)
{
    int64_t deadline = clock_mono_ms() + 10000;
    while (clock_mono_ms() < deadline) {
        struct raft_shell_status st[N];
        for (int i = 0; i < count; i++)
            raft_shell_status(nodes[i].shell, &st[i]);
        bool agree = st[0].leader_id >= 1 && st[0].leader_id <= count;
        for (int i = 1; i < count; i++)
            agree = agree && st[i].leader_id == st[0].leader_id && st[i].epoch == st[0].epoch;
        if (agree && st[st[0].leader_id - 1].role == RAFT_LEADER)
            return st[0].leader_id;
        usleep(20 * 1000);
    }
    fail_msg("no agreed leader within 10 s");
    return -1;
}

static int wait_leader(struct node *nodes)
{
    return wait_leader_of(nodes, N);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void wait_seen(struct node *nodes, int want)
{
    int64_t deadline = clock_mono_ms() + 10000;
    for (int i = 0; i < N; i++) {
        for (;;) {
            pthread_mutex_lock(&nodes[i].seen.mu);
            int n = nodes[i].seen.n;
            pthread_mutex_unlock(&nodes[i].seen.mu);
            if (n >= want)
                break;
            if (clock_mono_ms() > deadline)
                fail_msg("node %d saw %d of %d committed records", i + 1, n, want);
            usleep(20 * 1000);
        }
    }
}

static void make_nodes(struct node *nodes, int *ports)
{
    for (int i = 0; i < N; i++) {
        do {
            ports[i] = free_port();
        } while (i > 0 && (ports[i] == ports[i - 1] || ports[i] == ports[0]));
    }
    memset(nodes, 0, N * sizeof *nodes);
    for (int i = 0; i < N; i++) {
        snprintf(nodes[i].dir, sizeof nodes[i].dir, "/tmp/raft_shell_XXXXXX");
        assert_non_null(mkdtemp(nodes[i].dir));
    }
}

/* Fresh directories and ports, all nodes started; returns the leader. */
static int start_cluster(struct node *nodes, int *ports)
{
    make_nodes(nodes, ports);
    start_nodes(nodes, ports);
    return wait_leader(nodes);
}

/* A new leader writes once its listener has every entry of its log. */
static int32_t wait_writable(struct raft_shell_metadata *at_leader)
{
    int32_t epoch = -1;
    for (int tries = 0; (epoch = raft_shell_metadata_ops.leader_epoch(at_leader)) < 0 && tries < 500; tries++)
        usleep(10 * 1000);
    assert_true(epoch >= 1);
    return epoch;
}

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

/* ---- snapshots ---- */

static void wait_node_seen(struct node *n, int want)
{
    int64_t deadline = clock_mono_ms() + 10000;
    for (;;) {
        pthread_mutex_lock(&n->seen.mu);
        int got = n->seen.n;
        pthread_mutex_unlock(&n->seen.mu);
        if (got >= want)
            return;
        if (clock_mono_ms() > deadline)
            fail_msg("a node saw %d of %d committed records", got, want);
        usleep(20 * 1000);
    }
}

static void append_values(struct raft_shell_metadata *at_leader, int32_t epoch, const char *const *values, int count)
{
    struct metadata_log_entry records[4];
    for (int i = 0; i < count; i++)
        records[i] = (struct metadata_log_entry){(const uint8_t *)values[i], strlen(values[i])};
    char err[256] = "";
    int64_t last = -1;
    if (raft_shell_metadata_ops.append(at_leader, epoch, records, count, &last, err, sizeof err) != 0)
        fail_msg("append at the leader: %s", err);
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
        cmocka_unit_test(test_late_follower_catches_up_from_disk),
        cmocka_unit_test(test_late_follower_fetches_snapshot),
        cmocka_unit_test(test_slow_apply_keeps_leader_visible),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
