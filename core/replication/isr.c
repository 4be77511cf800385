/* ISR changes at the leader, as Kafka's Partition.maybeShrinkIsr /
 * maybeExpandIsr with AlterPartitionManager: one thread looks at every
 * partition led here each replica.lag.time.max.ms / 2 (and when a replica
 * outside the ISR fetches), and sends one AlterPartition at a time through
 * opts.alter_partition. The committed ISR comes back through the metadata
 * image (the replica manager), never from the answer alone: until the
 * image's partition epoch is past the one answered, nothing more is sent
 * for that partition. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log/partition_log.h"
#include "metrics/metrics.h"
#include "protocol/generated/errors.h"
#include "replica/replica_manager.h"
#include "replication/replication_internal.h"
#include "util/logger.h"

#define LOG "replication"
#define ISR_SOON_MS 100
/* How often the leader gauges (under-replicated, min ISR) are refreshed. */
#define GAUGE_PERIOD_MS 1000

struct isr_target {
    char topic[256];
    int32_t partition;
};

static bool in_list(const int32_t *ids, int32_t count, int32_t id)
{
    for (int32_t i = 0; i < count; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static void format_ids(const int32_t *ids, int32_t n, char *out, size_t outlen)
{
    size_t used = 0;
    out[0] = '\0';
    for (int32_t i = 0; i < n && used < outlen; i++) {
        int w = snprintf(out + used, outlen - used, "%s%d", i ? "," : "", ids[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Under the lock: each member's broker epoch as Kafka's leader sends it
 * (KIP-903): its own for this broker, a follower's as its last fetch in
 * this leader epoch named it, else -1. */
static void isr_epochs(struct replication *r, const struct leader_partition *lp, const int32_t *isr, int32_t n,
                       int64_t own_epoch, int64_t *epochs)
{
    for (int32_t i = 0; i < n; i++) {
        epochs[i] = -1;
        if (isr[i] == r->opts.node_id)
            epochs[i] = own_epoch;
        for (int32_t k = 0; k < lp->count && isr[i] != r->opts.node_id; k++)
            if (lp->replica_ids[k] == isr[i])
                epochs[i] = lp->broker_epochs[k];
    }
}

/* Under the lock: the ISR this leader wants for lp, in *isr (leader
 * first kept where it is). Returns the count. */
static int32_t wanted_isr(struct replication *r, struct leader_partition *lp, const struct replica_partition_info *info,
                          int64_t high_watermark, int64_t now, int32_t *isr)
{
    int32_t n = 0;
    int64_t lag = r->opts.replica_lag_time_max_ms;
    /* Fetches are judged once: a follower that stopped fetching (dead)
     * never rejoins on the strength of its last fetch. */
    bool fetched[LEADER_MAX_REPLICAS];
    for (int32_t k = 0; k < lp->count; k++) {
        fetched[k] = lp->fetched_since_check[k];
        lp->fetched_since_check[k] = false;
    }
    for (int32_t i = 0; i < info->isr_count && i < REPLICA_INFO_MAX_REPLICAS; i++) {
        int32_t id = info->isr[i];
        if (id != r->opts.node_id) {
            int64_t caught_up = lp->since_ms;
            for (int32_t k = 0; k < lp->count; k++)
                if (lp->replica_ids[k] == id)
                    caught_up = lp->last_caught_up_ms[k];
            if (now - caught_up > lag)
                continue; /* out of sync: Kafka's isCaughtUp failed */
        }
        isr[n++] = id;
    }
    if (!in_list(isr, n, r->opts.node_id) && n < REPLICA_INFO_MAX_REPLICAS)
        isr[n++] = r->opts.node_id;
    for (int32_t i = 0; i < info->replica_count && i < REPLICA_INFO_MAX_REPLICAS; i++) {
        int32_t id = info->replicas[i];
        if (in_list(isr, n, id) || in_list(info->isr, info->isr_count, id) || n == REPLICA_INFO_MAX_REPLICAS)
            continue;
        for (int32_t k = 0; k < lp->count; k++) {
            /* Back in sync: its log end reached the high watermark and the
             * start of this leader epoch (Kafka's isFollowerInSync), judged
             * at a fetch, as Kafka does, so a dead follower's last state
             * never brings it back. */
            if (lp->replica_ids[k] == id && fetched[k] && lp->log_end_offsets[k] >= 0 &&
                lp->log_end_offsets[k] >= high_watermark && lp->log_end_offsets[k] >= lp->epoch_start_offset)
                isr[n++] = id;
        }
    }
    return n;
}

static bool same_set(const int32_t *a, int32_t an, const int32_t *b, int32_t bn)
{
    if (an != bn)
        return false;
    for (int32_t i = 0; i < an; i++)
        if (!in_list(b, bn, a[i]))
            return false;
    return true;
}

/* One partition: recompute the high watermark (an ISR the image shrank
 * may let it advance) and send AlterPartition when the ISR should change. */
static void check_partition(struct replication *r, const char *topic, int32_t partition)
{
    struct replica_partition_info info;
    struct partition_log *log = NULL;
    if (!replica_manager_lookup(r->opts.replicas, topic, partition, &info, &log))
        return;
    if (info.role != REPLICA_ROLE_LEADER) {
        partition_log_close(log);
        return;
    }
    replication_update_high_watermark(r, topic, partition, &info, log);
    int64_t hw = partition_log_high_watermark(log);
    uint8_t topic_id[16] = {0};
    (void)partition_log_topic_id(log, topic_id);
    int64_t now = replication_now_ms();
    int32_t isr[REPLICA_INFO_MAX_REPLICAS];
    int64_t epochs[REPLICA_INFO_MAX_REPLICAS];
    int32_t n = 0;
    bool send = false, arrived = false;
    int64_t own_epoch = r->opts.broker_epoch ? r->opts.broker_epoch(r->opts.broker_epoch_ctx) : -1;
    pthread_mutex_lock(&r->lock);
    struct leader_partition *lp = replication_leader_entry(r, topic, partition, &info, log);
    if (lp && lp->awaiting_partition_epoch >= 0 && info.partition_epoch <= lp->awaiting_partition_epoch)
        r->isr_soon = true; /* look again shortly, for the metadata */
    else if (lp) {
        arrived = lp->awaiting_partition_epoch >= 0;
        lp->awaiting_partition_epoch = -1;
        n = wanted_isr(r, lp, &info, hw, now, isr);
        send = !same_set(isr, n, info.isr, info.isr_count);
        isr_epochs(r, lp, isr, n, own_epoch, epochs);
    }
    pthread_mutex_unlock(&r->lock);
    /* The changed ISR is in force: waiting acks=all produces look again
     * (also when the high watermark now tracks the log end, ISR = {self}). */
    if (arrived && r->opts.high_watermark_moved)
        r->opts.high_watermark_moved(r->opts.high_watermark_ctx, log);
    partition_log_close(log);
    if (!send)
        return;
    char from[128], to[128];
    format_ids(info.isr, info.isr_count, from, sizeof from);
    format_ids(isr, n, to, sizeof to);
    int32_t new_epoch = -1;
    int16_t rc = r->opts.alter_partition(r->opts.alter_partition_ctx, topic, topic_id, partition, info.leader_epoch,
                                         info.partition_epoch, isr, epochs, n, &new_epoch);
    bool wait_metadata = rc == KAFKA_ERR_NONE || rc == KAFKA_ERR_FENCED_LEADER_EPOCH ||
                         rc == KAFKA_ERR_INVALID_UPDATE_VERSION || rc == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION ||
                         rc == KAFKA_ERR_UNKNOWN_TOPIC_ID;
    pthread_mutex_lock(&r->lock);
    /* The entry as it is now: a new leader epoch since then starts over. */
    struct leader_partition *cur = replication_leader(r, topic, partition);
    if (cur && cur->leader_epoch == info.leader_epoch && wait_metadata) {
        cur->awaiting_partition_epoch = info.partition_epoch;
        r->isr_soon = true;
    }
    if (rc == KAFKA_ERR_NONE) {
        bool removed = false, added = false;
        for (int32_t i = 0; i < info.isr_count; i++)
            removed |= !in_list(isr, n, info.isr[i]);
        for (int32_t i = 0; i < n; i++)
            added |= !in_list(info.isr, info.isr_count, isr[i]);
        r->stats.isr_shrinks += removed;
        r->stats.isr_expands += added;
        metrics_add(r->isr_shrinks, removed);
        metrics_add(r->isr_expands, added);
    }
    pthread_mutex_unlock(&r->lock);
    if (rc == KAFKA_ERR_NONE)
        logger_info(LOG, "%s-%d: ISR [%s] -> [%s] at partition epoch %d (leader epoch %d)", topic, partition, from, to,
                    new_epoch, info.leader_epoch);
    else if (wait_metadata)
        logger_info(LOG, "%s-%d: AlterPartition [%s] -> [%s] refused (error %d); waiting for newer metadata", topic,
                    partition, from, to, rc);
    else
        logger_info(LOG, "%s-%d: AlterPartition [%s] -> [%s] failed (error %d); retrying", topic, partition, from, to,
                    rc);
}

static void check_all(struct replication *r)
{
    pthread_mutex_lock(&r->lock);
    size_t count = r->leaders.count;
    struct isr_target *targets = count ? calloc(count, sizeof *targets) : NULL;
    size_t n = 0, b = 0;
    for (struct leader_partition *lp = replication_next_leader(r, &b, NULL); targets && lp && n < count;
         lp = replication_next_leader(r, &b, lp)) {
        if (strlen(lp->topic) >= sizeof targets[n].topic)
            continue;
        memcpy(targets[n].topic, lp->topic, strlen(lp->topic) + 1);
        targets[n++].partition = lp->partition;
    }
    pthread_mutex_unlock(&r->lock);
    for (size_t i = 0; i < n; i++) {
        pthread_mutex_lock(&r->lock);
        bool stopping = r->stopping;
        pthread_mutex_unlock(&r->lock);
        if (stopping)
            break;
        check_partition(r, targets[i].topic, targets[i].partition);
    }
    free(targets);
}

static void *isr_main(void *arg)
{
    struct replication *r = arg;
    /* Kafka checks for lagging followers every replica.lag.time.max.ms / 2. */
    int64_t period = r->opts.replica_lag_time_max_ms / 2;
    if (period < 50)
        period = 50;
    int64_t next_round = replication_now_ms() + period;
    for (;;) {
        /* Waiting for metadata after an answer: look again in 100 ms. The
         * gauges are refreshed at least every GAUGE_PERIOD_MS meanwhile. */
        int64_t now = replication_now_ms();
        pthread_mutex_lock(&r->lock);
        if (r->isr_soon && now + ISR_SOON_MS < next_round)
            next_round = now + ISR_SOON_MS;
        r->isr_soon = false;
        pthread_mutex_unlock(&r->lock);
        int64_t wait = next_round - now;
        if (wait > GAUGE_PERIOD_MS)
            wait = GAUGE_PERIOD_MS;
        if (wait < 0)
            wait = 0;
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_sec += wait / 1000;
        deadline.tv_nsec += (wait % 1000) * 1000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
        pthread_mutex_lock(&r->lock);
        while (!r->stopping && !r->isr_check && pthread_cond_timedwait(&r->isr_wake, &r->lock, &deadline) != ETIMEDOUT)
            ;
        bool stopping = r->stopping;
        bool check = r->isr_check;
        r->isr_check = false;
        pthread_mutex_unlock(&r->lock);
        if (stopping)
            break;
        /* Without a controller to ask (no alter_partition) only the gauges run. */
        if (r->opts.alter_partition && (check || replication_now_ms() >= next_round)) {
            check_all(r);
            next_round = replication_now_ms() + period;
        } else if (!r->opts.alter_partition && replication_now_ms() >= next_round) {
            next_round = replication_now_ms() + period;
        }
        replication_refresh_leader_gauges(r);
        /* The followers' time lag grows while no fetch answers. */
        pthread_mutex_lock(&r->lock);
        replication_refresh_max_lag(r);
        pthread_mutex_unlock(&r->lock);
    }
    return NULL;
}

int replication_isr_start(struct replication *r)
{
    if (r->opts.replica_lag_time_max_ms <= 0)
        r->opts.replica_lag_time_max_ms = 30000;
    pthread_mutex_lock(&r->lock);
    int rc = pthread_create(&r->isr_thread, NULL, isr_main, r);
    r->isr_started = rc == 0;
    pthread_mutex_unlock(&r->lock);
    return rc == 0 ? 0 : -1;
}

void replication_isr_join(struct replication *r)
{
    if (r->isr_started)
        pthread_join(r->isr_thread, NULL);
}
