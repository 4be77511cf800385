/* Shared by the consumer-group integration tests: group consumers that
 * commit on revocation (so a partition's next owner resumes exactly where
 * the previous one stopped), an ownership table checked on every
 * assignment change, and per-record bookkeeping.
 *
 * Include <cmocka.h>, harness.h and rk_helpers.h first.
 *
 * Thread-safety: a struct gt_world is shared by consumer threads and the
 * main thread under its mutex; a struct gt_consumer belongs to the one
 * thread that polls it. */
#ifndef CAIRN_TESTS_GROUPS_COMMON_H
#define CAIRN_TESTS_GROUPS_COMMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GT_PARTITIONS 12
#define GT_MAX_CONSUMERS 8
#define GT_MAX_PER_PARTITION 4096

struct gt_world {
    pthread_mutex_t lock;
    int owner[GT_PARTITIONS];                                /* consumer index or -1 */
    unsigned char seen[GT_PARTITIONS][GT_MAX_PER_PARTITION]; /* times each offset was consumed */
    long distinct;                                           /* offsets consumed at least once */
    long duplicates;
    long foreign;      /* consumed while another consumer owned the partition */
    long double_owner; /* assigned while someone else still owned it */
    long commit_failures;
    long commit_retries; /* REBALANCE_IN_PROGRESS answers retried */
    /* Cooperative check: longest pause between records of a partition while
     * it stayed with one owner (ms), and when each partition last delivered. */
    long long last_record_ms[GT_PARTITIONS];
    long long max_unmoved_gap_ms;
    int assign_events[GT_MAX_CONSUMERS];
    long ownership_changes; /* assignments and revocations so far */
    char error[256];
};

struct gt_consumer {
    struct gt_world *world;
    int index;
    rd_kafka_t *rk;
    int64_t next_offset[GT_PARTITIONS]; /* -1: nothing consumed since assignment */
    bool owns[GT_PARTITIONS];
    pthread_t thread;
    atomic_bool stop;  /* close (leave the group) and exit */
    atomic_bool pause; /* stop calling poll (max.poll.interval.ms test) */
    atomic_bool running;
};

__attribute__((unused)) static void gt_world_init(struct gt_world *w)
{
    memset(w, 0, sizeof *w);
    pthread_mutex_init(&w->lock, NULL);
    for (int p = 0; p < GT_PARTITIONS; p++)
        w->owner[p] = -1;
}

__attribute__((unused)) static void gt_note_error(struct gt_world *w, const char *msg)
{
    if (!w->error[0])
        snprintf(w->error, sizeof w->error, "%s", msg);
}

/* Commits what this consumer has consumed from the listed partitions, synchronously. */
__attribute__((unused)) static void gt_commit(struct gt_consumer *c, const rd_kafka_topic_partition_list_t *parts,
                                              const char *topic)
{
    rd_kafka_topic_partition_list_t *offs = rd_kafka_topic_partition_list_new(GT_PARTITIONS);
    for (int i = 0; parts && i < parts->cnt; i++) {
        int p = parts->elems[i].partition;
        if (p >= 0 && p < GT_PARTITIONS && c->next_offset[p] >= 0)
            rd_kafka_topic_partition_list_add(offs, topic, p)->offset = c->next_offset[p];
    }
    if (offs->cnt > 0) {
        /* A member that has joined a new generation but not yet synced is
         * told REBALANCE_IN_PROGRESS (Kafka's rule); it may retry once the
         * leader's SyncGroup has made the group Stable. */
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        bool failed = true;
        for (int attempt = 0; failed && attempt < 100; attempt++) {
            if (attempt > 0)
                usleep(100000);
            for (int i = 0; i < offs->cnt; i++)
                offs->elems[i].err = RD_KAFKA_RESP_ERR_NO_ERROR;
            err = rd_kafka_commit(c->rk, offs, 0);
            failed = err != RD_KAFKA_RESP_ERR_NO_ERROR;
            for (int i = 0; !failed && i < offs->cnt; i++)
                failed = offs->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR;
            if (!failed)
                break;
            rd_kafka_resp_err_t e = err ? err : offs->elems[0].err;
            if (e != RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS)
                break;
            pthread_mutex_lock(&c->world->lock);
            c->world->commit_retries++;
            pthread_mutex_unlock(&c->world->lock);
        }
        if (failed) {
            pthread_mutex_lock(&c->world->lock);
            c->world->commit_failures++;
            char msg[200];
            snprintf(msg, sizeof msg, "consumer %d: commit failed: %s", c->index,
                     rd_kafka_err2name(err ? err : offs->elems[0].err));
            gt_note_error(c->world, msg);
            pthread_mutex_unlock(&c->world->lock);
        }
    }
    rd_kafka_topic_partition_list_destroy(offs);
}

__attribute__((unused)) static void gt_take(struct gt_consumer *c, const rd_kafka_topic_partition_list_t *parts)
{
    struct gt_world *w = c->world;
    pthread_mutex_lock(&w->lock);
    w->assign_events[c->index]++;
    w->ownership_changes++;
    for (int i = 0; i < parts->cnt; i++) {
        int p = parts->elems[i].partition;
        if (p < 0 || p >= GT_PARTITIONS)
            continue;
        if (w->owner[p] != -1 && w->owner[p] != c->index) {
            w->double_owner++;
            char msg[200];
            snprintf(msg, sizeof msg, "partition %d assigned to %d while %d owns it", p, c->index, w->owner[p]);
            gt_note_error(w, msg);
        }
        w->owner[p] = c->index;
        w->last_record_ms[p] = 0;
        c->owns[p] = true;
        c->next_offset[p] = -1;
    }
    pthread_mutex_unlock(&w->lock);
}

__attribute__((unused)) static void gt_release(struct gt_consumer *c, const rd_kafka_topic_partition_list_t *parts)
{
    struct gt_world *w = c->world;
    pthread_mutex_lock(&w->lock);
    w->ownership_changes++;
    for (int i = 0; i < parts->cnt; i++) {
        int p = parts->elems[i].partition;
        if (p < 0 || p >= GT_PARTITIONS)
            continue;
        if (w->owner[p] == c->index)
            w->owner[p] = -1;
        c->owns[p] = false;
    }
    pthread_mutex_unlock(&w->lock);
}

__attribute__((unused)) static void gt_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                                    rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    struct gt_consumer *c = opaque;
    bool cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        gt_take(c, parts);
        if (cooperative)
            rd_kafka_incremental_assign(rk, parts);
        else
            rd_kafka_assign(rk, parts);
    } else {
        /* Commit before letting go, so the next owner starts right after. */
        if (parts->cnt > 0)
            gt_commit(c, parts, parts->elems[0].topic);
        gt_release(c, parts);
        if (cooperative)
            rd_kafka_incremental_unassign(rk, parts);
        else
            rd_kafka_assign(rk, NULL);
    }
}

/* A group consumer; extra is a NULL-terminated key, value list. */
__attribute__((unused)) static rd_kafka_t *gt_consumer_new(const char *bootstrap, const char *group,
                                                           const char *const *extra, struct gt_consumer *c)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    char errstr[512];
    const char *base[] = {"bootstrap.servers",
                          bootstrap,
                          "group.id",
                          group,
                          "enable.auto.commit",
                          "false",
                          "auto.offset.reset",
                          "earliest",
                          "session.timeout.ms",
                          "6000",
                          "heartbeat.interval.ms",
                          "500",
                          "fetch.wait.max.ms",
                          "100",
                          "topic.metadata.refresh.interval.ms",
                          "1000",
                          NULL};
    for (int i = 0; base[i]; i += 2)
        if (rd_kafka_conf_set(conf, base[i], base[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            fail_msg("conf %s: %s", base[i], errstr);
    for (int i = 0; extra && extra[i]; i += 2)
        if (rd_kafka_conf_set(conf, extra[i], extra[i + 1], errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
            fail_msg("conf %s: %s", extra[i], errstr);
    if (c) {
        rd_kafka_conf_set_opaque(conf, c);
        rd_kafka_conf_set_rebalance_cb(conf, gt_rebalance_cb);
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
    if (!rk)
        fail_msg("rd_kafka_new(consumer): %s", errstr);
    rd_kafka_poll_set_consumer(rk);
    return rk;
}

__attribute__((unused)) static void gt_subscribe(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t err = rd_kafka_subscribe(rk, sub);
    rd_kafka_topic_partition_list_destroy(sub);
    if (err)
        fail_msg("subscribe %s: %s", topic, rd_kafka_err2str(err));
}

__attribute__((unused)) static void gt_record(struct gt_consumer *c, const rd_kafka_message_t *m)
{
    struct gt_world *w = c->world;
    int p = m->partition;
    if (p < 0 || p >= GT_PARTITIONS || m->offset < 0 || m->offset >= GT_MAX_PER_PARTITION)
        return;
    long long now = harness_now_ms();
    pthread_mutex_lock(&w->lock);
    if (w->owner[p] != c->index) {
        w->foreign++;
        char msg[200];
        snprintf(msg, sizeof msg, "consumer %d read partition %d owned by %d", c->index, p, w->owner[p]);
        gt_note_error(w, msg);
    }
    if (w->seen[p][m->offset]++ == 0)
        w->distinct++;
    else
        w->duplicates++;
    if (w->last_record_ms[p] > 0 && now - w->last_record_ms[p] > w->max_unmoved_gap_ms)
        w->max_unmoved_gap_ms = now - w->last_record_ms[p];
    w->last_record_ms[p] = now;
    pthread_mutex_unlock(&w->lock);
    c->next_offset[p] = m->offset + 1;
}

__attribute__((unused)) static void *gt_consumer_main(void *arg)
{
    struct gt_consumer *c = arg;
    atomic_store(&c->running, true);
    while (!atomic_load(&c->stop)) {
        if (atomic_load(&c->pause)) {
            usleep(20000);
            continue;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, 100);
        if (!m)
            continue;
        if (!m->err)
            gt_record(c, m);
        rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(c->rk); /* revokes (and so commits) first */
    rd_kafka_destroy(c->rk);
    c->rk = NULL;
    atomic_store(&c->running, false);
    return NULL;
}

__attribute__((unused)) static void gt_consumer_start(struct gt_consumer *c, struct gt_world *w, int index,
                                                      const char *bootstrap, const char *group, const char *topic,
                                                      const char *const *extra)
{
    memset(c, 0, sizeof *c);
    c->world = w;
    c->index = index;
    for (int p = 0; p < GT_PARTITIONS; p++)
        c->next_offset[p] = -1;
    c->rk = gt_consumer_new(bootstrap, group, extra, c);
    gt_subscribe(c->rk, topic);
    if (pthread_create(&c->thread, NULL, gt_consumer_main, c) != 0)
        fail_msg("pthread_create");
}

__attribute__((unused)) static void gt_consumer_stop(struct gt_consumer *c)
{
    atomic_store(&c->stop, true);
    pthread_join(c->thread, NULL);
}

/* Produces per_partition records to every partition, spread over about
 * spread_ms, interleaving partitions. */
__attribute__((unused)) static void gt_produce(const char *bootstrap, const char *topic, int per_partition,
                                               int spread_ms)
{
    const char *conf[] = {"linger.ms", "5", NULL};
    rd_kafka_t *rk = rk_producer_new(bootstrap, conf);
    long total = (long)per_partition * GT_PARTITIONS;
    long long start = harness_now_ms();
    for (long i = 0; i < total; i++) {
        char value[64];
        int n = snprintf(value, sizeof value, "record-%ld", i);
        if (rk_produce_blocking(rk, topic, (int32_t)(i % GT_PARTITIONS), NULL, 0, value, (size_t)n, 0, NULL, NULL))
            fail_msg("produce failed");
        long long due = start + (long long)spread_ms * i / total;
        long long now = harness_now_ms();
        if (due > now)
            usleep((useconds_t)(due - now) * 1000);
        rd_kafka_poll(rk, 0);
    }
    rd_kafka_flush(rk, 10000);
    struct rk_delivery_stats *st = rk_producer_stats(rk);
    if (st->delivered != total)
        fail_msg("delivered %ld of %ld records (%s)", st->delivered, total, st->first_error_text);
    rk_producer_destroy(rk);
}

/* Waits until the world has seen want distinct records. */
__attribute__((unused)) static bool gt_wait_distinct(struct gt_world *w, long want, int timeout_ms)
{
    long long end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        pthread_mutex_lock(&w->lock);
        long d = w->distinct;
        pthread_mutex_unlock(&w->lock);
        if (d >= want)
            return true;
        usleep(50000);
    }
    return false;
}

__attribute__((unused)) static int gt_owned_by(struct gt_world *w, int index)
{
    int n = 0;
    pthread_mutex_lock(&w->lock);
    for (int p = 0; p < GT_PARTITIONS; p++)
        n += w->owner[p] == index;
    pthread_mutex_unlock(&w->lock);
    return n;
}

/* Waits until consumer index owns exactly n partitions. */
__attribute__((unused)) static bool gt_wait_owned(struct gt_world *w, int index, int n, int timeout_ms)
{
    long long end = harness_now_ms() + timeout_ms;
    while (harness_now_ms() < end) {
        if (gt_owned_by(w, index) == n)
            return true;
        usleep(50000);
    }
    return false;
}

/* Waits until every partition has an owner and no assignment changed for
 * quiet_ms: the group has settled after a rebalance. */
__attribute__((unused)) static bool gt_wait_settled(struct gt_world *w, int quiet_ms, int timeout_ms)
{
    long long end = harness_now_ms() + timeout_ms;
    long last_changes = -1;
    long long quiet_since = 0;
    while (harness_now_ms() < end) {
        pthread_mutex_lock(&w->lock);
        long changes = w->ownership_changes;
        int owned = 0;
        for (int p = 0; p < GT_PARTITIONS; p++)
            owned += w->owner[p] != -1;
        pthread_mutex_unlock(&w->lock);
        long long now = harness_now_ms();
        if (changes != last_changes || owned != GT_PARTITIONS) {
            last_changes = changes;
            quiet_since = now;
        } else if (now - quiet_since >= quiet_ms) {
            return true;
        }
        usleep(50000);
    }
    return false;
}

#endif
