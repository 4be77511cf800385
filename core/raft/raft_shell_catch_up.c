/* KIP-630 in the shell, on the raft thread: cleaning the log behind the
 * newest snapshot (metadata.max.retention.bytes / .ms), and a replica
 * behind the leader's log start downloading the leader's snapshot with
 * FetchSnapshot in bounded chunks, installing it (atomic rename, checked
 * read back, loaded into the image, the store restarted at its end) and
 * fetching on from there. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metadata/metadata_snapshot.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/fetch_snapshot_request.h"
#include "protocol/generated/fetch_snapshot_response.h"
#include "protocol/record_batch.h"
#include "raft/raft_codec.h"
#include "raft/raft_shell_internal.h"
#include "util/clock.h"
#include "util/logger.h"

#define LOG "raft"
/* How often the retention check runs. */
#define CLEAN_INTERVAL_MS 1000

/* ---- cleaning ---- */

/* The newest timestamp of the log's first batch (-1: none), from one
 * store read. The log's bytes are the core's running count. */
static int64_t first_batch_timestamp(struct raft_shell *s)
{
    const struct raft_entry *e = raft_node_entry(s->node, raft_node_log_start(s->node));
    const struct raft_entry *full = e ? shell_entry_from_store(s, e) : NULL;
    struct record_batch_header h;
    if (full && record_batch_parse_header(full->data, full->len, &h) == 0)
        return h.max_timestamp;
    return -1;
}

void shell_maybe_clean(struct raft_shell *s, int64_t now)
{
    if (now < s->next_clean_ms || !s->cfg.snapshot_dir[0] || s->store_failed || !s->cfg.store_ops->delete_before)
        return;
    s->next_clean_ms = now + CLEAN_INTERVAL_MS;
    struct metadata_snapshot_id *ids = NULL;
    char err[256] = "";
    int n = metadata_snapshot_list(s->cfg.snapshot_dir, &ids, err, sizeof err);
    if (n <= 0) {
        free(ids);
        return;
    }
    struct metadata_snapshot_id newest = ids[n - 1];
    free(ids);
    int64_t start = raft_node_log_start(s->node);
    if (newest.end_offset <= start)
        return;
    int64_t bytes = raft_node_log_bytes(s->node);
    bool over_bytes = s->cfg.retention_bytes >= 0 && bytes > s->cfg.retention_bytes;
    int64_t first_ts = over_bytes || s->cfg.retention_ms < 0 ? -1 : first_batch_timestamp(s);
    bool over_ms = s->cfg.retention_ms >= 0 && first_ts >= 0 && first_ts < clock_wall_ms() - s->cfg.retention_ms;
    if (!over_bytes && !over_ms)
        return;
    /* The core refuses a start past its HW or its fsynced end: the
     * snapshot then waits for the log to catch up with it. */
    if (raft_node_advance_log_start(s->node, newest.end_offset, newest.epoch) != RAFT_OK)
        return;
    if (s->cfg.store_ops->delete_before(s->cfg.store, newest.end_offset, err, sizeof err) != 0) {
        logger_error(LOG, "node %d: cleaning the metadata log before %lld failed: %s", s->cfg.node_id,
                     (long long)newest.end_offset, err);
        return;
    }
    metadata_snapshot_prune(s->cfg.snapshot_dir, METADATA_SNAPSHOTS_KEPT);
    logger_info(LOG, "node %d: metadata log cleaned behind snapshot %lld-%d (log start %lld -> %lld, %lld bytes, %s)",
                s->cfg.node_id, (long long)newest.end_offset, newest.epoch, (long long)start,
                (long long)newest.end_offset, (long long)bytes,
                over_bytes ? "metadata.max.retention.bytes" : "metadata.max.retention.ms");
}

/* ---- download ---- */

struct chunk_request {
    struct raft_shell *s;
    uint64_t seq;
    int32_t epoch;
    struct metadata_snapshot_id id;
    int64_t position;
};

static int encode_chunk_request(struct kafka_writer *w, int16_t version, void *ctx)
{
    const struct chunk_request *c = ctx;
    struct fetch_snapshot_request_partition_snapshot part;
    fetch_snapshot_request_partition_snapshot_init(&part);
    part.partition = 0;
    part.current_leader_epoch = c->epoch;
    part.snapshot_id.end_offset = c->id.end_offset;
    part.snapshot_id.epoch = c->id.epoch;
    part.position = c->position;
    struct fetch_snapshot_request_topic_snapshot topic;
    fetch_snapshot_request_topic_snapshot_init(&topic);
    topic.name = kafka_str_from_cstr(RAFT_CODEC_TOPIC);
    topic.partitions = &part;
    topic.partitions_count = 1;
    struct fetch_snapshot_request req;
    fetch_snapshot_request_init(&req);
    if (c->s->cfg.cluster_id[0])
        req.cluster_id = kafka_str_from_cstr(c->s->cfg.cluster_id);
    req.replica_id = c->s->cfg.node_id;
    req.max_bytes = c->s->cfg.snapshot_chunk_bytes;
    req.topics = &topic;
    req.topics_count = 1;
    return fetch_snapshot_request_encode(&req, w, version);
}

/* On the client's thread: the answer (or the failure) goes to the raft thread. */
static void chunk_done(struct net_client_result *result, void *ctx)
{
    struct chunk_request *c = ctx;
    struct shell_item *it = calloc(1, sizeof *it);
    struct shell_chunk *ch = it ? calloc(1, sizeof *ch) : NULL;
    if (!ch) {
        free(it);
        free(c);
        return; /* the download's timeout gives up on it */
    }
    it->kind = ITEM_SNAPSHOT_CHUNK;
    it->chunk = ch;
    ch->seq = c->seq;
    ch->error_code = -1;
    const struct fetch_snapshot_response *resp = result->status == NET_CLIENT_OK ? result->response : NULL;
    if (!resp) {
        snprintf(ch->why, sizeof ch->why, "%.30s %.160s", net_client_status_name(result->status), result->error);
    } else if (resp->error_code) {
        ch->error_code = resp->error_code;
    } else if (resp->topics_count != 1 || resp->topics[0].partitions_count != 1) {
        snprintf(ch->why, sizeof ch->why, "the answer is not for one partition");
    } else {
        const struct fetch_snapshot_response_partition_snapshot *p = &resp->topics[0].partitions[0];
        ch->error_code = p->error_code;
        ch->id = (struct metadata_snapshot_id){p->snapshot_id.end_offset, p->snapshot_id.epoch};
        ch->size = p->size;
        ch->position = p->position;
        int32_t len = p->unaligned_records.len;
        if (p->error_code == KAFKA_ERR_NONE && len > 0 && p->unaligned_records.data) {
            ch->data = malloc((size_t)len);
            if (ch->data) {
                memcpy(ch->data, p->unaligned_records.data, (size_t)len);
                ch->len = len;
            } else {
                ch->error_code = -1;
                snprintf(ch->why, sizeof ch->why, "out of memory");
            }
        }
    }
    if (!shell_enqueue(c->s, it)) {
        free(ch->data);
        free(ch);
        free(it);
    }
    free(c);
}

static void send_chunk_request(struct raft_shell *s)
{
    struct shell_download *d = &s->download;
    struct chunk_request *c = malloc(sizeof *c);
    char err[160] = "out of memory";
    if (c) {
        *c = (struct chunk_request){s, d->seq, raft_node_epoch(s->node), d->id, d->position};
        struct net_client_request req = {
            .node_id = d->leader,
            .api_key = RAFT_API_FETCH_SNAPSHOT,
            .pinned_version = -1,
            .encode = encode_chunk_request,
            .encode_ctx = c,
            .timeout_ms = s->cfg.request_timeout_ms,
            .done = chunk_done,
            .ctx = c,
        };
        if (net_client_send(s->client, &req, err, sizeof err) == 0)
            return;
        free(c);
    }
    shell_download_abort(s, err);
}

void shell_download_abort(struct raft_shell *s, const char *why)
{
    struct shell_download *d = &s->download;
    if (!d->active)
        return;
    logger_warn(LOG, "node %d: downloading metadata snapshot %lld-%d from leader %d failed at byte %lld: %s",
                s->cfg.node_id, (long long)d->id.end_offset, d->id.epoch, d->leader, (long long)d->position, why);
    if (d->fd >= 0)
        close(d->fd);
    unlink(d->part_path);
    d->fd = -1;
    d->active = false;
    raft_node_snapshot_done(s->node, clock_mono_ms(), false, d->id.end_offset, d->id.epoch);
}

void shell_download_start(struct raft_shell *s, int64_t end_offset, int32_t epoch, int32_t leader)
{
    struct shell_download *d = &s->download;
    if (d->active)
        return;
    *d = (struct shell_download){.active = true,
                                 .id = {end_offset, epoch},
                                 .leader = leader,
                                 .fd = -1,
                                 .seq = d->seq + 1,
                                 .started_ms = clock_mono_ms()};
    char path[PATH_MAX];
    if (!s->cfg.snapshot_dir[0] || !s->cfg.listener.on_snapshot ||
        metadata_snapshot_path(path, sizeof path, s->cfg.snapshot_dir, &d->id) != 0 ||
        (size_t)snprintf(d->part_path, sizeof d->part_path, "%s.download", path) >= sizeof d->part_path) {
        shell_download_abort(s, "this node keeps no snapshots");
        return;
    }
    d->fd = open(d->part_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (d->fd < 0) {
        shell_download_abort(s, strerror(errno));
        return;
    }
    logger_info(LOG, "node %d: behind the leader's log start; downloading metadata snapshot %lld-%d from leader %d",
                s->cfg.node_id, (long long)end_offset, epoch, leader);
    send_chunk_request(s);
}

static int fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The whole file is here: make it durable under its name, check it reads
 * back, load it and restart the log at its end. */
static void install(struct raft_shell *s)
{
    struct shell_download *d = &s->download;
    char path[PATH_MAX], err[512] = "";
    metadata_snapshot_path(path, sizeof path, s->cfg.snapshot_dir, &d->id);
    int rc = fsync(d->fd);
    close(d->fd);
    d->fd = -1;
    if (rc != 0 || rename(d->part_path, path) != 0 || fsync_dir(s->cfg.snapshot_dir) != 0) {
        shell_download_abort(s, strerror(errno));
        return;
    }
    if (s->cfg.listener.on_snapshot(s->cfg.listener.ctx, s, d->id.end_offset, d->id.epoch, err, sizeof err) != 0) {
        unlink(path);
        shell_download_abort(s, err);
        return;
    }
    if (s->cfg.store_ops->start_at(s->cfg.store, d->id.end_offset, err, sizeof err) != 0) {
        shell_download_abort(s, err);
        return;
    }
    d->active = false;
    logger_info(LOG,
                "node %d: installed metadata snapshot %lld-%d downloaded with FetchSnapshot from leader %d "
                "(%lld bytes in %d chunks, %lld ms); the log restarts at offset %lld",
                s->cfg.node_id, (long long)d->id.end_offset, d->id.epoch, d->leader, (long long)d->position, d->chunks,
                (long long)(clock_mono_ms() - d->started_ms), (long long)d->id.end_offset);
    raft_node_snapshot_done(s->node, clock_mono_ms(), true, d->id.end_offset, d->id.epoch);
}

void shell_download_chunk(struct raft_shell *s, struct shell_chunk *ch)
{
    struct shell_download *d = &s->download;
    if (!d->active || ch->seq != d->seq)
        return; /* an answer to an abandoned download */
    char why[220];
    if (ch->error_code != KAFKA_ERR_NONE) {
        if (ch->why[0])
            snprintf(why, sizeof why, "%s", ch->why);
        else
            snprintf(why, sizeof why, "error %d", ch->error_code);
        shell_download_abort(s, why);
        return;
    }
    if (ch->id.end_offset != d->id.end_offset || ch->id.epoch != d->id.epoch || ch->position != d->position ||
        ch->size < 0 || ch->len < 0 || ch->position + ch->len > ch->size || (ch->len == 0 && ch->position < ch->size)) {
        shell_download_abort(s, "the answer does not continue the snapshot");
        return;
    }
    if (ch->len > 0 && pwrite(d->fd, ch->data, (size_t)ch->len, d->position) != ch->len) {
        shell_download_abort(s, "writing the snapshot failed");
        return;
    }
    d->position += ch->len;
    d->chunks++;
    raft_node_snapshot_progress(s->node, clock_mono_ms());
    if (d->position == ch->size)
        install(s);
    else
        send_chunk_request(s);
}

void shell_download_remove_leftovers(struct raft_shell *s)
{
    DIR *d = s->cfg.snapshot_dir[0] ? opendir(s->cfg.snapshot_dir) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char path[PATH_MAX];
        if (n > 9 && strcmp(e->d_name + n - 9, ".download") == 0 &&
            (size_t)snprintf(path, sizeof path, "%s/%s", s->cfg.snapshot_dir, e->d_name) < sizeof path) {
            logger_info(LOG, "node %d: removing %s, a snapshot download cut short", s->cfg.node_id, path);
            unlink(path);
        }
    }
    closedir(d);
}

void shell_chunk_free(struct shell_chunk *ch)
{
    if (!ch)
        return;
    free(ch->data);
    free(ch);
}
