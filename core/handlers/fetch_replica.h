/* Fetching from the closest replica (KIP-392): the leader's rack-aware
 * choice of a preferred read replica, and the follower's side of a
 * consumer Fetch. Used by fetch.c only; any io thread may call these. */
#ifndef CAIRN_HANDLERS_FETCH_REPLICA_H
#define CAIRN_HANDLERS_FETCH_REPLICA_H
#include <stdbool.h>
#include <stdint.h>

#include "handlers/handlers.h"
#include "metadata/metadata_image.h"

struct partition_log;
struct purgatory;

/* Kafka's value of replica.selector.class that turns rack-aware
 * selection on (its class name, so configs carry over unchanged). */
#define FETCH_RACK_AWARE_SELECTOR "org.apache.kafka.common.replica.RackAwareReplicaSelector"

/* On the leader (Kafka's RackAwareReplicaSelector): for a consumer in
 * client_rack fetching at fetch_offset, the id of an in-sync follower in
 * that rack holding fetch_offset (the one furthest ahead, then the one
 * caught up most recently), reachable on the consumer's listener; -1 when
 * the consumer names no rack, the leader is in its rack, or no follower
 * qualifies (the leader serves). */
int32_t fetch_preferred_read_replica(struct request_context *ctx, const struct metadata_image *img,
                                     const struct metadata_topic *topic, int32_t partition, int64_t fetch_offset,
                                     struct kafka_str client_rack);

/* The log of a partition this broker follows and may serve a consumer
 * from: a replica in the ISR, not the leader. NOT_LEADER_OR_FOLLOWER
 * otherwise (the consumer goes back to the leader). */
int16_t fetch_follower_log(struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                           struct partition_log **log_out);

/* On the leader, for a follower's Fetch (Kafka's shouldLeaderThrottle
 * less its quota check): whether the topic's
 * leader.replication.throttled.replicas names this broker's replica of
 * partition and follower replica_id is outside the ISR. */
bool fetch_leader_throttled(const struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                            int32_t replica_id);

/* On the leader: a parked Fetch from follower replica_id watches
 * fetch_replica_wake_key(replica_id) and answers at once, with what it
 * has, when fetch_wake_replica moved the follower's wake generation past
 * the one it saw when parked (a produce waits on a partition that
 * follower has yet to add to its fetches). Ids sharing a key (modulo 256)
 * may wake each other's fetches early, which costs one empty answer. */
uintptr_t fetch_replica_wake_key(int32_t replica_id);
unsigned fetch_replica_wake_generation(int32_t replica_id);
void fetch_wake_replica(struct purgatory *fetch_purgatory, int32_t replica_id);

/* The wake above reaches the fetch the follower has parked, but a
 * follower that has not yet applied the partition's metadata sends its
 * next fetch without it, and that one would park for
 * replica.fetch.wait.max.ms with nothing to wake it when the producer has
 * all its requests parked (5 in flight on a fresh topic). So a produce
 * that woke absent followers holds them (fetch_replica_absent_hold) until
 * it is answered or dropped (_release), and while any produce holds a
 * follower its fetches park at most FETCH_REPLICA_ABSENT_WAIT_MS
 * (fetch_replica_wait_ms: wait_ms, or that bound): it polls until it
 * names the partition. Same slots, and same sharing, as the wake. */
#define FETCH_REPLICA_ABSENT_WAIT_MS 5
void fetch_replica_absent_hold(int32_t replica_id);
void fetch_replica_absent_release(int32_t replica_id);
int32_t fetch_replica_wait_ms(int32_t replica_id, int32_t wait_ms);

/* Counters on /metrics: partitions a follower served to consumers, and
 * partitions the leader sent to a preferred read replica. */
void fetch_count_follower_read(void);
void fetch_count_redirect(void);

#endif
