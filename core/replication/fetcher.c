/* Fetcher threads (Kafka's ReplicaFetcherThread): each sends Fetch as a
 * replica to one leader for the partitions assigned to it and appends the
 * answer to the local logs, keeping the leader's offsets and epochs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log/partition_log.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_store.h"
#include "net/client.h"
#include "protocol/generated/all_messages.h"
#include "protocol/generated/errors.h"
#include "replication/replication_internal.h"
#include "util/logger.h"

#define FETCH_API_KEY 1
/* The back-off after an answer whose only errors say the leader has yet
 * to apply what this follower has (fetch_once returns 1), at most
 * replica.fetch.backoff.ms. */
#define FETCH_LEADER_BEHIND_BACKOFF_MS 20

/* Partition errors a leader gives while its metadata is behind the
 * follower's: the topic, the partition or the epoch is new to it, or it
 * does not lead yet. It applies the same records in milliseconds. */
static bool leader_behind(int16_t error_code)
{
    return error_code == KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION || error_code == KAFKA_ERR_UNKNOWN_TOPIC_ID ||
           error_code == KAFKA_ERR_NOT_LEADER_OR_FOLLOWER || error_code == KAFKA_ERR_UNKNOWN_LEADER_EPOCH;
}

/* One partition of a fetch in progress (fetcher thread only). */
struct fetch_slot {
    char *topic; /* borrowed from a copy made under the lock */
    int32_t partition;
    uint8_t topic_id[16];
    bool has_topic_id;
    int32_t leader_epoch;
    int64_t fetch_offset;
    struct partition_log *log; /* own reference */
    bool throttled;            /* follower.replication.throttled.replicas names it here */
    bool caught_up;            /* its last fetch found it at the leader's high watermark */
};

/* Completion of one request, between the client's thread and the fetcher. */
struct call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    enum net_client_status status;
    char error[320];
    int16_t version;
    struct net_client_kept *kept;
};

static void fetch_done(struct net_client_result *result, void *ctx)
{
    struct call *c = ctx;
    pthread_mutex_lock(&c->mu);
    c->status = result->status;
    c->version = result->api_version;
    snprintf(c->error, sizeof c->error, "%s", result->error);
    if (result->status == NET_CLIENT_OK && result->response)
        c->kept = net_client_result_keep(result);
    c->done = true;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
}

/* The leader's endpoint on the inter-broker listener (without one
 * configured, or when a PLAINTEXT link finds no endpoint of that name, its
 * first PLAINTEXT endpoint), given to the client when it changed. Returns
 * 0, or -1 when the image does not know one. */
static int resolve_leader(struct fetcher *f)
{
    struct replication *r = f->r;
    const struct metadata_image *img = r->opts.metadata ? metadata_image_acquire(r->opts.metadata) : NULL;
    if (!img)
        return -1;
    const struct metadata_broker *b = metadata_image_broker(img, f->leader_id);
    const struct metadata_endpoint *ep = metadata_broker_link_endpoint(b, r->opts.listener, r->opts.link_strict);
    int rc = -1;
    if (ep) {
        rc = 0;
        if (strcmp(f->host, ep->host) != 0 || f->port != ep->port) {
            snprintf(f->host, sizeof f->host, "%s", ep->host);
            f->port = ep->port;
            rc = net_client_add_node(r->client, f->leader_id, f->host, f->port);
            if (rc != 0)
                f->host[0] = '\0';
        }
    }
    metadata_image_release(img);
    return rc;
}

static bool same_partition(const struct fetch_slot *s, const struct fetch_response_fetchable_topic_response *t,
                           int32_t partition, int16_t version)
{
    if (s->partition != partition)
        return false;
    if (version >= 13)
        return s->has_topic_id && memcmp(s->topic_id, t->topic_id.bytes, 16) == 0;
    return t->topic.len >= 0 && strlen(s->topic) == (size_t)t->topic.len &&
           memcmp(s->topic, t->topic.data, (size_t)t->topic.len) == 0;
}

/* Whether the partition is still followed from this leader at this epoch,
 * so its answer may be appended. */
static bool still_following(struct replication *r, const struct fetch_slot *s, const struct fetcher *f)
{
    pthread_mutex_lock(&r->lock);
    struct follower_partition *fp = replication_follower(r, s->topic, s->partition);
    bool ok = fp && fp->fetcher == f && fp->leader_epoch == s->leader_epoch && fp->log == s->log;
    pthread_mutex_unlock(&r->lock);
    return ok;
}

/* The batch header's fixed part: baseOffset (8) and batchLength (4), then
 * at least the rest of a v2 header. */
#define BATCH_LENGTH_PREFIX 12
#define BATCH_MIN_LENGTH 49

bool replication_throttled_replica(const char *list, int32_t partition, int32_t broker)
{
    for (const char *p = list; p && *p;) {
        size_t len = strcspn(p, ",");
        const char *a = p, *end = p + len;
        while (a < end && (*a == ' ' || *a == '\t'))
            a++;
        while (end > a && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end - a == 1 && *a == '*')
            return true;
        char *colon = NULL;
        long part = strtol(a, &colon, 10);
        if (colon && colon < end && *colon == ':' && colon > a) {
            char *tail = NULL;
            long id = strtol(colon + 1, &tail, 10);
            if (tail == end && tail > colon + 1 && part == partition && id == broker)
                return true;
        }
        p += len + (p[len] == ',');
    }
    return false;
}

/* Whether this broker's replica of topic-partition is throttled: the
 * topic's follower.replication.throttled.replicas names it in img. */
static bool follower_throttled(struct replication *r, const struct metadata_image *img, const char *topic,
                               int32_t partition)
{
    const struct metadata_topic *t = img ? metadata_image_topic_by_name(img, topic, strlen(topic)) : NULL;
    const char *v = t ? metadata_topic_config(t, "follower.replication.throttled.replicas") : NULL;
    return v && replication_throttled_replica(v, partition, r->opts.node_id);
}

/* Appends the whole batches of data one at a time, as the leader appended
 * them from producers (one batch per partition per request), so segments
 * roll at the same offsets and an answer larger than segment.bytes still
 * fits. A partial batch at the end (a size limit cut it) is left for the
 * next fetch. Returns the bytes appended, or -1 after a refused batch. */
static int64_t append_batches(struct fetcher *f, struct fetch_slot *s, uint8_t *data, size_t len)
{
    size_t pos = 0;
    while (len - pos >= BATCH_LENGTH_PREFIX) {
        const uint8_t *p = data + pos + 8;
        uint32_t batch_len = ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
        if (batch_len < BATCH_MIN_LENGTH || batch_len > INT32_MAX) {
            logger_warn("replication", "%s-%d: leader %d sent a batch of length %u", s->topic, s->partition,
                        f->leader_id, batch_len);
            return -1;
        }
        size_t size = BATCH_LENGTH_PREFIX + (size_t)batch_len;
        if (size > len - pos)
            break;
        struct log_append_result res;
        memset(&res, 0, sizeof res);
        /* An empty log (started over at the leader's log start) whose
         * first batch starts below it: the leader's start fell inside that
         * batch (DeleteRecords). As Kafka does, start the log at the
         * batch's base; the leader's log start is applied after. */
        int64_t base = (int64_t)(((uint64_t)data[pos] << 56) | ((uint64_t)data[pos + 1] << 48) |
                                 ((uint64_t)data[pos + 2] << 40) | ((uint64_t)data[pos + 3] << 32) |
                                 ((uint64_t)data[pos + 4] << 24) | ((uint64_t)data[pos + 5] << 16) |
                                 ((uint64_t)data[pos + 6] << 8) | (uint64_t)data[pos + 7]);
        int64_t end = partition_log_end_offset(s->log);
        if (pos == 0 && base >= 0 && base < end && end == partition_log_start_offset(s->log)) {
            int16_t terr = partition_log_truncate_fully_and_start_at(s->log, base);
            logger_info("replication",
                        "%s-%d: leader %d's first batch starts at %lld, below the empty log's start "
                        "%lld: truncated fully and starting there: %s",
                        s->topic, s->partition, f->leader_id, (long long)base, (long long)end, kafka_error_name(terr));
        }
        int16_t err = partition_log_append_as(s->log, LOG_APPEND_REPLICATION, data + pos, size, -1, &res);
        if (err != KAFKA_ERR_NONE) {
            logger_warn("replication", "%s-%d: appending a batch of %zu bytes at %lld from leader %d failed: %s (%s)",
                        s->topic, s->partition, size, (long long)partition_log_end_offset(s->log), f->leader_id,
                        kafka_error_name(err), res.error_message);
            return -1;
        }
        pos += size;
    }
    return (int64_t)pos;
}

/* The leader says this log diverged after epoch (ending at end_offset on
 * the leader): cut it to where both agree, at most end_offset, and fetch on
 * from there (KIP-320; another divergence further back, if any, is found
 * by the next fetch). */
static void truncate_diverged(struct fetcher *f, struct fetch_slot *s, int32_t epoch, int64_t end_offset)
{
    int32_t local_epoch = -1;
    int64_t local_end = partition_log_end_offset_for_epoch(s->log, epoch, &local_epoch);
    int64_t to = end_offset;
    if (local_end >= 0 && local_end < to)
        to = local_end;
    int64_t end = partition_log_end_offset(s->log);
    if (to >= end) {
        /* Nothing to cut, but the epoch the fetch named may be one this
         * replica began at its log end as a leader and never wrote in:
         * truncating at the end drops it, so the next fetch names the
         * last epoch it holds records of (else the leader answers the same
         * divergence forever and the follower never moves). */
        int32_t before = partition_log_latest_epoch(s->log);
        int16_t err = partition_log_truncate_to(s->log, end);
        int32_t after = partition_log_latest_epoch(s->log);
        if (before != after)
            logger_info("replication",
                        "%s-%d: leader %d has no epoch %d; dropped it from the end of the log's epochs (latest now "
                        "%d): %s",
                        s->topic, s->partition, f->leader_id, before, after, kafka_error_name(err));
        return;
    }
    int16_t err = partition_log_truncate_to(s->log, to);
    logger_info("replication", "%s-%d: log diverged from leader %d after epoch %d; truncated from %lld to %lld: %s",
                s->topic, s->partition, f->leader_id, epoch, (long long)end, (long long)to, kafka_error_name(err));
}

/* Appends one partition's answer. Returns false on an error worth backing off for. */
static bool apply_partition(struct fetcher *f, struct fetch_slot *s, struct fetch_response_partition_data *pd)
{
    struct replication *r = f->r;
    if (pd->error_code == KAFKA_ERR_OFFSET_OUT_OF_RANGE) {
        /* Kafka's handleOffsetOutOfRange: behind the leader's log start
         * (down while DeleteRecords or retention removed what it lacks),
         * the follower drops its log and starts over at that start; the
         * next fetch goes from there. Otherwise it backs off, visibly. */
        int64_t end = partition_log_end_offset(s->log);
        if (pd->log_start_offset > end && still_following(r, s, f)) {
            int16_t err = partition_log_truncate_fully_and_start_at(s->log, pd->log_start_offset);
            logger_info("replication",
                        "%s-%d: log end %lld is below leader %d's log start %lld; truncated fully and starting "
                        "there: %s",
                        s->topic, s->partition, (long long)end, f->leader_id, (long long)pd->log_start_offset,
                        kafka_error_name(err));
            return err == KAFKA_ERR_NONE;
        }
        logger_warn("replication", "%s-%d: leader %d has no offset %lld (its log starts at %lld)", s->topic,
                    s->partition, f->leader_id, (long long)s->fetch_offset, (long long)pd->log_start_offset);
        return false;
    }
    if (pd->error_code != KAFKA_ERR_NONE) {
        logger_debug("replication", "%s-%d: leader %d answered %s", s->topic, s->partition, f->leader_id,
                     kafka_error_name(pd->error_code));
        return false;
    }
    if (!still_following(r, s, f))
        return true;
    if (pd->diverging_epoch.epoch >= 0 && pd->diverging_epoch.end_offset >= 0) {
        truncate_diverged(f, s, pd->diverging_epoch.epoch, pd->diverging_epoch.end_offset);
        return true;
    }
    if (pd->records.len > 0 && pd->records.data) {
        /* The response frame is ours (kept) until freed: appending may
         * touch the bytes in place. */
        int64_t appended = append_batches(f, s, (uint8_t *)pd->records.data, (size_t)pd->records.len);
        pthread_mutex_lock(&r->lock);
        r->stats.appended_bytes += (uint64_t)(appended > 0 ? appended : 0);
        pthread_mutex_unlock(&r->lock);
        if (appended < 0)
            return false;
        if (appended > 0 && s->throttled)
            replication_quota_record(&r->follower_quota, appended);
    }
    int64_t end = partition_log_end_offset(s->log);
    /* DeleteRecords on the leader moves the followers' log start too. */
    int64_t start = pd->log_start_offset < end ? pd->log_start_offset : end;
    if (start > partition_log_start_offset(s->log))
        partition_log_delete_records_before(s->log, start);
    int64_t hw = pd->high_watermark < end ? pd->high_watermark : end;
    int64_t before = partition_log_high_watermark(s->log);
    if (hw > before && partition_log_update_high_watermark(s->log, hw) != before && r->opts.high_watermark_moved)
        r->opts.high_watermark_moved(r->opts.high_watermark_ctx, s->log);
    /* Kafka's fetcher lag: the leader's high watermark past the next offset to fetch. */
    int64_t lag = pd->high_watermark > end ? pd->high_watermark - end : 0;
    pthread_mutex_lock(&r->lock);
    struct follower_partition *fp = replication_follower(r, s->topic, s->partition);
    if (fp && fp->fetcher == f) {
        fp->lag = lag;
        fp->lag_known = true;
        if (lag == 0)
            fp->caught_up_ms = replication_now_ms();
    }
    pthread_mutex_unlock(&r->lock);
    return true;
}

/* The follower names itself in replica_id before v15 and in ReplicaState
 * from v15 (KIP-903); the codec refuses the other field set. */
static int encode_fetch(struct kafka_writer *w, int16_t version, void *ctx)
{
    struct fetch_request req = *(const struct fetch_request *)ctx;
    int32_t self = req.replica_id;
    if (version >= 15) {
        req.replica_id = -1;
        req.replica_state.replica_id = self; /* replica_epoch set by fetch_once */
    } else {
        fetch_request_replica_state_init(&req.replica_state);
    }
    return fetch_request_encode(&req, w, version);
}

/* One Fetch to the leader for slots[0..n). Returns 0, -1 to back off, or
 * 1 to back off briefly: every partition that failed did so for
 * leader_behind (a follower that applied a new topic before its leader,
 * and fetched it at once, waited replica.fetch.backoff.ms, 1 s, with every
 * partition it follows from that leader; acks=all produces with it). */
static int fetch_once(struct fetcher *f, struct fetch_slot *slots, int32_t n)
{
    struct replication *r = f->r;
    if (resolve_leader(f) != 0) {
        logger_debug("replication", "no endpoint of listener %s known for leader %d",
                     r->opts.listener && r->opts.listener[0] ? r->opts.listener : "PLAINTEXT", f->leader_id);
        return -1;
    }
    struct fetch_request_fetch_topic *topics = calloc((size_t)n, sizeof *topics);
    struct fetch_request_fetch_partition *parts = calloc((size_t)n, sizeof *parts);
    if (!topics || !parts) {
        free(topics);
        free(parts);
        return -1;
    }
    /* One topic entry per partition: the leader merges consecutive ones. */
    for (int32_t i = 0; i < n; i++) {
        fetch_request_fetch_topic_init(&topics[i]);
        fetch_request_fetch_partition_init(&parts[i]);
        topics[i].topic = kafka_str_from_cstr(slots[i].topic);
        if (slots[i].has_topic_id)
            memcpy(topics[i].topic_id.bytes, slots[i].topic_id, 16);
        topics[i].partitions = &parts[i];
        topics[i].partitions_count = 1;
        parts[i].partition = slots[i].partition;
        parts[i].current_leader_epoch = slots[i].leader_epoch;
        parts[i].fetch_offset = slots[i].fetch_offset;
        parts[i].last_fetched_epoch = partition_log_latest_epoch(slots[i].log);
        parts[i].log_start_offset = partition_log_start_offset(slots[i].log);
        parts[i].partition_max_bytes = r->opts.fetch_max_bytes;
    }
    struct fetch_request req;
    fetch_request_init(&req);
    req.replica_id = r->opts.node_id;
    req.replica_state.replica_epoch = r->opts.broker_epoch ? r->opts.broker_epoch(r->opts.broker_epoch_ctx) : -1;
    req.max_wait_ms = r->opts.fetch_wait_max_ms;
    req.min_bytes = r->opts.fetch_min_bytes;
    req.max_bytes = r->opts.fetch_response_max_bytes;
    req.isolation_level = 0;
    req.session_id = 0;
    req.session_epoch = -1; /* no fetch session: every fetch names its partitions */
    req.topics = topics;
    req.topics_count = n;
    req.forgotten_topics_data_count = 0;

    struct call c = {.status = NET_CLIENT_CANCELLED};
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    struct net_client_request nreq = {.node_id = f->leader_id,
                                      .api_key = FETCH_API_KEY,
                                      .pinned_version = -1,
                                      .encode = encode_fetch,
                                      .encode_ctx = &req,
                                      .timeout_ms = r->opts.socket_timeout_ms + r->opts.fetch_wait_max_ms,
                                      .done = fetch_done,
                                      .ctx = &c};
    char err[200] = "";
    pthread_mutex_lock(&r->lock);
    int rc = r->stopping ? -1 : net_client_send(r->client, &nreq, err, sizeof err);
    pthread_mutex_unlock(&r->lock);
    if (rc == 0) {
        pthread_mutex_lock(&c.mu);
        while (!c.done)
            pthread_cond_wait(&c.cv, &c.mu);
        pthread_mutex_unlock(&c.mu);
    }
    free(topics);
    free(parts);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
    if (rc != 0 || c.status != NET_CLIENT_OK || !c.kept) {
        if (rc == 0 && c.status != NET_CLIENT_CANCELLED)
            logger_debug("replication", "fetch from leader %d failed: %s %s", f->leader_id,
                         net_client_status_name(c.status), c.error);
        if (c.kept)
            net_client_kept_free(c.kept);
        pthread_mutex_lock(&r->lock);
        r->stats.fetch_errors++;
        pthread_mutex_unlock(&r->lock);
        return -1;
    }
    struct fetch_response *resp = net_client_kept_response(c.kept);
    bool backoff = resp->error_code != KAFKA_ERR_NONE;
    bool only_behind = !backoff; /* every failed partition failed for leader_behind */
    if (backoff)
        logger_debug("replication", "leader %d refused the fetch: %s", f->leader_id,
                     kafka_error_name(resp->error_code));
    /* The leader answers in the order asked: the search for each answer's
     * slot starts after the previous one's, so a fetch costs O(n). */
    int32_t next = 0;
    for (int32_t t = 0; !backoff && t < resp->responses_count; t++) {
        struct fetch_response_fetchable_topic_response *tr = &resp->responses[t];
        for (int32_t p = 0; p < tr->partitions_count; p++) {
            struct fetch_response_partition_data *pd = &tr->partitions[p];
            for (int32_t k = 0; k < n; k++) {
                int32_t i = (next + k) % n;
                if (same_partition(&slots[i], tr, pd->partition_index, c.version)) {
                    if (!apply_partition(f, &slots[i], pd)) {
                        backoff = true;
                        only_behind = only_behind && leader_behind(pd->error_code);
                    }
                    next = (i + 1) % n;
                    break;
                }
            }
        }
    }
    net_client_kept_free(c.kept);
    pthread_mutex_lock(&r->lock);
    replication_refresh_max_lag(r);
    r->stats.fetches++;
    if (backoff)
        r->stats.fetch_errors++;
    pthread_mutex_unlock(&r->lock);
    return !backoff ? 0 : only_behind ? 1 : -1;
}

/* Under the lock: copies of the partitions assigned to f (their logs
 * retained, their names duplicated). Returns the count, -1 when out of memory. */
static int32_t snapshot_slots(struct fetcher *f, struct fetch_slot **out)
{
    int32_t n = 0;
    size_t b = 0;
    for (struct follower_partition *fp = replication_next_follower(f->r, &b, NULL); fp;
         fp = replication_next_follower(f->r, &b, fp))
        n += fp->fetcher == f && (!fp->in_flight || fp->in_flight == f);
    if (n == 0) {
        *out = NULL;
        return 0;
    }
    struct fetch_slot *slots = calloc((size_t)n, sizeof *slots);
    if (!slots)
        return -1;
    int32_t i = 0;
    b = 0;
    for (struct follower_partition *fp = replication_next_follower(f->r, &b, NULL); fp && i < n;
         fp = replication_next_follower(f->r, &b, fp)) {
        if (fp->fetcher != f || (fp->in_flight && fp->in_flight != f))
            continue;
        struct fetch_slot *s = &slots[i];
        if (!(s->topic = strdup(fp->topic)))
            continue;
        fp->in_flight = f;
        s->partition = fp->partition;
        memcpy(s->topic_id, fp->topic_id, 16);
        s->has_topic_id = fp->has_topic_id;
        s->leader_epoch = fp->leader_epoch;
        s->caught_up = fp->lag_known && fp->lag == 0;
        partition_log_retain(fp->log);
        s->log = fp->log;
        i++;
    }
    *out = slots;
    return i;
}

/* Under the lock, after a fetch: the partitions f was fetching are free
 * for another fetcher; one they moved to is woken. */
static void release_slots(struct fetcher *f)
{
    size_t b = 0;
    for (struct follower_partition *fp = replication_next_follower(f->r, &b, NULL); fp;
         fp = replication_next_follower(f->r, &b, fp)) {
        if (fp->in_flight != f)
            continue;
        fp->in_flight = NULL;
        if (fp->fetcher != f)
            pthread_cond_signal(&fp->fetcher->wake);
    }
}

static void free_slots(struct fetch_slot *slots, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        free(slots[i].topic);
        partition_log_close(slots[i].log);
    }
    free(slots);
}

static void wait_ms_locked(struct fetcher *f, int64_t ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&f->wake, &f->r->lock, &ts);
}

/* Kafka's shouldFollowerThrottle: while follower.replication.throttled.rate
 * is exceeded the throttled partitions (named in the topic's
 * follower.replication.throttled.replicas, not caught up) sit this fetch
 * out (moved to the end of slots, still to be freed) and the others are
 * fetched as usual; nothing sleeps. Returns how many slots to fetch;
 * *wait_ms is how long to wait first when none is left (until the quota
 * frees, at most replica.fetch.backoff.ms, as Kafka waits on an empty
 * fetch). The topics' configs come from one image for the whole fetch. */
static int32_t leave_out_throttled(struct fetcher *f, struct fetch_slot *slots, int32_t n, int64_t *wait_ms)
{
    struct replication *r = f->r;
    *wait_ms = 0;
    if (!replication_quota_enabled(&r->follower_quota) || !r->opts.metadata)
        return n;
    /* Kafka's follower leaves a caught-up replica unthrottled. */
    const struct metadata_image *img = metadata_image_acquire(r->opts.metadata);
    for (int32_t i = 0; i < n; i++)
        slots[i].throttled = !slots[i].caught_up && follower_throttled(r, img, slots[i].topic, slots[i].partition);
    if (img)
        metadata_image_release(img);
    if (!replication_quota_exceeded(&r->follower_quota))
        return n;
    int32_t kept = 0;
    for (int32_t i = 0; i < n; i++) {
        if (slots[i].throttled)
            continue;
        struct fetch_slot tmp = slots[kept];
        slots[kept] = slots[i];
        slots[i] = tmp;
        kept++;
    }
    if (kept == 0) {
        int64_t ms = replication_quota_wait_ms(&r->follower_quota);
        int64_t cap = r->opts.fetch_backoff_ms > 0 ? r->opts.fetch_backoff_ms : 1;
        *wait_ms = ms < 1 ? 1 : ms < cap ? ms : cap;
    }
    return kept;
}

static void *fetcher_main(void *arg)
{
    struct fetcher *f = arg;
    struct replication *r = f->r;
    pthread_mutex_lock(&r->lock);
    while (!r->stopping && !f->retired) {
        struct fetch_slot *slots = NULL;
        int32_t n = snapshot_slots(f, &slots);
        if (n == 0) {
            free(slots);
            pthread_cond_wait(&f->wake, &r->lock);
            continue;
        }
        pthread_mutex_unlock(&r->lock);
        int rc = -1;
        int64_t quota_wait_ms = 0;
        if (n > 0) {
            int32_t kept = leave_out_throttled(f, slots, n, &quota_wait_ms);
            for (int32_t i = 0; i < kept; i++)
                slots[i].fetch_offset = partition_log_end_offset(slots[i].log);
            rc = kept > 0 ? fetch_once(f, slots, kept) : 0;
            free_slots(slots, n);
        }
        pthread_mutex_lock(&r->lock);
        release_slots(f);
        if (rc > 0 && !r->stopping)
            wait_ms_locked(f, r->opts.fetch_backoff_ms < FETCH_LEADER_BEHIND_BACKOFF_MS
                                  ? r->opts.fetch_backoff_ms
                                  : FETCH_LEADER_BEHIND_BACKOFF_MS);
        else if (rc != 0 && !r->stopping)
            wait_ms_locked(f, r->opts.fetch_backoff_ms);
        else if (quota_wait_ms > 0 && !r->stopping)
            wait_ms_locked(f, quota_wait_ms);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

struct fetcher *replication_fetcher_for(struct replication *r, int32_t leader_id, int32_t index)
{
    for (struct fetcher *f = r->fetchers; f; f = f->next)
        if (f->leader_id == leader_id && f->index == index && !f->retired)
            return f;
    struct fetcher *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    f->r = r;
    f->leader_id = leader_id;
    f->index = index;
    pthread_cond_init(&f->wake, NULL);
    if (pthread_create(&f->thread, NULL, fetcher_main, f) != 0) {
        pthread_cond_destroy(&f->wake);
        free(f);
        return NULL;
    }
    f->started = true;
    f->next = r->fetchers;
    r->fetchers = f;
    return f;
}

void replication_fetchers_join(struct replication *r)
{
    while (r->fetchers) {
        struct fetcher *f = r->fetchers;
        r->fetchers = f->next;
        if (f->started)
            pthread_join(f->thread, NULL);
        pthread_cond_destroy(&f->wake);
        free(f);
    }
}
