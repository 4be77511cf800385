/* Shared between the module (replication.c: registration, leader-side
 * bookkeeping) and its fetcher threads (fetcher.c). */
#ifndef CAIRN_REPLICATION_INTERNAL_H
#define CAIRN_REPLICATION_INTERNAL_H
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "replication/quota.h"
#include "replication/replication.h"
#include "util/partition_map.h"

struct net_client;
struct partition_log;
struct replica_partition_info;
struct metrics_metric;

/* A partition this broker follows. Fields are read and written under the
 * module's lock; log is the entry's own reference. */
struct follower_partition {
    struct partition_map_node node; /* in replication.followers, keyed by topic, partition */
    char *topic;
    int32_t partition;
    uint8_t topic_id[16];
    bool has_topic_id;
    int32_t leader_id;
    int32_t leader_epoch;
    struct partition_log *log;
    struct fetcher *fetcher;
    /* The fetcher whose fetch in progress includes this partition, NULL
     * when none: after a move to another fetcher (num.replica.fetchers
     * changed) the new one waits for the old one's fetch to finish, so
     * two threads never append to the log at once. */
    struct fetcher *in_flight;
    /* Leader's high watermark minus this log's end at the last fetch
     * (Kafka's FetcherLagMetrics), 0 until then. */
    int64_t lag;
    bool lag_known; /* a fetch has set lag since it started following */
    /* Monotonic ms of the last fetch that found it caught up (lag 0), or
     * of when it started following: the time lag counts from there. */
    int64_t caught_up_ms;
};

/* One fetcher thread: fetches the partitions assigned to it from one leader. */
struct fetcher {
    struct fetcher *next;
    struct replication *r;
    int32_t leader_id;
    int32_t index; /* 0 .. num_fetchers-1 */
    pthread_t thread;
    bool started;
    /* Its index is past num.replica.fetchers and it has no partition: its
     * thread ends (joined at stop) and it is never given partitions again. */
    bool retired;
    pthread_cond_t wake; /* with the module's lock: partitions added, retired, stop */
    /* The leader's address as last given to the client (fetcher thread only). */
    char host[256];
    int port;
};

/* On a leader: what each follower last asked for, in one leader epoch,
 * and when it was last caught up (Kafka's Replica state). */
#define LEADER_MAX_REPLICAS 32
struct leader_partition {
    struct partition_map_node node; /* in replication.leaders, keyed by topic, partition */
    char *topic;
    int32_t partition;
    int32_t leader_epoch;
    int64_t since_ms;           /* monotonic time this epoch was first seen */
    int64_t epoch_start_offset; /* leader's log end then, -1 when unknown */
    /* The partition epoch of the last AlterPartition answered (accepted,
     * or refused as stale): none is sent again until the image's partition
     * epoch is past it. -1: not waiting. */
    int32_t awaiting_partition_epoch;
    /* The followers that fetched in this epoch: count of them, in arrays
     * of cap entries (at most LEADER_MAX_REPLICAS) that all point into one
     * block, allocated at the first fetch. A partition nobody follows (RF
     * 1, or at start-up) holds none: fixed arrays of 32 made each entry
     * 1.8 KB, 180 MB for 100,000 led partitions. */
    int32_t count;
    int32_t cap;
    void *follower_block;
    int32_t *replica_ids;
    int64_t *log_end_offsets; /* -1: not fetched yet in this epoch */
    int64_t *last_caught_up_ms;
    int64_t *last_fetch_ms;
    int64_t *last_fetch_leader_end;
    int64_t *broker_epochs;    /* as the follower's last fetch named it, -1: unknown */
    bool *fetched_since_check; /* a fetch the ISR thread has not judged */
    /* The high watermark last sent to each follower in a Fetch answer, -1:
     * none yet in this epoch (replication_follower_hw_behind). */
    int64_t *sent_high_watermark;
};

/* Frees lp, its topic and its follower arrays. */
void replication_leader_free(struct leader_partition *lp);

struct replication {
    struct replication_options opts;
    struct net_client *client;
    int listener_id;
    pthread_mutex_t lock; /* guards everything below */
    bool stopping;
    /* Keyed by partition: a fetch of many partitions looks each one up
     * (still followed? its follower offsets) in O(1). */
    struct partition_map followers; /* of follower_partition */
    struct fetcher *fetchers;
    struct partition_map leaders; /* of leader_partition */
    struct replication_stats stats;
    /* The ISR thread (isr.c): the leader gauges each second and, when
     * opts.alter_partition is set, ISR changes. */
    pthread_t isr_thread;
    bool isr_started;
    pthread_cond_t isr_wake; /* with lock: a follower may rejoin, stop */
    bool isr_check;          /* set with isr_wake */
    bool isr_soon;           /* a partition waits for metadata: next round soon */
    /* Registered at start; shared process-wide by name (core/metrics). */
    struct metrics_metric *under_replicated, *under_min_isr, *at_min_isr;
    struct metrics_metric *isr_shrinks, *isr_expands, *max_lag, *max_lag_ms;
    /* follower.replication.throttled.rate over the throttled partitions'
     * appends (the fetchers leave them out while it is exceeded), and
     * leader.replication.throttled.rate over what Fetch answers send
     * throttled followers (the handler asks and records). */
    struct replication_quota follower_quota;
    struct replication_quota leader_quota;
};

/* Under the lock: the fetcher of (leader_id, index), started if new; NULL
 * when out of memory or the thread cannot start. */
struct fetcher *replication_fetcher_for(struct replication *r, int32_t leader_id, int32_t index);
/* After stopping is set and the client destroyed: joins and frees every fetcher. */
void replication_fetchers_join(struct replication *r);

/* Under the lock: the entry of topic-partition, NULL when none. */
struct follower_partition *replication_follower(struct replication *r, const char *topic, int32_t partition);
struct leader_partition *replication_leader(struct replication *r, const char *topic, int32_t partition);
/* Under the lock: walks the entries (start with *bucket 0 and prev NULL);
 * NULL at the end. No entry may be added or removed during the walk. */
struct follower_partition *replication_next_follower(struct replication *r, size_t *bucket,
                                                     const struct follower_partition *prev);
struct leader_partition *replication_next_leader(struct replication *r, size_t *bucket,
                                                 const struct leader_partition *prev);

int64_t replication_now_ms(void);
/* Under the lock: the entry of topic-partition for info's leader epoch,
 * created or reset; NULL when out of memory. */
struct leader_partition *replication_leader_entry(struct replication *r, const char *topic, int32_t partition,
                                                  const struct replica_partition_info *info, struct partition_log *log);
/* Not under the lock: moves log's high watermark to the smallest log end
 * over info's ISR (the leader's included), notifying when it moved. */
void replication_update_high_watermark(struct replication *r, const char *topic, int32_t partition,
                                       const struct replica_partition_info *info, struct partition_log *log);
/* Under the lock: sets the fetcher max-lag gauge from every follower's lag. */
void replication_refresh_max_lag(struct replication *r);
/* Not under the lock: sets the leader gauges from the partitions led here. */
void replication_refresh_leader_gauges(struct replication *r);
/* The ISR thread: start after the module is set up; stop after stopping is set. */
int replication_isr_start(struct replication *r);
void replication_isr_join(struct replication *r);

#endif
