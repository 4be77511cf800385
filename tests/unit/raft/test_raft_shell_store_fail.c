/* A quorum member whose metadata disk fills up (every write to its store
 * fails with ENOSPC from then on): it stops acknowledging writes, and when
 * it is the leader it hands the quorum over, so the other two elect one of
 * them and keep committing; nothing committed before is lost. Three real
 * shells on loopback, each on its disk store, one behind a store that can
 * be made full. */
#include "raft_shell_support.h"

#include <stdatomic.h>

struct full_disk {
    void *disk;
    atomic_bool full;
};

static struct full_disk disks[N];

static int refuse(struct full_disk *d, char *err, size_t errlen)
{
    if (!atomic_load(&d->full))
        return 0;
    snprintf(err, errlen, "No space left on device");
    return -1;
}

static int fd_load_qs(void *store, struct raft_quorum_state *qs, bool *found, char *err, size_t errlen)
{
    struct full_disk *d = store;
    return raft_shell_disk_store_ops.load_qs(d->disk, qs, found, err, errlen);
}

static int fd_persist_qs(void *store, const struct raft_quorum_state *qs, char *err, size_t errlen)
{
    struct full_disk *d = store;
    if (refuse(d, err, errlen) != 0)
        return -1;
    return raft_shell_disk_store_ops.persist_qs(d->disk, qs, err, errlen);
}

static int fd_append(void *store, const struct raft_entry *e, char *err, size_t errlen)
{
    struct full_disk *d = store;
    if (refuse(d, err, errlen) != 0)
        return -1;
    return raft_shell_disk_store_ops.append(d->disk, e, err, errlen);
}

static int fd_truncate(void *store, int64_t offset, char *err, size_t errlen)
{
    struct full_disk *d = store;
    return raft_shell_disk_store_ops.truncate(d->disk, offset, err, errlen);
}

static int fd_flush(void *store, int64_t *end, char *err, size_t errlen)
{
    struct full_disk *d = store;
    if (refuse(d, err, errlen) != 0)
        return -1;
    return raft_shell_disk_store_ops.flush(d->disk, end, err, errlen);
}

static int fd_read(void *store, int64_t offset, int32_t max_bytes, int (*fn)(void *arg, const struct raft_entry *e),
                   void *arg, char *err, size_t errlen)
{
    struct full_disk *d = store;
    return raft_shell_disk_store_ops.read(d->disk, offset, max_bytes, fn, arg, err, errlen);
}

static int64_t fd_start_offset(void *store)
{
    struct full_disk *d = store;
    return raft_shell_disk_store_ops.start_offset(d->disk);
}

static int fd_delete_before(void *store, int64_t offset, char *err, size_t errlen)
{
    struct full_disk *d = store;
    return raft_shell_disk_store_ops.delete_before(d->disk, offset, err, errlen);
}

static int fd_start_at(void *store, int64_t offset, char *err, size_t errlen)
{
    struct full_disk *d = store;
    if (refuse(d, err, errlen) != 0)
        return -1;
    return raft_shell_disk_store_ops.start_at(d->disk, offset, err, errlen);
}

static void fd_close(void *store)
{
    struct full_disk *d = store;
    raft_shell_disk_store_ops.close(d->disk);
    d->disk = NULL;
}

static const struct raft_shell_store_ops full_disk_ops = {
    .load_qs = fd_load_qs,
    .persist_qs = fd_persist_qs,
    .append = fd_append,
    .truncate = fd_truncate,
    .flush = fd_flush,
    .read = fd_read,
    .start_offset = fd_start_offset,
    .delete_before = fd_delete_before,
    .start_at = fd_start_at,
    .close = fd_close,
};

static void *full_disk_wrap(int i, void *disk_store, const struct raft_shell_store_ops **ops)
{
    disks[i].disk = disk_store;
    atomic_store(&disks[i].full, false);
    *ops = &full_disk_ops;
    return &disks[i];
}

static bool node_saw(struct node *n, const char *value)
{
    pthread_mutex_lock(&n->seen.mu);
    bool found = false;
    for (int i = 0; i < n->seen.n && !found; i++)
        found = strcmp(n->seen.values[i], value) == 0;
    pthread_mutex_unlock(&n->seen.mu);
    return found;
}

/* The leader's disk fills: the two others elect a leader between them
 * (the full one cannot persist a vote or an entry, so it neither stands
 * nor counts), that leader commits, and a and b, committed before, are
 * still the first records every live node holds. */
static void test_full_disk_at_the_leader_hands_over(void **state)
{
    (void)state;
    wrap_store = full_disk_wrap;
    int ports[N];
    struct node nodes[N];
    int full = start_cluster(nodes, ports);
    int32_t epoch = wait_writable(nodes[full - 1].log);
    append_values(nodes[full - 1].log, epoch, (const char *[]){"a", "b"}, 2);
    wait_seen(nodes, 2);

    atomic_store(&disks[full - 1].full, true);
    /* Its next write fails on the disk (the append itself may be taken
     * before the store refuses it). */
    struct metadata_log_entry c = {(const uint8_t *)"c", 1};
    int64_t last = -1;
    char err[256] = "";
    (void)raft_shell_metadata_ops.append(nodes[full - 1].log, epoch, &c, 1, &last, err, sizeof err);

    /* The other two agree on a leader that is one of them. */
    int others[2], k = 0;
    for (int i = 0; i < N; i++)
        if (i != full - 1)
            others[k++] = i;
    int next = -1;
    int64_t deadline = clock_mono_ms() + 20000;
    while (next < 0 && clock_mono_ms() < deadline) {
        struct raft_shell_status a, b;
        raft_shell_status(nodes[others[0]].shell, &a);
        raft_shell_status(nodes[others[1]].shell, &b);
        if (a.leader_id >= 1 && a.leader_id != full && a.leader_id == b.leader_id && a.epoch == b.epoch &&
            a.epoch > epoch)
            next = a.leader_id;
        else
            usleep(20 * 1000);
    }
    if (next < 0)
        fail_msg("node %d's disk is full and no other node leads after 20 s", full);
    /* The full node takes no write any more. */
    assert_true(raft_shell_metadata_ops.leader_epoch(nodes[full - 1].log) < 0);

    int32_t next_epoch = wait_writable(nodes[next - 1].log);
    append_values(nodes[next - 1].log, next_epoch, (const char *[]){"d"}, 1);
    deadline = clock_mono_ms() + 10000;
    while (!(node_saw(&nodes[others[0]], "d") && node_saw(&nodes[others[1]], "d")) && clock_mono_ms() < deadline)
        usleep(20 * 1000);
    for (int j = 0; j < 2; j++) {
        struct node *n = &nodes[others[j]];
        if (!node_saw(n, "d"))
            fail_msg("node %d did not commit d under the new leader %d", others[j] + 1, next);
        pthread_mutex_lock(&n->seen.mu);
        assert_true(n->seen.n >= 3);
        assert_string_equal(n->seen.values[0], "a");
        assert_string_equal(n->seen.values[1], "b");
        pthread_mutex_unlock(&n->seen.mu);
    }
    stop_nodes(nodes);
    for (int i = 0; i < N; i++)
        nftw(nodes[i].dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
    wrap_store = NULL;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_disk_at_the_leader_hands_over),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
