/* Three networked raft shells in one process for the shell's tests: each
 * behind a real network server on a loopback port, with the metadata log
 * ops on top, a listener that records what it is handed, and the waits the
 * tests share. */
#ifndef CAIRN_TEST_RAFT_SHELL_SUPPORT_H
#define CAIRN_TEST_RAFT_SHELL_SUPPORT_H

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
static inline int free_port(void)
{
    int port = test_free_port();
    assert_true(port > 0);
    return port;
}

static inline int on_commit(void *ctx, const struct metadata_batch *batch)
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

static inline int on_load_snapshot(void *ctx, const struct metadata_snapshot_id *id,
                                   const struct metadata_log_entry *records, int32_t count)
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
/* A test may put its own store in front of node i's disk store: it returns
 * the store to use and sets *ops to its operations. NULL: the disk store. */
static void *(*wrap_store)(int i, void *disk_store, const struct raft_shell_store_ops **ops);

static inline void start_node(struct node *nodes, const int *ports, int i)
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
        if (wrap_store)
            cfg.store = wrap_store(i, cfg.store, &cfg.store_ops);
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

static inline void start_nodes(struct node *nodes, const int *ports)
{
    for (int i = 0; i < N; i++)
        start_node(nodes, ports, i);
}

static inline void stop_node(struct node *n)
{
    net_server_stop(n->server, 1000);
    raft_shell_stop(n->shell);
    net_server_free(n->server);
    raft_shell_metadata_destroy(n->log);
    pthread_mutex_destroy(&n->seen.mu);
}

static inline void stop_nodes(struct node *nodes)
{
    for (int i = 0; i < N; i++)
        stop_node(&nodes[i]);
}

/* Followers first: a stop can take a second (a parked fetch holds the
 * server's drain), and with the leader gone first the two left could
 * elect a new leader between their stops and append to one log only. */
static inline void stop_nodes_leader_last(struct node *nodes, int leader)
{
    for (int i = 0; i < N; i++)
        if (i != leader - 1)
            stop_node(&nodes[i]);
    stop_node(&nodes[leader - 1]);
}

/* The node the first `count` shells name as leader, once they agree. */
static inline int wait_leader_of(struct node *nodes, int count)
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

static inline int wait_leader(struct node *nodes)
{
    return wait_leader_of(nodes, N);
}

static inline int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static inline void wait_seen(struct node *nodes, int want)
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

static inline void make_nodes(struct node *nodes, int *ports)
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
static inline int start_cluster(struct node *nodes, int *ports)
{
    make_nodes(nodes, ports);
    start_nodes(nodes, ports);
    return wait_leader(nodes);
}

/* A new leader writes once its listener has every entry of its log. */
static inline int32_t wait_writable(struct raft_shell_metadata *at_leader)
{
    int32_t epoch = -1;
    for (int tries = 0; (epoch = raft_shell_metadata_ops.leader_epoch(at_leader)) < 0 && tries < 500; tries++)
        usleep(10 * 1000);
    assert_true(epoch >= 1);
    return epoch;
}

/* ---- snapshots ---- */

static inline void wait_node_seen(struct node *n, int want)
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

static inline void append_values(struct raft_shell_metadata *at_leader, int32_t epoch, const char *const *values,
                                 int count)
{
    struct metadata_log_entry records[4];
    for (int i = 0; i < count; i++)
        records[i] = (struct metadata_log_entry){(const uint8_t *)values[i], strlen(values[i])};
    char err[256] = "";
    int64_t last = -1;
    if (raft_shell_metadata_ops.append(at_leader, epoch, records, count, &last, err, sizeof err) != 0)
        fail_msg("append at the leader: %s", err);
}

#endif
