/* A gate around a coordinator's shard ops, for the unit tests of
 * per-partition loading: while closed, a load blocks on the runtime's
 * loader thread after saying it started, so the test can look at the
 * coordinator mid-load; fail_next makes the next load fail before it reads
 * anything. Also: waiting for the runtime and picking keys of two
 * partitions. Header-only, for cmocka tests of several modules. */
#ifndef CAIRN_TESTS_UNIT_SHARD_GATE_H
#define CAIRN_TESTS_UNIT_SHARD_GATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "coordinator/coordinator_partition.h"
#include "coordinator/coordinator_runtime.h"

/* Shared by the test's thread and the loader thread; lock guards it. */
struct shard_gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool closed;
    bool fail_next;
    int loads_entered; /* loads that reached the gate */
    const struct coordinator_shard_ops *inner;
    void *coordinator;
};

static inline int shard_gate_load(void *ctx, int32_t partition, int32_t epoch, char *err, size_t errlen)
{
    struct shard_gate *g = ctx;
    pthread_mutex_lock(&g->lock);
    g->loads_entered++;
    pthread_cond_broadcast(&g->cond);
    while (g->closed)
        pthread_cond_wait(&g->cond, &g->lock);
    bool fail = g->fail_next;
    g->fail_next = false;
    pthread_mutex_unlock(&g->lock);
    if (fail) {
        snprintf(err, errlen, "injected load failure");
        return -1;
    }
    return g->inner->load(g->coordinator, partition, epoch, err, errlen);
}

static inline void shard_gate_unload(void *ctx, int32_t partition)
{
    struct shard_gate *g = ctx;
    g->inner->unload(g->coordinator, partition);
}

static const struct coordinator_shard_ops shard_gate_ops = {.load = shard_gate_load, .unload = shard_gate_unload};

static inline void shard_gate_init(struct shard_gate *g, const struct coordinator_shard_ops *inner, void *coordinator)
{
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->closed = false;
    g->fail_next = false;
    g->loads_entered = 0;
    g->inner = inner;
    g->coordinator = coordinator;
}

static inline void shard_gate_destroy(struct shard_gate *g)
{
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
}

static inline void shard_gate_set_closed(struct shard_gate *g, bool closed)
{
    pthread_mutex_lock(&g->lock);
    g->closed = closed;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static inline void shard_gate_fail_next(struct shard_gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->fail_next = true;
    pthread_mutex_unlock(&g->lock);
}

/* Waits until `loads` loads in all have reached the gate. */
static inline void shard_gate_wait_entered(struct shard_gate *g, int loads)
{
    pthread_mutex_lock(&g->lock);
    while (g->loads_entered < loads)
        pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

static inline int shard_gate_entered(struct shard_gate *g)
{
    pthread_mutex_lock(&g->lock);
    int n = g->loads_entered;
    pthread_mutex_unlock(&g->lock);
    return n;
}

/* Drops partition, then leads it again at epoch with the gate closed, and
 * returns once its load waits at the gate (the partition is LOADING). */
static inline void shard_gate_hold_reload(struct shard_gate *g, struct coordinator_runtime *rt, const char *topic,
                                          int32_t partition, int32_t epoch)
{
    coordinator_runtime_on_leadership(rt, topic, partition, false, -1);
    char err[256] = "";
    if (coordinator_runtime_wait_idle(rt, err, sizeof err) != 0)
        fail_msg("unload: %s", err);
    int entered = shard_gate_entered(g);
    shard_gate_set_closed(g, true);
    coordinator_runtime_on_leadership(rt, topic, partition, true, epoch);
    shard_gate_wait_entered(g, entered + 1);
}

/* Waits for the runtime's queue; a load error fails the test. */
static inline void shard_runtime_idle(struct coordinator_runtime *rt)
{
    char err[256] = "";
    if (coordinator_runtime_wait_idle(rt, err, sizeof err) != 0)
        fail_msg("load: %s", err);
}

/* Leads every partition at epoch and waits for the loads. */
static inline void shard_runtime_lead_all(struct coordinator_runtime *rt, const char *topic, int32_t partitions,
                                          int32_t epoch)
{
    for (int32_t p = 0; p < partitions; p++)
        coordinator_runtime_on_leadership(rt, topic, p, true, epoch);
    shard_runtime_idle(rt);
}

/* Two keys "<prefix>-<n>" placed in different partitions. */
struct shard_key_pair {
    char a[32], b[32];
    int32_t part_a, part_b;
};

static inline void shard_key_pair_pick(struct shard_key_pair *k, const char *prefix, int32_t partitions)
{
    k->part_a = k->part_b = -1;
    for (int i = 0; k->part_b < 0; i++) {
        char id[32];
        snprintf(id, sizeof id, "%.16s-%d", prefix, i);
        int32_t p = coordinator_partition_for(id, strlen(id), partitions);
        if (k->part_a < 0) {
            snprintf(k->a, sizeof k->a, "%s", id);
            k->part_a = p;
        } else if (p != k->part_a) {
            snprintf(k->b, sizeof k->b, "%s", id);
            k->part_b = p;
        }
    }
}

#endif
