/* Fetch: answer with file regions of the partition logs (sent with
 * sendfile), wait in the fetch purgatory while fewer than min_bytes are
 * available, and keep incremental fetch sessions (KIP-227). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handlers/fetch_replica.h"
#include "handlers/fetch_session.h"
#include "handlers/handler_util.h"
#include "coordinator/purgatory.h"
#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/server.h"
#include "replication/replication.h"
#include "tiered/tiered.h"
#include "util/clock.h"
#include "util/logger.h"

/* The longest a fetch waits for min_bytes, whatever its max_wait_ms asks.
 * Kafka has no such cap beyond its clients' request.timeout.ms (30 s by
 * default), past which a client has given up on the answer anyway. */
#define FETCH_MAX_WAIT_CAP_MS 30000

/* A fetch in progress: owned by the handler until parked, then by the
 * purgatory until it completes. */
struct fetch_op {
    struct delayed_op op; /* first: the purgatory hands us this pointer */
    struct request_context *ctx;
    struct purgatory *purgatory;
    atomic_bool cancelled; /* its connection closed: answer nobody, free now */
    struct fetch_plan plan;
    int32_t min_bytes;
    int32_t max_bytes;
    bool read_committed;
    bool from_replica; /* a follower's fetch: reads up to the log end, not the high watermark */
    int32_t replica_id;
    /* A consumer Fetch (v11+) with replica.selector.class set: a follower
     * serves it, and the leader may name a preferred read replica in
     * client_rack (KIP-392). client_rack lives in the request's arena. */
    bool closest_replica;
    struct kafka_str client_rack;
    /* A follower's fetch: its wake generation when parked
     * (fetch_wake_replica answers it once that moves). */
    unsigned wake_generation;
};

/* Ordered for packing: one is kept per partition while a fetch is read. */
struct partition_answer {
    struct kafka_records records;
    int64_t high_watermark;
    int64_t last_stable_offset;
    int64_t log_start_offset;
    /* A follower whose log diverged from the leader's (KIP-320): the
     * largest epoch both may share and where it ends here. */
    int64_t diverging_end_offset;
    /* read_committed: aborted transactions overlapping the records (heap). */
    struct fetch_response_aborted_transaction *aborted;
    int32_t diverging_epoch;
    int32_t aborted_count, aborted_cap;
    int32_t preferred_read_replica; /* -1: none; else no records, the consumer goes there */
    int16_t error_code;
    bool aborted_failed;
    bool remote_pending; /* its records are on their way from the remote store */
    bool diverging;
    /* A follower's answer leader.replication.throttled.rate limits: its
     * bytes count against the rate (empty while it is exceeded). */
    bool leader_throttled;
    bool follower_read; /* served by this broker as a follower */
};

static void add_aborted(void *arg, int64_t producer_id, int64_t first_offset)
{
    struct partition_answer *ans = arg;
    if (ans->aborted_count == ans->aborted_cap) {
        int32_t cap = ans->aborted_cap ? ans->aborted_cap * 2 : 4;
        struct fetch_response_aborted_transaction *grown = cap > 0 ? realloc(ans->aborted, (size_t)cap * sizeof *grown)
                                                                   : NULL;
        if (!grown) {
            ans->aborted_failed = true;
            return;
        }
        ans->aborted = grown;
        ans->aborted_cap = cap;
    }
    ans->aborted[ans->aborted_count].producer_id = producer_id;
    ans->aborted[ans->aborted_count].first_offset = first_offset;
    ans->aborted_count++;
}

/* The partition's log to read: this broker leads it or, for a consumer
 * that may fetch from the closest replica, follows it in the ISR. */
static int16_t open_partition_log(struct request_context *ctx, const struct fetch_op *f,
                                  const struct metadata_topic *topic, int32_t partition, struct partition_log **log,
                                  bool *as_follower)
{
    *as_follower = false;
    int16_t err = handler_leader_log(ctx, topic, partition, log);
    if (err == KAFKA_ERR_NOT_LEADER_OR_FOLLOWER && f->closest_replica) {
        err = fetch_follower_log(ctx, topic, partition, log);
        *as_follower = err == KAFKA_ERR_NONE;
    }
    return err;
}

/* strict_limit: the byte limit is hard (KIP-74: only the first partition
 * with data may exceed the limits, so a consumer always progresses; a later
 * partition whose next batch does not fit sends no records this time). */
static void read_partition(const struct fetch_op *f, const struct metadata_image *img,
                           const struct fetch_partition_state *ps, int32_t byte_limit, bool strict_limit,
                           struct partition_answer *ans)
{
    struct request_context *ctx = f->ctx;
    bool read_committed = f->read_committed, from_replica = f->from_replica;
    ans->error_code = KAFKA_ERR_NONE;
    ans->preferred_read_replica = -1;
    ans->high_watermark = -1;
    ans->last_stable_offset = -1;
    ans->log_start_offset = -1;
    ans->records = kafka_records_from_memory(NULL, 0);
    /* A follower was authorised once for the cluster (CLUSTER_ACTION). */
    if (ps->topic->name[0] && !from_replica &&
        !handler_authorize_resource(ctx, CAIRN_OP_READ, CAIRN_RESOURCE_TOPIC, ps->topic->name, true)) {
        ans->error_code = KAFKA_ERR_TOPIC_AUTHORIZATION_FAILED;
        return;
    }
    const struct metadata_topic *topic = ps->topic->name[0]
                                             ? metadata_image_topic_by_name(img, ps->topic->name, ps->topic->name_len)
                                             : NULL;
    if (!topic) {
        /* From v13 topics come by id, and an empty name is an unknown id. */
        ans->error_code = ps->topic->name[0] || ctx->api_version < 13 ? KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION
                                                                      : KAFKA_ERR_UNKNOWN_TOPIC_ID;
        return;
    }
    struct partition_log *log;
    bool as_follower;
    ans->error_code = open_partition_log(ctx, f, topic, ps->partition, &log, &as_follower);
    if (ans->error_code != KAFKA_ERR_NONE)
        return;
    ans->follower_read = as_follower;
    /* KIP-320: a consumer that knows another leader epoch is told which way
     * it is off, and refreshes its metadata, as with ListOffsets. */
    ans->error_code = handler_check_leader_epoch(metadata_topic_partition(topic, ps->partition),
                                                 ps->current_leader_epoch);
    if (ans->error_code != KAFKA_ERR_NONE) {
        partition_log_close(log);
        return;
    }
    /* LSO before HW: a marker landing in between only makes the LSO look older. */
    int64_t lso = partition_log_last_stable_offset(log);
    ans->high_watermark = handler_high_watermark(log);
    ans->last_stable_offset = lso < ans->high_watermark ? lso : ans->high_watermark;
    ans->log_start_offset = partition_log_start_offset(log);
    /* The leader sends a consumer in another rack to an in-sync replica in
     * its own, with no records (Kafka's ReplicaManager skips the read). */
    if (f->closest_replica && !as_follower) {
        ans->preferred_read_replica = fetch_preferred_read_replica(ctx, img, topic, ps->partition, ps->fetch_offset,
                                                                   f->client_rack);
        if (ans->preferred_read_replica >= 0) {
            partition_log_close(log);
            return;
        }
    }
    /* A follower's last epoch ends earlier here, or is unknown here: it
     * truncates to where the epochs agree before fetching on. */
    if (from_replica && ps->last_fetched_epoch >= 0) {
        int32_t found = -1;
        int64_t end = partition_log_end_offset_for_epoch(log, ps->last_fetched_epoch, &found);
        int32_t latest = partition_log_latest_epoch(log);
        if (found < 0 && latest >= 0 && ps->last_fetched_epoch > latest) {
            /* An epoch newer than any here: they agree at most up to this
             * log's end, in its latest epoch. */
            found = latest;
            end = partition_log_end_offset(log);
        }
        if (found >= 0 && end >= 0 && (found < ps->last_fetched_epoch || end < ps->fetch_offset)) {
            ans->diverging = true;
            ans->diverging_epoch = found;
            ans->diverging_end_offset = end;
            partition_log_close(log);
            return;
        }
    }
    /* Kafka's ReplicaManager: a throttled partition over the rate goes
     * back empty; the other partitions of the fetch are read as usual. */
    if (from_replica && fetch_leader_throttled(ctx, topic, ps->partition, f->replica_id)) {
        ans->leader_throttled = true;
        if (replication_leader_quota_exceeded(ctx->env->replication)) {
            partition_log_close(log);
            return;
        }
    }
    struct log_read_result rr;
    /* Consumers see what the ISR holds; a follower copies everything. */
    int64_t max_offset = from_replica ? INT64_MAX : read_committed ? ans->last_stable_offset : ans->high_watermark;
    /* Below the local log start, tiered storage answers (off this thread). */
    int16_t remote_error = KAFKA_ERR_NONE;
    /* A follower reads its local log only: below it the consumer goes to
     * the leader (OFFSET_OUT_OF_RANGE), which reads the remote store. */
    enum tiered_read_status remote = as_follower ? TIERED_READ_LOCAL
                                                 : tiered_read(ctx->env->tiered, log, ps->topic->name, ps->partition,
                                                               ps->fetch_offset, byte_limit, max_offset, (uintptr_t)log,
                                                               &rr, &remote_error);
    if (remote == TIERED_READ_LOCAL) {
        ans->error_code = partition_log_read(log, ps->fetch_offset, byte_limit, max_offset, &rr);
    } else {
        ans->error_code = remote_error;
        ans->remote_pending = remote == TIERED_READ_PENDING;
        if (remote != TIERED_READ_DONE) {
            rr.fd = -1;
            rr.len = 0;
        }
    }
    /* Past a follower's log end, a consumer that sent no leader epoch may
     * be here on stale metadata: empty, not out of range, so it retries
     * rather than resets (KAFKA-14255). One that sent an epoch asks the
     * leader, which knows whether the offset exists (KIP-392). */
    if (as_follower && ans->error_code == KAFKA_ERR_OFFSET_OUT_OF_RANGE && ps->current_leader_epoch < 0 &&
        ps->fetch_offset > partition_log_end_offset(log)) {
        ans->error_code = KAFKA_ERR_NONE;
        rr.fd = -1;
        rr.len = 0;
    }
    if (ans->error_code == KAFKA_ERR_NONE && strict_limit && rr.len > byte_limit) {
        if (rr.fd >= 0)
            close(rr.fd);
        rr.fd = -1;
        rr.len = 0;
    }
    if (ans->error_code == KAFKA_ERR_NONE && read_committed && rr.len > 0) {
        /* Markers in remote segments first (they come before the local ones). */
        if (remote == TIERED_READ_DONE)
            tiered_aborted_txns(ctx->env->tiered, ps->topic->name, ps->partition, ps->fetch_offset, rr.next_offset,
                                partition_log_local_start_offset(log), add_aborted, ans);
        partition_log_aborted_txns(log, ps->fetch_offset, rr.next_offset, add_aborted, ans);
        if (ans->aborted_failed) {
            /* Without the full list the consumer would show aborted records. */
            ans->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            close(rr.fd);
        }
    }
    partition_log_close(log);
    if (ans->error_code != KAFKA_ERR_NONE)
        return;
    if (rr.len > 0) {
        ans->records = kafka_records_from_file(rr.fd, rr.file_pos, (int32_t)rr.len);
    } else if (rr.fd >= 0) {
        close(rr.fd);
    }
}

static bool partition_has_news(const struct fetch_partition_state *ps, const struct partition_answer *ans)
{
    return ans->error_code != KAFKA_ERR_NONE || ans->records.len > 0 || ans->diverging ||
           ans->preferred_read_replica >= 0 || ans->high_watermark != ps->last_high_watermark ||
           ans->log_start_offset != ps->last_log_start_offset;
}

static void close_answers(struct partition_answer *answers, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (answers[i].records.file_fd >= 0)
            close(answers[i].records.file_fd);
        free(answers[i].aborted);
        answers[i].aborted = NULL;
    }
}

static bool same_topic(const struct fetch_partition_state *a, const struct fetch_partition_state *b)
{
    return a->topic == b->topic; /* interned per plan */
}

static bool partition_included(const struct fetch_op *f, int32_t i, const struct partition_answer *answers)
{
    return !f->plan.incremental || partition_has_news(&f->plan.partitions[i], &answers[i]);
}

/* The number of included partitions in the run of one topic that starts at
 * first (an included partition); *end gets the index past the run. Skipped
 * partitions do not break a run. */
static int32_t topic_run(const struct fetch_op *f, const struct partition_answer *answers, int32_t first, int32_t *end)
{
    int32_t n = f->plan.partition_count, count = 0, i = first;
    for (; i < n; i++) {
        if (!partition_included(f, i, answers))
            continue;
        if (!same_topic(&f->plan.partitions[i], &f->plan.partitions[first]))
            break;
        count++;
    }
    *end = i;
    return count;
}

static void fill_partition(const struct fetch_op *f, const struct fetch_partition_state *ps,
                           struct partition_answer *ans, struct fetch_response_partition_data *pd);

/* Fills the response from the answers; consecutive partitions of one topic
 * share a topic entry. Every array is sized exactly (a first pass counts
 * the runs), so alternating topics cost O(partitions), not O(partitions^2). */
static int fill_response(struct fetch_op *f, struct partition_answer *answers)
{
    struct request_context *ctx = f->ctx;
    struct fetch_response *resp = ctx->response;
    int32_t n = f->plan.partition_count, topics = 0;
    for (int32_t i = 0; i < n;) {
        if (!partition_included(f, i, answers)) {
            i++;
            continue;
        }
        topic_run(f, answers, i, &i);
        topics++;
    }
    HANDLER_NEW_ARRAY(ctx, resp->responses, topics, fetch_response_fetchable_topic_response_init);
    if (!resp->responses)
        return -1;
    int32_t t = 0;
    for (int32_t i = 0; i < n;) {
        if (!partition_included(f, i, answers)) {
            i++;
            continue;
        }
        int32_t end;
        int32_t count = topic_run(f, answers, i, &end);
        const struct fetch_partition_state *first = &f->plan.partitions[i];
        struct fetch_response_fetchable_topic_response *cur = &resp->responses[t++];
        /* Borrowed: the plan holds the topic until after the response is encoded. */
        cur->topic = (struct kafka_str){first->topic->name, first->topic->name_len};
        cur->topic_id = first->topic->id;
        HANDLER_NEW_ARRAY(ctx, cur->partitions, count, fetch_response_partition_data_init);
        if (!cur->partitions)
            return -1;
        cur->partitions_count = 0;
        for (int32_t j = i; j < end; j++)
            if (partition_included(f, j, answers) && same_topic(&f->plan.partitions[j], first))
                fill_partition(f, &f->plan.partitions[j], &answers[j], &cur->partitions[cur->partitions_count++]);
        i = end;
    }
    resp->responses_count = topics;
    return 0;
}

static void fill_partition(const struct fetch_op *f, const struct fetch_partition_state *ps,
                           struct partition_answer *ans, struct fetch_response_partition_data *pd)
{
    struct request_context *ctx = f->ctx;
    pd->partition_index = ps->partition;
    pd->error_code = ans->error_code;
    pd->high_watermark = ans->high_watermark;
    pd->last_stable_offset = ans->last_stable_offset;
    pd->log_start_offset = ans->log_start_offset;
    pd->diverging_epoch.epoch = ans->diverging ? ans->diverging_epoch : -1;
    pd->diverging_epoch.end_offset = ans->diverging ? ans->diverging_end_offset : -1;
    pd->current_leader.leader_id = -1;
    pd->current_leader.leader_epoch = -1;
    pd->snapshot_id.end_offset = -1;
    pd->snapshot_id.epoch = -1;
    /* Null for read_uncommitted; read_committed gets the aborted
     * transactions overlapping the returned records. */
    pd->aborted_transactions_count = f->read_committed ? 0 : -1;
    if (f->read_committed && ans->aborted_count > 0) {
        size_t bytes = (size_t)ans->aborted_count * sizeof *ans->aborted;
        pd->aborted_transactions = kafka_arena_alloc(&ctx->arena, bytes);
        if (pd->aborted_transactions) {
            memcpy(pd->aborted_transactions, ans->aborted, bytes);
            pd->aborted_transactions_count = ans->aborted_count;
        } else {
            /* Without the list the consumer would show aborted records. */
            pd->error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
            pd->aborted_transactions_count = 0;
            if (ans->records.file_fd >= 0)
                close(ans->records.file_fd);
            ans->records = kafka_records_from_memory(NULL, 0);
        }
    }
    pd->preferred_read_replica = ans->preferred_read_replica;
    if (ans->preferred_read_replica >= 0)
        fetch_count_redirect();
    if (ans->follower_read)
        fetch_count_follower_read();
    pd->records = ans->records;
    ans->records.file_fd = -1; /* the response owns it now */
}

static void remember_sent(struct fetch_op *f, const struct partition_answer *answers)
{
    if (f->plan.response_session_id == 0)
        return;
    for (int32_t i = 0; i < f->plan.partition_count; i++) {
        f->plan.partitions[i].last_high_watermark = answers[i].high_watermark;
        f->plan.partitions[i].last_log_start_offset = answers[i].log_start_offset;
    }
    fetch_session_record_sent(f->ctx->env->fetch_sessions, f->plan.response_session_id, f->plan.partitions,
                              f->plan.partition_count);
}

/* With rack-aware fetching consumers read from followers up to the
 * follower's high watermark, so a follower is answered as soon as the
 * leader's has moved past what it was last sent (Kafka's DelayedFetch),
 * rather than at replica.fetch.wait.max.ms. */
static bool replica_hw_behind(const struct fetch_op *f, const struct partition_answer *answers)
{
    if (!f->from_replica || !f->ctx->env->rack_aware_replica_selector)
        return false;
    for (int32_t i = 0; i < f->plan.partition_count; i++) {
        const struct fetch_partition_state *ps = &f->plan.partitions[i];
        if (ps->topic->name[0] && answers[i].error_code == KAFKA_ERR_NONE && !answers[i].diverging &&
            replication_follower_hw_behind(f->ctx->env->replication, ps->topic->name, ps->partition, f->replica_id,
                                           answers[i].high_watermark))
            return true;
    }
    return false;
}

static void note_replica_hw(const struct fetch_op *f, const struct partition_answer *answers)
{
    if (!f->from_replica || !f->ctx->env->rack_aware_replica_selector)
        return;
    for (int32_t i = 0; i < f->plan.partition_count; i++) {
        const struct fetch_partition_state *ps = &f->plan.partitions[i];
        if (ps->topic->name[0] && answers[i].error_code == KAFKA_ERR_NONE && !answers[i].diverging)
            replication_follower_hw_sent(f->ctx->env->replication, ps->topic->name, ps->partition, f->replica_id,
                                         answers[i].high_watermark);
    }
}

/* Reads every partition; answers when there is enough (or time is up). */
static bool fetch_try_complete(struct delayed_op *op, bool expired)
{
    struct fetch_op *f = (struct fetch_op *)op;
    struct request_context *ctx = f->ctx;
    if (atomic_load(&f->cancelled)) {
        request_context_abandon(ctx, true);
        return true;
    }
    int32_t n = f->plan.partition_count;
    struct partition_answer *answers = calloc((size_t)(n ? n : 1), sizeof *answers);
    if (!answers) {
        request_context_abandon(ctx, true);
        return true;
    }
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    int64_t total = 0;
    bool any_error = false, any_pending = false, any_redirect = false;
    for (int32_t i = 0; i < n; i++) {
        const struct fetch_partition_state *ps = &f->plan.partitions[i];
        int32_t remaining = total >= f->max_bytes ? 0 : (int32_t)(f->max_bytes - total);
        int32_t limit = ps->max_bytes < remaining ? ps->max_bytes : remaining;
        /* The first data may exceed the limits so consumers always progress. */
        if (total == 0 && limit <= 0)
            limit = 1;
        answers[i].records.file_fd = -1;
        answers[i].preferred_read_replica = -1;
        if (img)
            read_partition(f, img, ps, limit, total > 0, &answers[i]);
        else
            answers[i].error_code = KAFKA_ERR_UNKNOWN_SERVER_ERROR;
        if (answers[i].error_code != KAFKA_ERR_NONE)
            any_error = true;
        any_pending |= answers[i].remote_pending;
        any_redirect |= answers[i].preferred_read_replica >= 0;
        if (answers[i].records.len > 0)
            total += answers[i].records.len;
    }
    if (img)
        metadata_image_release(img);

    /* A remote read in flight is waited for (up to remote.fetch.max.wait.ms)
     * unless other partitions already answer. */
    bool woken = f->from_replica && fetch_replica_wake_generation(f->replica_id) != f->wake_generation;
    if (!expired && !woken && !any_error && !any_redirect && (total < f->min_bytes || (any_pending && total == 0)) &&
        !replica_hw_behind(f, answers)) {
        close_answers(answers, n);
        free(answers);
        return false;
    }
    /* What goes to throttled followers counts once, when sent. */
    int64_t throttled_bytes = 0;
    for (int32_t i = 0; i < n; i++)
        if (answers[i].leader_throttled && answers[i].error_code == KAFKA_ERR_NONE)
            throttled_bytes += answers[i].records.len;
    replication_leader_quota_record(ctx->env->replication, throttled_bytes);
    struct fetch_response *resp = ctx->response;
    resp->session_id = f->plan.response_session_id;
    resp->error_code = KAFKA_ERR_NONE;
    if (fill_response(f, answers) != 0) {
        close_answers(answers, n);
        free(answers);
        request_context_abandon(ctx, true);
        return true;
    }
    remember_sent(f, answers);
    note_replica_hw(f, answers);
    close_answers(answers, n);
    free(answers);
    request_context_respond(ctx);
    return true;
}

/* On the connection's loop thread: the client is gone, so the parked fetch
 * is answered (to nobody) by the expiry thread now rather than at its
 * deadline, and its plan, arena and frame are freed. */
static void fetch_cancel(void *arg)
{
    struct fetch_op *f = arg;
    atomic_store(&f->cancelled, true);
    purgatory_expire_now(f->purgatory, &f->op);
}

static void fetch_op_free(struct delayed_op *op)
{
    struct fetch_op *f = (struct fetch_op *)op;
    fetch_plan_free(&f->plan);
    free(f);
}

/* The request's topic, interned in its set: named by the request before
 * v13, looked up by id from v13 ("" when the id is unknown). */
static struct fetch_topic *topic_of(struct request_context *ctx, const struct metadata_image *img,
                                    struct fetch_topic_set *topics, struct kafka_str name, const struct kafka_uuid *id)
{
    char buf[256];
    const char *s = "";
    if (ctx->api_version < 13) {
        handler_name_cstr(name, buf, sizeof buf);
        s = buf;
    } else {
        const struct metadata_topic *topic = metadata_image_topic_by_id(img, id);
        if (topic)
            s = topic->name;
    }
    return fetch_topic_set_intern(topics, s, strlen(s), id);
}

/* Turns the request's topics into partition states, resolving topic ids;
 * the partitions borrow their topics from `topics`. */
static int collect_partitions(struct request_context *ctx, const struct metadata_image *img, struct fetch_request *req,
                              struct fetch_topic_set *topics, struct fetch_partition_state **out, int32_t *count)
{
    int32_t total = 0;
    for (int32_t t = 0; t < req->topics_count; t++)
        total += req->topics[t].partitions_count;
    /* Heap, not arena: freed once applied, before the fetch is read. */
    struct fetch_partition_state *parts = malloc((size_t)(total + 1) * sizeof *parts);
    if (!parts)
        return -1;
    *out = parts;
    int32_t n = 0;
    for (int32_t t = 0; t < req->topics_count; t++) {
        struct fetch_request_fetch_topic *ft = &req->topics[t];
        struct fetch_topic *topic = topic_of(ctx, img, topics, ft->topic, &ft->topic_id);
        if (!topic)
            return -1;
        for (int32_t p = 0; p < ft->partitions_count; p++) {
            struct fetch_partition_state *ps = &parts[n++];
            ps->topic = topic;
            ps->partition = ft->partitions[p].partition;
            ps->fetch_offset = ft->partitions[p].fetch_offset;
            ps->log_start_offset = ft->partitions[p].log_start_offset;
            ps->max_bytes = ft->partitions[p].partition_max_bytes;
            ps->current_leader_epoch = ctx->api_version >= 9 ? ft->partitions[p].current_leader_epoch : -1;
            ps->last_fetched_epoch = ctx->api_version >= 12 ? ft->partitions[p].last_fetched_epoch : -1;
            ps->last_high_watermark = -1;
            ps->last_log_start_offset = -1;
        }
    }
    *count = n;
    return 0;
}

static int collect_forgotten(struct request_context *ctx, const struct metadata_image *img, struct fetch_request *req,
                             struct fetch_topic_set *topics, struct fetch_partition_state **out, int32_t *count)
{
    int32_t total = 0;
    for (int32_t t = 0; t < req->forgotten_topics_data_count; t++)
        total += req->forgotten_topics_data[t].partitions_count;
    /* Heap, not arena: freed once applied, before the fetch is read. */
    struct fetch_partition_state *parts = malloc((size_t)(total + 1) * sizeof *parts);
    if (!parts)
        return -1;
    *out = parts;
    int32_t n = 0;
    for (int32_t t = 0; t < req->forgotten_topics_data_count; t++) {
        struct fetch_request_forgotten_topic *ft = &req->forgotten_topics_data[t];
        /* The session matches partitions by name and id: a forgotten
         * partition without its id would stay in the session. */
        struct fetch_topic *topic = topic_of(ctx, img, topics, ft->topic, &ft->topic_id);
        if (!topic)
            return -1;
        for (int32_t p = 0; p < ft->partitions_count; p++) {
            memset(&parts[n], 0, sizeof parts[n]);
            parts[n].topic = topic;
            parts[n].partition = ft->partitions[p];
            n++;
        }
    }
    *count = n;
    return 0;
}

/* Whether some partition is read below its local log start, from the
 * remote store: such a fetch waits for the read even with max_wait_ms 0. */
static bool needs_remote_read(struct request_context *ctx, const struct fetch_plan *plan)
{
    if (!ctx->env->tiered)
        return false;
    const struct metadata_image *img = metadata_image_acquire(ctx->env->metadata);
    bool remote = false;
    for (int32_t i = 0; img && !remote && i < plan->partition_count; i++) {
        const struct fetch_partition_state *ps = &plan->partitions[i];
        const struct metadata_topic *topic = metadata_image_topic_by_name(img, ps->topic->name, ps->topic->name_len);
        struct partition_log *log;
        if (topic && handler_leader_log(ctx, topic, ps->partition, &log) == KAFKA_ERR_NONE) {
            remote = ps->fetch_offset < partition_log_local_start_offset(log) &&
                     ps->fetch_offset >= partition_log_start_offset(log);
            partition_log_close(log);
        }
    }
    if (img)
        metadata_image_release(img);
    return remote;
}

enum handler_result handle_fetch(struct request_context *ctx, void *request, void *response)
{
    struct fetch_request *req = request;
    struct fetch_response *resp = response;
    struct handler_env *env = ctx->env;

    /* From v15 a follower names itself in ReplicaState (KIP-903). */
    int32_t replica_id = ctx->api_version >= 15 ? req->replica_state.replica_id : req->replica_id;
    bool from_replica = replica_id >= 0;
    /* KIP-903: the follower's broker epoch, which the leader's ISR change names. */
    int64_t replica_epoch = ctx->api_version >= 15 ? req->replica_state.replica_epoch : -1;
    if (from_replica && !env->replication) {
        resp->error_code = KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
        return HANDLER_RESPOND;
    }
    if (from_replica &&
        !handler_authorize_one(ctx, CAIRN_OP_CLUSTER_ACTION, CAIRN_RESOURCE_CLUSTER, HANDLER_CLUSTER_RESOURCE)) {
        resp->error_code = KAFKA_ERR_CLUSTER_AUTHORIZATION_FAILED;
        return HANDLER_RESPOND;
    }
    const struct metadata_image *img = metadata_image_acquire(env->metadata);
    if (!img)
        return HANDLER_CLOSE;
    /* The request's topics, once each: the session or plan keeps its own
     * references, so they go when the request is applied. */
    struct fetch_topic_set topics;
    fetch_session_topic_set_init(env->fetch_sessions, &topics);
    struct fetch_partition_state *updates = NULL, *forgotten = NULL;
    int32_t update_count = 0, forgotten_count = 0;
    int rc = collect_partitions(ctx, img, req, &topics, &updates, &update_count);
    if (rc == 0)
        rc = collect_forgotten(ctx, img, req, &topics, &forgotten, &forgotten_count);
    metadata_image_release(img);
    struct fetch_op *f = rc == 0 ? calloc(1, sizeof *f) : NULL;
    if (!f) {
        free(updates);
        free(forgotten);
        fetch_topic_set_free(&topics);
        return HANDLER_CLOSE;
    }
    int32_t session_id = ctx->api_version >= 7 ? req->session_id : 0;
    int32_t epoch = ctx->api_version >= 7 ? req->session_epoch : -1;
    rc = fetch_session_apply(env->fetch_sessions, session_id, epoch, from_replica, updates, update_count, forgotten,
                             forgotten_count, &f->plan);
    free(updates);
    free(forgotten);
    fetch_topic_set_free(&topics);
    if (rc != 0) {
        fetch_plan_free(&f->plan);
        free(f);
        return HANDLER_CLOSE;
    }
    if (f->plan.error_code != KAFKA_ERR_NONE) {
        resp->error_code = f->plan.error_code;
        resp->session_id = 0;
        fetch_plan_free(&f->plan);
        free(f);
        return HANDLER_RESPOND;
    }
    f->ctx = ctx;
    f->min_bytes = req->min_bytes;
    f->max_bytes = req->max_bytes;
    if (ctx->api_version < 3 || f->max_bytes <= 0)
        f->max_bytes = INT32_MAX;
    if (env->fetch_max_bytes > 0 && f->max_bytes > env->fetch_max_bytes)
        f->max_bytes = env->fetch_max_bytes;
    f->read_committed = req->isolation_level == 1 && !from_replica;
    f->from_replica = from_replica;
    f->replica_id = replica_id;
    f->closest_replica = env->rack_aware_replica_selector && ctx->api_version >= 11 && !from_replica;
    f->client_rack = ctx->api_version >= 11 ? req->rack_id : (struct kafka_str){NULL, -1};
    /* The follower's fetch offset is its log end: it moves the high
     * watermark before the answer carries it. */
    for (int32_t i = 0; from_replica && i < f->plan.partition_count; i++) {
        const struct fetch_partition_state *ps = &f->plan.partitions[i];
        if (ps->topic->name[0])
            replication_follower_fetched(env->replication, ps->topic->name, ps->partition, replica_id, replica_epoch,
                                         ps->fetch_offset);
    }
    f->op.try_complete = fetch_try_complete;
    f->op.free_fn = fetch_op_free;
    int32_t wait_ms = req->max_wait_ms > 0 ? req->max_wait_ms : 0;
    if (wait_ms > FETCH_MAX_WAIT_CAP_MS)
        wait_ms = FETCH_MAX_WAIT_CAP_MS;
    if (from_replica)
        wait_ms = fetch_replica_wait_ms(replica_id, wait_ms);
    /* A follower's fetch parked while the leader throttle is exceeded
     * wakes when it frees, so the throttled partitions move at the rate
     * rather than once per replica.fetch.wait.max.ms. */
    int64_t quota_ms = from_replica ? replication_leader_quota_wait_ms(env->replication) : 0;
    if (quota_ms > 0 && quota_ms < wait_ms)
        wait_ms = (int32_t)quota_ms;
    bool remote = needs_remote_read(ctx, &f->plan);
    if (remote && wait_ms < env->remote_fetch_max_wait_ms)
        wait_ms = (int32_t)env->remote_fetch_max_wait_ms;
    f->op.deadline_mono_ms = clock_mono_ms() + wait_ms;

    if (!remote && (wait_ms == 0 || f->min_bytes <= 0)) {
        fetch_try_complete(&f->op, true);
        fetch_op_free(&f->op);
        return HANDLER_DEFERRED; /* already answered */
    }
    /* Watch every partition's log, so an append wakes this fetch. */
    const struct metadata_image *watch_img = metadata_image_acquire(env->metadata);
    bool watch_failed = false;
    for (int32_t i = 0; watch_img && !watch_failed && i < f->plan.partition_count; i++) {
        const struct fetch_partition_state *ps = &f->plan.partitions[i];
        const struct metadata_topic *topic = metadata_image_topic_by_name(watch_img, ps->topic->name,
                                                                          ps->topic->name_len);
        struct partition_log *log;
        bool as_follower;
        /* The address is only an identity here: the reference is dropped at once. */
        if (topic && open_partition_log(ctx, f, topic, ps->partition, &log, &as_follower) == KAFKA_ERR_NONE) {
            watch_failed = delayed_op_watch(&f->op, (uintptr_t)log) != 0;
            partition_log_close(log);
        }
    }
    if (watch_img)
        metadata_image_release(watch_img);
    if (from_replica && !watch_failed) {
        /* Read before parking: a wake from here on answers it. */
        f->wake_generation = fetch_replica_wake_generation(replica_id);
        watch_failed = delayed_op_watch(&f->op, fetch_replica_wake_key(replica_id)) != 0;
    }
    if (watch_failed) {
        /* Without memory to watch every partition, answer with what there is. */
        fetch_try_complete(&f->op, true);
        delayed_op_release_keys(&f->op);
        fetch_op_free(&f->op);
        return HANDLER_DEFERRED;
    }
    f->purgatory = env->fetch_purgatory;
    net_request_set_cancel(ctx->net, fetch_cancel, f);
    purgatory_add(env->fetch_purgatory, &f->op);
    return HANDLER_DEFERRED;
}
