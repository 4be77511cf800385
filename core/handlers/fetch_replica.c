/* Rack-aware replica selection on the leader and follower reads
 * (KIP-392). The leader weighs followers by what their own fetches told
 * it (replication_follower_state); a follower bounds what it serves by
 * the high watermark the leader sends it (fetch.c). */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "handlers/fetch_replica.h"
#include "coordinator/purgatory.h"
#include "log/log_manager.h"
#include "metrics/metrics.h"
#include "net/server.h"
#include "protocol/generated/errors.h"
#include "replication/replication.h"

static struct metrics_metric *follower_reads;
static struct metrics_metric *redirects;
static pthread_once_t metrics_once = PTHREAD_ONCE_INIT;

static void register_metrics(void)
{
    follower_reads = metrics_register(METRICS_COUNTER, "cairn_fetch_follower_reads_total", NULL,
                                      "Partitions of consumer Fetches this broker served as a follower (KIP-392).");
    redirects = metrics_register(METRICS_COUNTER, "cairn_fetch_preferred_replica_total", NULL,
                                 "Partitions of consumer Fetches the leader sent to a preferred read replica.");
}

void fetch_count_follower_read(void)
{
    pthread_once(&metrics_once, register_metrics);
    metrics_add(follower_reads, 1);
}

void fetch_count_redirect(void)
{
    pthread_once(&metrics_once, register_metrics);
    metrics_add(redirects, 1);
}

#define REPLICA_WAKE_SLOTS 256
/* Per follower (by id modulo the size): bumped to answer its parked
 * fetches; the element's address is the purgatory key, distinct from any
 * partition log's. */
static atomic_uint replica_wake_generation[REPLICA_WAKE_SLOTS];

static size_t wake_slot(int32_t replica_id)
{
    return (size_t)((uint32_t)replica_id % REPLICA_WAKE_SLOTS);
}

uintptr_t fetch_replica_wake_key(int32_t replica_id)
{
    return (uintptr_t)&replica_wake_generation[wake_slot(replica_id)];
}

unsigned fetch_replica_wake_generation(int32_t replica_id)
{
    return atomic_load(&replica_wake_generation[wake_slot(replica_id)]);
}

void fetch_wake_replica(struct purgatory *fetch_purgatory, int32_t replica_id)
{
    atomic_fetch_add(&replica_wake_generation[wake_slot(replica_id)], 1);
    purgatory_notify(fetch_purgatory, fetch_replica_wake_key(replica_id));
}

/* Per follower (same slots): parked produces that found it absent and
 * still wait. */
static atomic_int replica_absent_waiters[REPLICA_WAKE_SLOTS];

void fetch_replica_absent_hold(int32_t replica_id)
{
    atomic_fetch_add(&replica_absent_waiters[wake_slot(replica_id)], 1);
}

void fetch_replica_absent_release(int32_t replica_id)
{
    atomic_fetch_sub(&replica_absent_waiters[wake_slot(replica_id)], 1);
}

int32_t fetch_replica_wait_ms(int32_t replica_id, int32_t wait_ms)
{
    if (atomic_load(&replica_absent_waiters[wake_slot(replica_id)]) > 0 && wait_ms > FETCH_REPLICA_ABSENT_WAIT_MS)
        return FETCH_REPLICA_ABSENT_WAIT_MS;
    return wait_ms;
}

static bool in_list(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

static bool rack_is(const struct metadata_broker *b, struct kafka_str rack)
{
    return b && b->rack && strlen(b->rack) == (size_t)rack.len && memcmp(b->rack, rack.data, (size_t)rack.len) == 0;
}

/* The consumer reaches replicas on the listener it came in on, as Kafka
 * looks endpoints up by the request's listener. */
static bool has_listener(const struct metadata_broker *b, const char *listener)
{
    if (!listener || !listener[0])
        return true;
    for (int32_t i = 0; i < b->endpoint_count; i++)
        if (b->endpoints[i].listener && strcmp(b->endpoints[i].listener, listener) == 0)
            return true;
    return false;
}

int32_t fetch_preferred_read_replica(struct request_context *ctx, const struct metadata_image *img,
                                     const struct metadata_topic *topic, int32_t partition, int64_t fetch_offset,
                                     struct kafka_str client_rack)
{
    const struct metadata_partition *p = metadata_topic_partition(topic, partition);
    if (!p || !p->present || client_rack.len <= 0 || !client_rack.data)
        return -1;
    if (rack_is(metadata_image_broker(img, p->leader), client_rack))
        return -1;
    const char *listener = ctx->net ? ctx->net->listener_name : NULL;
    int32_t best = -1;
    int64_t best_end = -1, best_since = 0;
    for (int32_t i = 0; i < p->isr_count; i++) {
        int32_t id = p->isr[i];
        const struct metadata_broker *b = metadata_image_broker(img, id);
        if (id == p->leader || !b || b->fenced || !rack_is(b, client_rack) || !has_listener(b, listener))
            continue;
        int64_t end, since;
        /* A follower not heard from in this epoch, or behind the offset asked for, cannot serve it. */
        if (!replication_follower_state(ctx->env->replication, topic->name, partition, id, &end, &since) ||
            end < fetch_offset)
            continue;
        if (best < 0 || end > best_end || (end == best_end && since < best_since)) {
            best = id;
            best_end = end;
            best_since = since;
        }
    }
    return best;
}

int16_t fetch_follower_log(struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                           struct partition_log **log_out)
{
    *log_out = NULL;
    const struct metadata_partition *p = metadata_topic_partition(topic, partition);
    if (!p || !p->present)
        return KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    int32_t self = ctx->env->node_id;
    /* Out of the ISR a follower may lag without bound: the leader serves. */
    if (p->leader == self || !in_list(p->replicas, p->replica_count, self) || !in_list(p->isr, p->isr_count, self))
        return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    struct partition_log *log = log_manager_get(ctx->env->logs, topic->name, partition);
    if (!log)
        return KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
    *log_out = log;
    return KAFKA_ERR_NONE;
}

bool fetch_leader_throttled(const struct request_context *ctx, const struct metadata_topic *topic, int32_t partition,
                            int32_t replica_id)
{
    const char *list = metadata_topic_config(topic, "leader.replication.throttled.replicas");
    if (!list || !list[0] || !replication_throttled_replica(list, partition, ctx->env->node_id))
        return false;
    const struct metadata_partition *p = metadata_topic_partition(topic, partition);
    if (!p)
        return false;
    /* An in-sync follower is never held back: the high watermark, and
     * acks=all produces, wait on it. */
    for (int32_t i = 0; i < p->isr_count; i++)
        if (p->isr[i] == replica_id)
            return false;
    return true;
}
