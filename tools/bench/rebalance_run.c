/* One measurement: N members settle, one joins, the group settles again. */
#include "rebalance_run.h"

#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SETTLE_POLL_US 5000
#define WARMUP_US 1000000u
/* A member or partition that consumed nothing this long counts as paused. */
#define PAUSE_THRESHOLD_MS 500.0

/* What one run measured, in milliseconds unless named otherwise. */
struct run_result {
    double rebalance_ms;       /* join -> last member got its new assignment (group Stable) */
    double stable_observed_ms; /* join -> the tool saw Stable through DescribeGroups */
    double member_pause_median_ms, member_pause_max_ms;
    double baseline_member_pause_max_ms;
    double partition_pause_median_ms, partition_pause_max_ms;
    double baseline_partition_pause_max_ms;
    double new_member_first_record_ms;                          /* -1: none */
    double produce_pause_max_ms, baseline_produce_pause_max_ms; /* between delivery reports */
    int members_paused, partitions_paused, moved_partitions;
    int rebalance_callbacks; /* on the old members, during the join */
};

/* Holds every member's lock while it reads: a consistent snapshot. */
static bool group_settled(struct rebalance_member *members, int count, int partitions, uint64_t *last_change_us,
                          char *err, size_t errlen)
{
    bool *owned[REBALANCE_MAX_MEMBERS] = {0};
    bool every_member_has_work = true;
    *last_change_us = 0;
    for (int i = 0; i < count; i++) {
        pthread_mutex_lock(&members[i].lock);
        owned[i] = members[i].owned;
        if (members[i].assign_us > *last_change_us)
            *last_change_us = members[i].assign_us;
        if (members[i].owned_count == 0 && partitions >= count)
            every_member_has_work = false;
        if (members[i].error[0] && !err[0])
            snprintf(err, errlen, "%s", members[i].error);
    }
    bool complete = every_member_has_work && rebalance_assignment_complete(owned, (size_t)count, partitions);
    for (int i = count; i-- > 0;)
        pthread_mutex_unlock(&members[i].lock);
    return complete;
}

/* Waits until the members' assignments cover the topic exactly once and
 * the broker reports the group Stable with `count` members, with no
 * assignment change in between. *done_us: the last assignment change. */
static int wait_settled(rd_kafka_t *admin, const char *group, struct rebalance_member *members, int count,
                        const struct rebalance_options *o, uint64_t *done_us, uint64_t *observed_us, char *err,
                        size_t errlen)
{
    uint64_t deadline = bench_now_us() + (uint64_t)o->timeout_ms * 1000u;
    while (bench_now_us() < deadline) {
        uint64_t before = 0, after = 0;
        if (group_settled(members, count, o->partitions, &before, err, errlen)) {
            int n = 0;
            rd_kafka_consumer_group_state_t state = rebalance_describe_group(admin, group, &n);
            if (state == RD_KAFKA_CONSUMER_GROUP_STATE_STABLE && n == count &&
                group_settled(members, count, o->partitions, &after, err, errlen) && after == before) {
                *done_us = before;
                *observed_us = bench_now_us();
                return 0;
            }
        }
        if (err[0])
            return -1;
        usleep(SETTLE_POLL_US);
    }
    snprintf(err, errlen, "group %s did not settle with %d members within %ld ms", group, count, o->timeout_ms);
    return -1;
}

/* Copies a member's receive times (all partitions, or one when partition
 * >= 0) into a malloc'd array; they are already in order. */
static uint64_t *member_times(struct rebalance_member *m, int partition, size_t *n)
{
    pthread_mutex_lock(&m->lock);
    uint64_t *t = malloc((m->event_count ? m->event_count : 1) * sizeof *t);
    *n = 0;
    for (size_t i = 0; t && i < m->event_count; i++)
        if (partition < 0 || m->events[i].partition == partition)
            t[(*n)++] = m->events[i].at_us;
    pthread_mutex_unlock(&m->lock);
    return t;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Longest silences of every partition, whoever consumed it, in the two
 * windows [base, t0] and [t0, end]. */
static void partition_pauses(struct rebalance_member *members, int count, int partitions, uint64_t base, uint64_t t0,
                             uint64_t end, double *during, double *baseline)
{
    for (int p = 0; p < partitions; p++) {
        uint64_t *all = NULL;
        size_t total = 0;
        for (int i = 0; i < count; i++) {
            size_t n = 0;
            uint64_t *t = member_times(&members[i], p, &n);
            uint64_t *grown = t && n ? realloc(all, (total + n) * sizeof *all) : all;
            if (grown) {
                all = grown;
                memcpy(all + total, t, n * sizeof *t);
                total += n;
            }
            free(t);
        }
        qsort(all, total, sizeof *all, compare_u64);
        during[p] = (double)rebalance_longest_gap(all, total, t0, end) / 1000.0;
        baseline[p] = (double)rebalance_longest_gap(all, total, base, t0) / 1000.0;
        free(all);
    }
}

static void owners_of(struct rebalance_member *members, int count, int partitions, int *owner)
{
    for (int p = 0; p < partitions; p++)
        owner[p] = -1;
    for (int i = 0; i < count; i++) {
        pthread_mutex_lock(&members[i].lock);
        for (int p = 0; p < partitions; p++)
            if (members[i].owned[p])
                owner[p] = i;
        pthread_mutex_unlock(&members[i].lock);
    }
}

static int callbacks_of(struct rebalance_member *members, int count)
{
    int total = 0;
    for (int i = 0; i < count; i++) {
        pthread_mutex_lock(&members[i].lock);
        total += members[i].rebalances;
        pthread_mutex_unlock(&members[i].lock);
    }
    return total;
}

static void measure(struct rebalance_member *members, const struct rebalance_options *o, uint64_t base, uint64_t t0,
                    uint64_t end, struct run_result *r)
{
    int old = o->members;
    double *member_gap = calloc((size_t)old, sizeof *member_gap);
    double *member_base = calloc((size_t)old, sizeof *member_base);
    double *part_gap = calloc((size_t)o->partitions, sizeof *part_gap);
    double *part_base = calloc((size_t)o->partitions, sizeof *part_base);
    if (!member_gap || !member_base || !part_gap || !part_base)
        goto out;
    for (int i = 0; i < old; i++) {
        size_t n = 0;
        uint64_t *t = member_times(&members[i], -1, &n);
        member_gap[i] = (double)rebalance_longest_gap(t, n, t0, end) / 1000.0;
        member_base[i] = (double)rebalance_longest_gap(t, n, base, t0) / 1000.0;
        if (member_gap[i] >= PAUSE_THRESHOLD_MS)
            r->members_paused++;
        free(t);
    }
    r->member_pause_max_ms = rebalance_max(member_gap, (size_t)old);
    r->member_pause_median_ms = rebalance_median(member_gap, (size_t)old);
    r->baseline_member_pause_max_ms = rebalance_max(member_base, (size_t)old);

    size_t n = 0;
    uint64_t *t = member_times(&members[old], -1, &n);
    r->new_member_first_record_ms = -1;
    for (size_t i = 0; t && i < n; i++) {
        if (t[i] >= t0) {
            r->new_member_first_record_ms = (double)(t[i] - t0) / 1000.0;
            break;
        }
    }
    free(t);

    partition_pauses(members, old + 1, o->partitions, base, t0, end, part_gap, part_base);
    for (int p = 0; p < o->partitions; p++)
        if (part_gap[p] >= PAUSE_THRESHOLD_MS)
            r->partitions_paused++;
    r->partition_pause_max_ms = rebalance_max(part_gap, (size_t)o->partitions);
    r->partition_pause_median_ms = rebalance_median(part_gap, (size_t)o->partitions);
    r->baseline_partition_pause_max_ms = rebalance_max(part_base, (size_t)o->partitions);
out:
    free(member_gap);
    free(member_base);
    free(part_gap);
    free(part_base);
}

static void stop_members(struct rebalance_member *members, int count)
{
    /* Signal all first so they leave the group together, not one
     * rebalance per departure. */
    for (int i = 0; i < count; i++)
        atomic_store(&members[i].stop, 1);
    for (int i = 0; i < count; i++)
        rebalance_member_stop(&members[i]);
}

static int run_once(const struct rebalance_options *o, struct rebalance_producer *producer, const char *strategy,
                    int run, struct run_result *r, char *err, size_t errlen)
{
    rd_kafka_t *admin = producer->rk;
    memset(r, 0, sizeof *r);
    char group[160];
    snprintf(group, sizeof group, "rebalance-bench-%s-%d-%d", strategy, (int)getpid(), run);
    struct rebalance_member *members = calloc((size_t)o->members + 1, sizeof *members);
    int *before = calloc((size_t)o->partitions, sizeof *before);
    int *after = calloc((size_t)o->partitions, sizeof *after);
    int started = 0, rc = -1;
    if (!members || !before || !after) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    for (; started < o->members; started++)
        if (rebalance_member_start(&members[started], started, o, group, strategy, NULL, err, errlen) != 0) {
            started++; /* partly started: still needs stopping */
            goto out;
        }
    uint64_t done_us = 0, observed_us = 0, t0 = 0;
    if (wait_settled(admin, group, members, o->members, o, &done_us, &observed_us, err, errlen) != 0)
        goto out;
    usleep(WARMUP_US);
    uint64_t base = bench_now_us();
    usleep((useconds_t)o->baseline_ms * 1000u);
    /* Same seed per run index: both strategies see the same join times. */
    unsigned seed = 2654435761u * (unsigned)(run + 1);
    if (o->jitter_ms > 0)
        usleep((useconds_t)(rand_r(&seed) % o->jitter_ms) * 1000u);
    owners_of(members, o->members, o->partitions, before);
    int callbacks_before = callbacks_of(members, o->members);

    started++;
    if (rebalance_member_start(&members[o->members], o->members, o, group, strategy, &t0, err, errlen) != 0)
        goto out;
    if (wait_settled(admin, group, members, o->members + 1, o, &done_us, &observed_us, err, errlen) != 0)
        goto out;
    owners_of(members, o->members + 1, o->partitions, after);
    r->rebalance_callbacks = callbacks_of(members, o->members) - callbacks_before;
    usleep((useconds_t)o->settle_ms * 1000u);
    uint64_t end = bench_now_us();

    r->rebalance_ms = (double)(done_us - t0) / 1000.0;
    r->stable_observed_ms = (double)(observed_us - t0) / 1000.0;
    for (int p = 0; p < o->partitions; p++)
        r->moved_partitions += before[p] != after[p];
    measure(members, o, base, t0, end, r);
    r->produce_pause_max_ms = rebalance_producer_longest_gap_ms(producer, t0, end);
    r->baseline_produce_pause_max_ms = rebalance_producer_longest_gap_ms(producer, base, t0);
    rc = 0;
out:
    if (members)
        stop_members(members, started);
    free(members);
    free(before);
    free(after);
    return rc;
}

static json_t *run_json(const struct run_result *r)
{
    return json_pack(
        "{s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:i, s:i}", "rebalance_ms", r->rebalance_ms,
        "stable_observed_ms", r->stable_observed_ms, "member_pause_median_ms", r->member_pause_median_ms,
        "member_pause_max_ms", r->member_pause_max_ms, "baseline_member_pause_max_ms", r->baseline_member_pause_max_ms,
        "partition_pause_median_ms", r->partition_pause_median_ms, "partition_pause_max_ms", r->partition_pause_max_ms,
        "baseline_partition_pause_max_ms", r->baseline_partition_pause_max_ms, "new_member_first_record_ms",
        r->new_member_first_record_ms, "produce_pause_max_ms", r->produce_pause_max_ms, "baseline_produce_pause_max_ms",
        r->baseline_produce_pause_max_ms, "members_paused", r->members_paused, "partitions_paused",
        r->partitions_paused, "moved_partitions", r->moved_partitions, "rebalance_callbacks", r->rebalance_callbacks);
}

/* {"median": m, "max": x} of one field over the runs. */
static json_t *summary_of(const struct run_result *runs, int n, size_t field_offset, bool integer)
{
    double *v = calloc((size_t)n, sizeof *v);
    if (!v)
        return json_null();
    for (int i = 0; i < n; i++) {
        const char *base = (const char *)&runs[i] + field_offset;
        v[i] = integer ? (double)*(const int *)base : *(const double *)base;
    }
    double max = rebalance_max(v, (size_t)n), median = rebalance_median(v, (size_t)n);
    free(v);
    return json_pack("{s:f, s:f}", "median", median, "max", max);
}

static json_t *strategy_json(const char *strategy, const struct run_result *runs, int n)
{
    json_t *list = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(list, run_json(&runs[i]));
    json_t *summary = json_object();
#define SUMMARY(field, integer)                                                                                        \
    json_object_set_new(summary, #field, summary_of(runs, n, offsetof(struct run_result, field), integer))
    SUMMARY(rebalance_ms, false);
    SUMMARY(stable_observed_ms, false);
    SUMMARY(member_pause_median_ms, false);
    SUMMARY(member_pause_max_ms, false);
    SUMMARY(partition_pause_max_ms, false);
    SUMMARY(new_member_first_record_ms, false);
    SUMMARY(produce_pause_max_ms, false);
    SUMMARY(members_paused, true);
    SUMMARY(partitions_paused, true);
    SUMMARY(moved_partitions, true);
#undef SUMMARY
    return json_pack("{s:s, s:o, s:o}", "strategy", strategy, "summary", summary, "runs", list);
}

int rebalance_run_all(const struct rebalance_options *o, bool started_broker)
{
    char err[512] = "";
    struct rebalance_producer producer;
    if (rebalance_producer_start(&producer, o, err, sizeof err) != 0) {
        fprintf(stderr, "cairn-rebalance-bench: %s\n", err);
        rebalance_producer_stop(&producer);
        return 1;
    }
    json_t *strategies = json_array();
    int rc = 0;
    for (int s = 0; s < o->strategy_count && rc == 0; s++) {
        struct run_result *runs = calloc((size_t)o->runs, sizeof *runs);
        int done = 0;
        for (; runs && done < o->runs; done++) {
            err[0] = '\0';
            if (run_once(o, &producer, o->strategies[s], done, &runs[done], err, sizeof err) != 0) {
                fprintf(stderr, "cairn-rebalance-bench: %s run %d: %s\n", o->strategies[s], done, err);
                rc = 1;
                break;
            }
            fprintf(stderr,
                    "cairn-rebalance-bench: %s run %d: rebalance %.0f ms, longest member pause %.0f ms, "
                    "%d partitions moved\n",
                    o->strategies[s], done, runs[done].rebalance_ms, runs[done].member_pause_max_ms,
                    runs[done].moved_partitions);
        }
        if (done > 0)
            json_array_append_new(strategies, strategy_json(o->strategies[s], runs, done));
        free(runs);
    }
    long long produced = atomic_load(&producer.produced), failed = atomic_load(&producer.failed);
    rebalance_producer_stop(&producer);

    json_t *overrides = json_array();
    for (int i = 0; i < o->override_count; i++)
        json_array_append_new(overrides, json_string(o->overrides[i]));
    json_t *broker_overrides = json_array();
    for (int i = 0; i < o->broker_override_count; i++)
        json_array_append_new(broker_overrides, json_string(o->broker_overrides[i]));
    json_t *report = json_pack(
        "{s:s, s:s, s:o, s:s, s:i, s:i, s:i, s:i, s:i, s:f, s:s, s:o, s:I, s:I, s:o}", "benchmark", "rebalance",
        "broker", started_broker ? "started (group.initial.rebalance.delay.ms=0)" : "external", "broker_overrides",
        broker_overrides, "client", rd_kafka_version_str(), "partitions", o->partitions, "members_before_join",
        o->members, "runs", o->runs, "rate_per_sec", o->rate, "join_jitter_ms", (int)o->jitter_ms, "pause_threshold_ms",
        PAUSE_THRESHOLD_MS, "topic", o->topic, "overrides", overrides, "produced", (json_int_t)produced,
        "produce_failures", (json_int_t)failed, "strategies", strategies);
    char *text = report ? json_dumps(report, JSON_INDENT(2) | JSON_REAL_PRECISION(7)) : NULL;
    if (text)
        printf("%s\n", text);
    free(text);
    json_decref(report);
    return rc;
}
