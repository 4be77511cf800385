/* The runtime the group and transaction coordinators share: each partition
 * of their internal topic (__consumer_offsets, __transaction_state) is a
 * shard of the coordinator's state, loaded from that partition's log when
 * this broker becomes its leader and dropped when it stops leading (Kafka's
 * coordinator-common runtime).
 *
 * A coordinator keeps a coordinator_shards table: per partition, whether it
 * serves keys there and under which coordinator epoch (the partition's
 * leader epoch, Kafka's coordinatorEpoch). It answers a request for a key
 * with coordinator_shards_serving_key: NOT_COORDINATOR while the partition
 * is not led here, COORDINATOR_LOAD_IN_PROGRESS while it loads.
 *
 * Leadership changes enter through coordinator_runtime_on_leadership, whose
 * signature is the replica layer's leadership listener. It only records the
 * change and queues it; the runtime's loader thread ("coord-loader") runs
 * the coordinator's load and unload hooks one at a time, in the order the
 * changes arrived.
 *
 * Thread-safety: every function may be called from any thread. The shards
 * table has its own lock, a leaf: the runtime never holds it while calling
 * a coordinator, and a coordinator may read the table under its own lock. */
#ifndef CAIRN_COORDINATOR_COORDINATOR_RUNTIME_H
#define CAIRN_COORDINATOR_COORDINATOR_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum coordinator_shard_state {
    COORDINATOR_SHARD_NOT_LEADER, /* NOT_COORDINATOR */
    COORDINATOR_SHARD_LOADING,    /* COORDINATOR_LOAD_IN_PROGRESS */
    COORDINATOR_SHARD_ACTIVE,     /* served */
    COORDINATOR_SHARD_FAILED,     /* the load failed: NOT_COORDINATOR until led again */
};

/* Per-partition state of one internal topic. Created by whoever creates
 * the coordinator that reads it, freed after that coordinator and the
 * runtime are gone. */
struct coordinator_shards;

/* NULL when out of memory or partition_count <= 0. Every partition starts
 * NOT_LEADER with epoch -1. */
struct coordinator_shards *coordinator_shards_create(int32_t partition_count);
void coordinator_shards_free(struct coordinator_shards *s);

int32_t coordinator_shards_partition_count(const struct coordinator_shards *s);
/* The partition holding key (coordinator_partition_for). */
int32_t coordinator_shards_partition_of(const struct coordinator_shards *s, const char *key);
enum coordinator_shard_state coordinator_shards_state(struct coordinator_shards *s, int32_t partition);
/* KAFKA_ERR_NONE when partition is ACTIVE, else the error to answer with. */
int16_t coordinator_shards_serving(struct coordinator_shards *s, int32_t partition);
int16_t coordinator_shards_serving_key(struct coordinator_shards *s, const char *key);
/* Whether some partition is LOADING (listings answer LOAD_IN_PROGRESS). */
bool coordinator_shards_any_loading(struct coordinator_shards *s);
/* The coordinator epoch of the partition: its leader epoch while led here
 * (loading or active), -1 otherwise. */
int32_t coordinator_shards_epoch(struct coordinator_shards *s, int32_t partition);

/* A coordinator's hooks, run on the loader thread, never concurrently.
 * load replays the partition's log into memory (the partition is LOADING,
 * so no request touches its keys meanwhile) and returns 0, or -1 with err;
 * the partition becomes ACTIVE after it returns 0. unload drops every key
 * of the partition from memory and answers what is parked on them with
 * NOT_COORDINATOR; the partition is NOT_LEADER before it runs. */
struct coordinator_shard_ops {
    int (*load)(void *coordinator, int32_t partition, int32_t epoch, char *err, size_t errlen);
    void (*unload)(void *coordinator, int32_t partition);
};

struct coordinator_runtime;

/* Starts the loader thread. Returns 0 or -1 (out of memory, no thread). */
int coordinator_runtime_create(struct coordinator_runtime **out);
/* Stops the loader thread after the change it is running; queued changes
 * are dropped. Before the coordinators are destroyed. NULL is ignored. */
void coordinator_runtime_destroy(struct coordinator_runtime *rt);

/* Routes leadership changes of topic's partitions to a coordinator. shards,
 * ops and coordinator must outlive the runtime. Returns 0 or -1. */
int coordinator_runtime_register(struct coordinator_runtime *rt, const char *topic, struct coordinator_shards *shards,
                                 const struct coordinator_shard_ops *ops, void *coordinator);

/* This broker became (or stopped being) leader of topic-partition at
 * leader_epoch. ctx is the runtime. A topic not registered, or a partition
 * out of range, is ignored. Becoming leader again at a newer epoch while
 * active reloads. Returns at once; the loader thread does the work. */
void coordinator_runtime_on_leadership(void *ctx, const char *topic, int32_t partition, bool became_leader,
                                       int32_t leader_epoch);

/* Waits until every queued change has run. Returns 0, or -1 with the first
 * load error since the last call. */
int coordinator_runtime_wait_idle(struct coordinator_runtime *rt, char *err, size_t errlen);

#endif
