/* Replication: following partitions (fetchers, see fetcher.c) and, on the
 * leader, the followers' log end offsets that move the high watermark. */
#include "replication/replication.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "metrics/metrics.h"
#include "net/client.h"
#include "protocol/generated/errors.h"
#include "replica/replica_manager.h"
#include "replication/replication_internal.h"
#include "util/logger.h"

static uint32_t partition_hash(const char *topic, int32_t partition)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *p = (const unsigned char *)topic; *p; p++)
        h = (h ^ *p) * 16777619u;
    return (h ^ (uint32_t)partition) * 16777619u;
}

/* The fetcher (of a leader's n) that fetches topic-partition. */
static int32_t fetcher_index(const char *topic, int32_t partition, int32_t n)
{
    return (int32_t)(partition_hash(topic, partition) % (uint32_t)(n > 0 ? n : 1));
}

struct follower_partition *replication_follower(struct replication *r, const char *topic, int32_t partition)
{
    struct partition_map_node *n = partition_map_find(&r->followers, topic, partition);
    return n ? PARTITION_MAP_ENTRY(n, struct follower_partition, node) : NULL;
}

struct leader_partition *replication_leader(struct replication *r, const char *topic, int32_t partition)
{
    struct partition_map_node *n = partition_map_find(&r->leaders, topic, partition);
    return n ? PARTITION_MAP_ENTRY(n, struct leader_partition, node) : NULL;
}

struct follower_partition *replication_next_follower(struct replication *r, size_t *bucket,
                                                     const struct follower_partition *prev)
{
    struct partition_map_node *n = partition_map_next(&r->followers, bucket, prev ? &prev->node : NULL);
    return n ? PARTITION_MAP_ENTRY(n, struct follower_partition, node) : NULL;
}

struct leader_partition *replication_next_leader(struct replication *r, size_t *bucket,
                                                 const struct leader_partition *prev)
{
    struct partition_map_node *n = partition_map_next(&r->leaders, bucket, prev ? &prev->node : NULL);
    return n ? PARTITION_MAP_ENTRY(n, struct leader_partition, node) : NULL;
}

static struct follower_partition *take_follower(struct replication *r, const char *topic, int32_t partition)
{
    struct partition_map_node *n = partition_map_remove(&r->followers, topic, partition);
    return n ? PARTITION_MAP_ENTRY(n, struct follower_partition, node) : NULL;
}

static struct leader_partition *take_leader(struct replication *r, const char *topic, int32_t partition)
{
    struct partition_map_node *n = partition_map_remove(&r->leaders, topic, partition);
    return n ? PARTITION_MAP_ENTRY(n, struct leader_partition, node) : NULL;
}

static void free_follower(struct follower_partition *fp)
{
    if (!fp)
        return;
    partition_log_close(fp->log);
    free(fp->topic);
    free(fp);
}

/* The replica manager's leadership listener: start or stop following. A
 * follower fetches from its log end; its high watermark waits for the
 * leader's. */
static void on_leadership(void *ctx, const char *topic, int32_t partition, bool became_leader, int32_t leader_epoch)
{
    struct replication *r = ctx;
    struct replica_partition_info info;
    struct partition_log *log = NULL;
    bool hosted = replica_manager_lookup(r->opts.replicas, topic, partition, &info, &log);
    bool follow = hosted && !became_leader && info.role == REPLICA_ROLE_FOLLOWER && info.leader_id >= 0 &&
                  info.leader_id != r->opts.node_id;
    /* acks=all produces waiting on a partition no longer led here answer now. */
    if (hosted && !became_leader && r->opts.high_watermark_moved)
        r->opts.high_watermark_moved(r->opts.high_watermark_ctx, log);
    struct follower_partition *fresh = follow ? calloc(1, sizeof *fresh) : NULL;
    if (fresh) {
        fresh->topic = strdup(topic);
        fresh->partition = partition;
        fresh->leader_id = info.leader_id;
        fresh->leader_epoch = info.leader_epoch;
        fresh->caught_up_ms = replication_now_ms();
        fresh->has_topic_id = partition_log_topic_id(log, fresh->topic_id) == 0;
        fresh->log = log;
        log = NULL;
    }
    pthread_mutex_lock(&r->lock);
    struct follower_partition *old = take_follower(r, topic, partition);
    if (old) {
        /* A fetch of the old entry from the same leader still running keeps
         * the new one waiting, so two fetchers never append to one log. A
         * new leader's entry does not wait: the old leader may be dead and
         * its fetch stuck until the request times out, and the old
         * fetcher's answer is dropped (still_following checks the epoch). */
        if (fresh && fresh->leader_id == old->leader_id)
            fresh->in_flight = old->in_flight;
        replication_refresh_max_lag(r);
    }
    /* A new epoch starts the followers' bookkeeping over. */
    struct leader_partition *lp = take_leader(r, topic, partition);
    if (hosted && became_leader && info.role == REPLICA_ROLE_LEADER && !r->stopping)
        (void)replication_leader_entry(r, topic, partition, &info, log);
    if (fresh && fresh->topic && !r->stopping) {
        fresh->fetcher = replication_fetcher_for(r, fresh->leader_id,
                                                 fetcher_index(topic, partition, r->opts.num_fetchers));
        if (fresh->fetcher) {
            fresh->node.topic = fresh->topic;
            fresh->node.partition = partition;
            partition_map_add(&r->followers, &fresh->node);
            pthread_cond_signal(&fresh->fetcher->wake);
            logger_info("replication", "%s-%d: following leader %d at epoch %d from offset %lld", topic, partition,
                        fresh->leader_id, fresh->leader_epoch, (long long)partition_log_end_offset(fresh->log));
            fresh = NULL;
        }
    }
    pthread_mutex_unlock(&r->lock);
    if (follow && fresh)
        logger_error("replication", "%s-%d: cannot start following leader %d (out of memory)", topic, partition,
                     info.leader_id);
    else if (old && !follow)
        logger_info("replication", "%s-%d: stopped following (epoch %d)", topic, partition, leader_epoch);
    free_follower(fresh);
    free_follower(old);
    replication_leader_free(lp);
    if (log)
        partition_log_close(log);
}

int replication_start(const struct replication_options *opts, struct replication **out, char *err, size_t errlen)
{
    struct replication *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->opts = *opts;
    if (r->opts.num_fetchers < 1)
        r->opts.num_fetchers = 1;
    if (partition_map_init(&r->followers) != 0 || partition_map_init(&r->leaders) != 0) {
        partition_map_free(&r->followers);
        free(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&r->lock, NULL);
    struct net_client_config cfg;
    net_client_config_defaults(&cfg);
    snprintf(cfg.client_id, sizeof cfg.client_id, "broker-%d-fetcher", opts->node_id);
    cfg.request_timeout_ms = opts->socket_timeout_ms;
    cfg.max_in_flight = 1;
    if (opts->link_apply)
        opts->link_apply(opts->link, &cfg);
    if ((int64_t)opts->fetch_response_max_bytes + 65536 > cfg.max_response_bytes)
        cfg.max_response_bytes = (int64_t)opts->fetch_response_max_bytes + 65536;
    if (net_client_create(&cfg, &r->client, err, errlen) != 0) {
        pthread_mutex_destroy(&r->lock);
        partition_map_free(&r->followers);
        partition_map_free(&r->leaders);
        free(r);
        return -1;
    }
    pthread_cond_init(&r->isr_wake, NULL);
    replication_quota_init(&r->follower_quota, opts->follower_throttled_rate);
    replication_quota_init(&r->leader_quota, opts->leader_throttled_rate);
    /* Kafka's ReplicaManager and ReplicaFetcherManager metrics. */
    r->under_replicated = metrics_register(METRICS_GAUGE, "cairn_replication_under_replicated_partitions", NULL,
                                           "Partitions led here whose ISR is smaller than their replica set.");
    r->under_min_isr = metrics_register(METRICS_GAUGE, "cairn_replication_under_min_isr_partitions", NULL,
                                        "Partitions led here whose ISR is below min.insync.replicas.");
    r->at_min_isr = metrics_register(METRICS_GAUGE, "cairn_replication_at_min_isr_partitions", NULL,
                                     "Partitions led here whose ISR is exactly min.insync.replicas.");
    r->isr_shrinks = metrics_register(METRICS_COUNTER, "cairn_replication_isr_shrinks_total", NULL,
                                      "ISR changes by this leader that removed a replica.");
    r->isr_expands = metrics_register(METRICS_COUNTER, "cairn_replication_isr_expands_total", NULL,
                                      "ISR changes by this leader that added a replica.");
    r->max_lag = metrics_register(METRICS_GAUGE, "cairn_replication_fetcher_max_lag", NULL,
                                  "Largest lag in messages of a partition followed here behind its leader.");
    r->max_lag_ms = metrics_register(METRICS_GAUGE, "cairn_replication_fetcher_max_lag_ms", NULL,
                                     "Longest time a partition followed here has not been caught up with its leader.");
    r->listener_id = replica_manager_add_leadership_listener(opts->replicas, on_leadership, r);
    if (r->listener_id < 0) {
        snprintf(err, errlen, "out of memory");
        replication_stop(r);
        return -1;
    }
    if (replication_isr_start(r) != 0) {
        snprintf(err, errlen, "cannot start the ISR thread");
        replication_stop(r);
        return -1;
    }
    *out = r;
    return 0;
}

void replication_stop(struct replication *r)
{
    if (!r)
        return;
    if (r->listener_id > 0)
        replica_manager_remove_leadership_listener(r->opts.replicas, r->listener_id);
    /* Sends check stopping under the lock, so none reaches the client
     * after it is destroyed; destroying it cancels the fetch in flight. */
    pthread_mutex_lock(&r->lock);
    r->stopping = true;
    for (struct fetcher *f = r->fetchers; f; f = f->next)
        pthread_cond_broadcast(&f->wake);
    pthread_cond_broadcast(&r->isr_wake);
    pthread_mutex_unlock(&r->lock);
    replication_isr_join(r);
    net_client_destroy(r->client);
    replication_fetchers_join(r);
    /* The tables are discarded: each entry is freed once the walk is past it. */
    size_t b = 0;
    for (struct follower_partition *fp = replication_next_follower(r, &b, NULL), *next; fp; fp = next) {
        next = replication_next_follower(r, &b, fp);
        free_follower(fp);
    }
    b = 0;
    for (struct leader_partition *lp = replication_next_leader(r, &b, NULL), *next; lp; lp = next) {
        next = replication_next_leader(r, &b, lp);
        replication_leader_free(lp);
    }
    partition_map_free(&r->followers);
    partition_map_free(&r->leaders);
    pthread_cond_destroy(&r->isr_wake);
    replication_quota_destroy(&r->follower_quota);
    replication_quota_destroy(&r->leader_quota);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

static bool contains(const int32_t *ids, int32_t count, int32_t id)
{
    for (int32_t i = 0; i < count && i < REPLICA_INFO_MAX_REPLICAS; i++)
        if (ids[i] == id)
            return true;
    return false;
}

int64_t replication_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct leader_partition *replication_leader_entry(struct replication *r, const char *topic, int32_t partition,
                                                  const struct replica_partition_info *info, struct partition_log *log)
{
    struct leader_partition *lp = replication_leader(r, topic, partition);
    if (!lp) {
        lp = calloc(1, sizeof *lp);
        if (!lp || !(lp->topic = strdup(topic))) {
            free(lp);
            return NULL;
        }
        lp->partition = partition;
        lp->leader_epoch = -2;
        lp->node.topic = lp->topic;
        lp->node.partition = partition;
        partition_map_add(&r->leaders, &lp->node);
    }
    if (lp->leader_epoch != info->leader_epoch) {
        /* As Kafka's makeLeader: every follower starts the epoch unknown,
         * the in-sync ones caught up now. */
        lp->leader_epoch = info->leader_epoch;
        lp->since_ms = replication_now_ms();
        lp->epoch_start_offset = log ? partition_log_end_offset(log) : -1;
        lp->awaiting_partition_epoch = -1;
        lp->count = 0;
    }
    return lp;
}

void replication_leader_free(struct leader_partition *lp)
{
    if (!lp)
        return;
    free(lp->follower_block);
    free(lp->topic);
    free(lp);
}

/* Room for cap followers, the count first kept. Returns false when out
 * of memory (the arrays stay as they were). */
static bool follower_arrays_grow(struct leader_partition *lp, int32_t cap)
{
    size_t n = (size_t)cap;
    /* The 8-byte arrays first, so every array is aligned. */
    char *block = malloc(n * (6 * sizeof(int64_t) + sizeof(int32_t) + sizeof(bool)));
    if (!block)
        return false;
    int64_t *wide[6];
    for (int k = 0; k < 6; k++)
        wide[k] = (int64_t *)(void *)(block + (size_t)k * n * sizeof(int64_t));
    int32_t *ids = (int32_t *)(void *)(block + 6 * n * sizeof(int64_t));
    bool *flags = (bool *)(block + 6 * n * sizeof(int64_t) + n * sizeof(int32_t));
    int64_t **old_wide[6] = {&lp->log_end_offsets,       &lp->last_caught_up_ms, &lp->last_fetch_ms,
                             &lp->last_fetch_leader_end, &lp->broker_epochs,     &lp->sent_high_watermark};
    size_t kept = (size_t)lp->count;
    for (int k = 0; k < 6; k++) {
        if (kept)
            memcpy(wide[k], *old_wide[k], kept * sizeof(int64_t));
        *old_wide[k] = wide[k];
    }
    if (kept) {
        memcpy(ids, lp->replica_ids, kept * sizeof *ids);
        memcpy(flags, lp->fetched_since_check, kept * sizeof *flags);
    }
    lp->replica_ids = ids;
    lp->fetched_since_check = flags;
    free(lp->follower_block);
    lp->follower_block = block;
    lp->cap = cap;
    return true;
}

static int64_t *follower_leo_slot(struct leader_partition *lp, int32_t replica_id, bool create)
{
    for (int32_t i = 0; i < lp->count; i++)
        if (lp->replica_ids[i] == replica_id)
            return &lp->log_end_offsets[i];
    if (!create || lp->count == LEADER_MAX_REPLICAS)
        return NULL;
    if (lp->count == lp->cap) {
        int32_t cap = lp->cap ? lp->cap * 2 : 4;
        if (!follower_arrays_grow(lp, cap < LEADER_MAX_REPLICAS ? cap : LEADER_MAX_REPLICAS))
            return NULL;
    }
    int32_t i = lp->count++;
    lp->replica_ids[i] = replica_id;
    lp->log_end_offsets[i] = -1;
    lp->last_caught_up_ms[i] = lp->since_ms;
    lp->last_fetch_ms[i] = 0;
    lp->last_fetch_leader_end[i] = -1;
    lp->broker_epochs[i] = -1;
    lp->fetched_since_check[i] = false;
    lp->sent_high_watermark[i] = -1;
    return &lp->log_end_offsets[i];
}

/* Under the lock: the high watermark info's ISR allows, -1 when unknown. */
static int64_t isr_high_watermark(struct replication *r, struct leader_partition *lp,
                                  const struct replica_partition_info *info, int64_t leader_end)
{
    if (!lp)
        return -1;
    /* KIP-966: below min.insync.replicas the high watermark holds, so every
     * replica that leaves the ISR meanwhile (into the ELR) has all below it. */
    if (info->isr_count < info->high_watermark_min_isr)
        return -1;
    int64_t hw = leader_end;
    /* The smallest log end over the ISR; a member not heard from in this
     * epoch holds the high watermark where it is. */
    for (int32_t i = 0; i < info->isr_count && i < REPLICA_INFO_MAX_REPLICAS; i++) {
        if (info->isr[i] == r->opts.node_id)
            continue;
        int64_t *leo = follower_leo_slot(lp, info->isr[i], false);
        int64_t v = leo ? *leo : -1;
        if (v < hw)
            hw = v;
    }
    return hw;
}

static void move_high_watermark(struct replication *r, struct partition_log *log, int64_t hw)
{
    if (hw >= 0 && !partition_log_high_watermark_tracks_end(log)) {
        int64_t before = partition_log_high_watermark(log);
        if (partition_log_update_high_watermark(log, hw) != before && r->opts.high_watermark_moved)
            r->opts.high_watermark_moved(r->opts.high_watermark_ctx, log);
    }
}

void replication_update_high_watermark(struct replication *r, const char *topic, int32_t partition,
                                       const struct replica_partition_info *info, struct partition_log *log)
{
    int64_t leader_end = partition_log_end_offset(log);
    pthread_mutex_lock(&r->lock);
    struct leader_partition *lp = replication_leader_entry(r, topic, partition, info, log);
    int64_t hw = isr_high_watermark(r, lp, info, leader_end);
    pthread_mutex_unlock(&r->lock);
    move_high_watermark(r, log, hw);
}

int16_t replication_follower_fetched(struct replication *r, const char *topic, int32_t partition, int32_t replica_id,
                                     int64_t replica_epoch, int64_t fetch_offset)
{
    struct replica_partition_info info;
    struct partition_log *log = NULL;
    if (!replica_manager_lookup(r->opts.replicas, topic, partition, &info, &log))
        return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    if (info.role != REPLICA_ROLE_LEADER) {
        partition_log_close(log);
        return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    }
    if (replica_id == r->opts.node_id || !contains(info.replicas, info.replica_count, replica_id)) {
        partition_log_close(log);
        return KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    }
    /* Read before taking the lock: the follower never asks past it. */
    int64_t leader_end = partition_log_end_offset(log);
    int64_t now = replication_now_ms();
    pthread_mutex_lock(&r->lock);
    struct leader_partition *lp = replication_leader_entry(r, topic, partition, &info, log);
    int64_t *slot = lp ? follower_leo_slot(lp, replica_id, true) : NULL;
    if (slot) {
        int32_t i = (int32_t)(slot - lp->log_end_offsets);
        *slot = fetch_offset < leader_end ? fetch_offset : leader_end;
        /* Kafka's Replica.updateFetchState: caught up now when it asks for
         * the log end, or as of its previous fetch when it reached the log
         * end the leader had then. */
        if (fetch_offset >= leader_end)
            lp->last_caught_up_ms[i] = now;
        else if (lp->last_fetch_leader_end[i] >= 0 && fetch_offset >= lp->last_fetch_leader_end[i])
            lp->last_caught_up_ms[i] = lp->last_fetch_ms[i];
        lp->last_fetch_leader_end[i] = leader_end;
        lp->last_fetch_ms[i] = now;
        lp->broker_epochs[i] = replica_epoch;
        lp->fetched_since_check[i] = true;
        /* A replica outside the ISR may be ready to rejoin: the ISR thread looks. */
        if (r->isr_started && r->opts.alter_partition && !contains(info.isr, info.isr_count, replica_id)) {
            r->isr_check = true;
            pthread_cond_signal(&r->isr_wake);
        }
    }
    int64_t hw = isr_high_watermark(r, lp, &info, leader_end);
    pthread_mutex_unlock(&r->lock);
    move_high_watermark(r, log, hw);
    partition_log_close(log);
    return KAFKA_ERR_NONE;
}

bool replication_follower_state(struct replication *r, const char *topic, int32_t partition, int32_t replica_id,
                                int64_t *log_end_offset, int64_t *since_caught_up_ms)
{
    if (!r)
        return false;
    struct replica_partition_info info;
    if (!replica_manager_lookup(r->opts.replicas, topic, partition, &info, NULL) || info.role != REPLICA_ROLE_LEADER)
        return false;
    bool known = false;
    int64_t now = replication_now_ms();
    pthread_mutex_lock(&r->lock);
    struct leader_partition *lp = replication_leader(r, topic, partition);
    /* An entry of an older epoch says nothing about this one. */
    int64_t *slot = lp && lp->leader_epoch == info.leader_epoch ? follower_leo_slot(lp, replica_id, false) : NULL;
    if (slot && *slot >= 0) {
        int32_t i = (int32_t)(slot - lp->log_end_offsets);
        *log_end_offset = *slot;
        *since_caught_up_ms = now > lp->last_caught_up_ms[i] ? now - lp->last_caught_up_ms[i] : 0;
        known = true;
    }
    pthread_mutex_unlock(&r->lock);
    return known;
}

/* Under the lock: follower replica_id's sent high watermark slot, NULL
 * when the follower has not fetched in this epoch. */
static int64_t *sent_hw_slot(struct replication *r, const char *topic, int32_t partition, int32_t replica_id)
{
    struct leader_partition *lp = replication_leader(r, topic, partition);
    int64_t *leo = lp ? follower_leo_slot(lp, replica_id, false) : NULL;
    return leo ? &lp->sent_high_watermark[leo - lp->log_end_offsets] : NULL;
}

int32_t replication_absent_followers(struct replication *r, const char *topic, int32_t partition, int32_t *ids,
                                     int32_t cap)
{
    if (!r)
        return 0;
    struct replica_partition_info info;
    struct partition_log *log = NULL;
    if (!replica_manager_lookup(r->opts.replicas, topic, partition, &info, &log))
        return 0;
    int32_t n = 0;
    if (info.role == REPLICA_ROLE_LEADER) {
        pthread_mutex_lock(&r->lock);
        struct leader_partition *lp = replication_leader_entry(r, topic, partition, &info, log);
        for (int32_t i = 0; lp && i < info.isr_count && i < REPLICA_INFO_MAX_REPLICAS && n < cap; i++) {
            if (info.isr[i] == r->opts.node_id)
                continue;
            int64_t *leo = follower_leo_slot(lp, info.isr[i], false);
            if (!leo || *leo < 0)
                ids[n++] = info.isr[i];
        }
        pthread_mutex_unlock(&r->lock);
    }
    partition_log_close(log);
    return n;
}

bool replication_follower_hw_behind(struct replication *r, const char *topic, int32_t partition, int32_t replica_id,
                                    int64_t high_watermark)
{
    if (!r)
        return false;
    pthread_mutex_lock(&r->lock);
    int64_t *slot = sent_hw_slot(r, topic, partition, replica_id);
    bool behind = slot && *slot < high_watermark;
    pthread_mutex_unlock(&r->lock);
    return behind;
}

void replication_follower_hw_sent(struct replication *r, const char *topic, int32_t partition, int32_t replica_id,
                                  int64_t high_watermark)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    int64_t *slot = sent_hw_slot(r, topic, partition, replica_id);
    if (slot)
        *slot = high_watermark;
    pthread_mutex_unlock(&r->lock);
}

void replication_set_num_fetchers(struct replication *r, int32_t num_fetchers)
{
    if (!r)
        return;
    if (num_fetchers < 1)
        num_fetchers = 1;
    pthread_mutex_lock(&r->lock);
    if (r->stopping || num_fetchers == r->opts.num_fetchers) {
        pthread_mutex_unlock(&r->lock);
        return;
    }
    int32_t before = r->opts.num_fetchers;
    r->opts.num_fetchers = num_fetchers;
    int32_t moved = 0, kept = 0;
    size_t b = 0;
    for (struct follower_partition *fp = replication_next_follower(r, &b, NULL); fp;
         fp = replication_next_follower(r, &b, fp)) {
        int32_t index = fetcher_index(fp->topic, fp->partition, num_fetchers);
        if (fp->fetcher->index == index)
            continue;
        struct fetcher *to = replication_fetcher_for(r, fp->leader_id, index);
        if (!to) {
            kept++; /* out of memory or threads: it stays where it is */
            continue;
        }
        /* The old fetcher's answer in flight is no longer applied (it
         * checks fp->fetcher); the new one starts once fp->in_flight clears. */
        fp->fetcher = to;
        moved++;
        pthread_cond_signal(&to->wake);
    }
    /* As Kafka shuts down idle fetcher threads: one past the new count
     * with nothing left to fetch ends once its fetch in progress does. */
    int32_t stopped = 0;
    for (struct fetcher *f = r->fetchers; f; f = f->next) {
        if (f->retired || f->index < num_fetchers)
            continue;
        bool idle = true;
        b = 0;
        for (struct follower_partition *fp = replication_next_follower(r, &b, NULL); fp && idle;
             fp = replication_next_follower(r, &b, fp))
            idle = fp->fetcher != f;
        if (idle) {
            f->retired = true;
            stopped++;
            pthread_cond_signal(&f->wake);
        }
    }
    pthread_mutex_unlock(&r->lock);
    logger_info("replication",
                "num.replica.fetchers now %d (was %d): %d idle fetchers stopped, %d partitions moved to another "
                "fetcher%s",
                num_fetchers, before, stopped, moved, kept ? "; some kept on their fetcher (cannot start one)" : "");
}

void replication_stats(struct replication *r, struct replication_stats *out)
{
    pthread_mutex_lock(&r->lock);
    *out = r->stats;
    pthread_mutex_unlock(&r->lock);
}

void replication_refresh_max_lag(struct replication *r)
{
    int64_t max = 0, max_ms = 0, now = replication_now_ms();
    size_t b = 0;
    for (struct follower_partition *fp = replication_next_follower(r, &b, NULL); fp;
         fp = replication_next_follower(r, &b, fp)) {
        if (fp->lag > max)
            max = fp->lag;
        if (now - fp->caught_up_ms > max_ms)
            max_ms = now - fp->caught_up_ms;
    }
    metrics_set(r->max_lag, max);
    metrics_set(r->max_lag_ms, max_ms);
}

/* Kafka's Partition: min.insync.replicas capped at the replica count, so
 * a partition with fewer replicas than that is at, not under, its minimum. */
static int32_t effective_min_isr(const struct metadata_image *img, const char *topic, int32_t broker_default,
                                 int32_t replica_count)
{
    int32_t min_isr = broker_default > 0 ? broker_default : 1;
    const struct metadata_topic *t = img ? metadata_image_topic_by_name(img, topic, strlen(topic)) : NULL;
    const char *v = t ? metadata_topic_config(t, "min.insync.replicas") : NULL;
    if (v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (!*end && n >= 1 && n <= INT32_MAX)
            min_isr = (int32_t)n;
    }
    return min_isr < replica_count ? min_isr : replica_count;
}

void replication_refresh_leader_gauges(struct replication *r)
{
    pthread_mutex_lock(&r->lock);
    size_t count = r->leaders.count;
    struct {
        char *topic;
        int32_t partition;
    } *led = count ? calloc(count, sizeof *led) : NULL;
    size_t n = 0;
    size_t b = 0;
    for (struct leader_partition *lp = replication_next_leader(r, &b, NULL); led && lp && n < count;
         lp = replication_next_leader(r, &b, lp))
        if ((led[n].topic = strdup(lp->topic)))
            led[n++].partition = lp->partition;
    pthread_mutex_unlock(&r->lock);
    if (count && !led)
        return; /* out of memory: the gauges keep their last values */
    const struct metadata_image *img = r->opts.metadata ? metadata_image_acquire(r->opts.metadata) : NULL;
    int64_t under = 0, under_min = 0, at_min = 0;
    for (size_t i = 0; i < n; i++) {
        struct replica_partition_info info;
        if (replica_manager_lookup(r->opts.replicas, led[i].topic, led[i].partition, &info, NULL) &&
            info.role == REPLICA_ROLE_LEADER) {
            int32_t min_isr = effective_min_isr(img, led[i].topic, r->opts.min_insync_replicas, info.replica_count);
            under += info.isr_count < info.replica_count;
            under_min += info.isr_count < min_isr;
            at_min += info.isr_count == min_isr;
        }
        free(led[i].topic);
    }
    free(led);
    if (img)
        metadata_image_release(img);
    metrics_set(r->under_replicated, under);
    metrics_set(r->under_min_isr, under_min);
    metrics_set(r->at_min_isr, at_min);
}

void replication_set_throttled_rates(struct replication *r, int64_t leader_rate, int64_t follower_rate)
{
    if (!r)
        return;
    replication_quota_set_rate(&r->leader_quota, leader_rate);
    replication_quota_set_rate(&r->follower_quota, follower_rate);
}

bool replication_leader_quota_exceeded(struct replication *r)
{
    return r && replication_quota_exceeded(&r->leader_quota);
}

int64_t replication_leader_quota_wait_ms(struct replication *r)
{
    return r ? replication_quota_wait_ms(&r->leader_quota) : 0;
}

void replication_leader_quota_record(struct replication *r, int64_t bytes)
{
    if (r)
        replication_quota_record(&r->leader_quota, bytes);
}
