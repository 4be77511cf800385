/* FetchSnapshot (API 59, KIP-630) at the quorum's leader: a replica asks
 * for a byte range of one snapshot file and gets it back as it is on disk,
 * so the bytes it reassembles are the leader's file, byte for byte.
 *
 * Served on the network layer's io thread: a snapshot file never changes
 * once renamed into place (it is only deleted by pruning, which the open
 * file descriptor survives), and the leader check reads the shell's status
 * under its mutex. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metadata/metadata_snapshot.h"
#include "protocol/generated/errors.h"
#include "protocol/generated/fetch_snapshot_request.h"
#include "protocol/generated/fetch_snapshot_response.h"
#include "raft/raft_codec_internal.h"
#include "raft/raft_shell_internal.h"
#include "util/logger.h"

#define LOG "raft"
/* Upper bound of one chunk whatever MaxBytes says (Kafka's default). */
#define SNAPSHOT_CHUNK_MAX (1 << 20)

struct snapshot_answer {
    int16_t top_error; /* request level: cluster id */
    struct fetch_snapshot_response_partition_snapshot part;
};

static int write_answer(struct kafka_writer *w, int16_t version, const void *arg)
{
    const struct snapshot_answer *a = arg;
    struct fetch_snapshot_response resp;
    fetch_snapshot_response_init(&resp);
    resp.error_code = a->top_error;
    struct fetch_snapshot_response_topic_snapshot topic;
    fetch_snapshot_response_topic_snapshot_init(&topic);
    if (a->top_error == KAFKA_ERR_NONE) {
        topic.name = kafka_str_from_cstr(RAFT_CODEC_TOPIC);
        topic.partitions = (struct fetch_snapshot_response_partition_snapshot *)&a->part;
        topic.partitions_count = 1;
        resp.topics = &topic;
        resp.topics_count = 1;
    }
    return fetch_snapshot_response_encode(&resp, w, version);
}

/* Reads [position, position + max) of the snapshot file into *buf. Returns
 * KAFKA_ERR_NONE, SNAPSHOT_NOT_FOUND or POSITION_OUT_OF_RANGE. */
static int16_t read_chunk(const char *dir, const struct metadata_snapshot_id *id, int64_t position, int32_t max,
                          uint8_t **buf, int32_t *len, int64_t *size)
{
    char path[PATH_MAX];
    if (metadata_snapshot_path(path, sizeof path, dir, id) != 0)
        return KAFKA_ERR_SNAPSHOT_NOT_FOUND;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return KAFKA_ERR_SNAPSHOT_NOT_FOUND;
    struct stat st;
    int16_t rc = KAFKA_ERR_NONE;
    if (fstat(fd, &st) != 0) {
        rc = KAFKA_ERR_SNAPSHOT_NOT_FOUND;
    } else if (position < 0 || position > st.st_size) {
        rc = KAFKA_ERR_POSITION_OUT_OF_RANGE;
    } else {
        *size = st.st_size;
        int64_t want = st.st_size - position < max ? st.st_size - position : max;
        *buf = malloc(want > 0 ? (size_t)want : 1);
        ssize_t got = *buf ? pread(fd, *buf, (size_t)want, position) : -1;
        if (got != want) {
            free(*buf);
            *buf = NULL;
            rc = KAFKA_ERR_SNAPSHOT_NOT_FOUND;
        } else {
            *len = (int32_t)want;
        }
    }
    close(fd);
    return rc;
}

void shell_serve_fetch_snapshot(struct raft_shell *s, const struct shell_reply_to *reply, const uint8_t *body,
                                size_t len)
{
    struct kafka_reader r;
    kafka_reader_init(&r, body, len);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct fetch_snapshot_request req;
    fetch_snapshot_request_init(&req);
    if (fetch_snapshot_request_decode(&req, &r, reply->api_version, &arena) != 0) {
        logger_warn(LOG, "malformed FetchSnapshot request from %s; closing", reply->net->peer);
        kafka_arena_free(&arena);
        shell_close(reply->net);
        return;
    }
    struct raft_shell_status st;
    raft_shell_status(s, &st);
    struct snapshot_answer a = {.top_error = KAFKA_ERR_NONE};
    fetch_snapshot_response_partition_snapshot_init(&a.part);
    a.part.current_leader.leader_id = st.leader_id;
    a.part.current_leader.leader_epoch = st.epoch;
    a.part.unaligned_records = (struct kafka_records){.data = NULL, .len = 0, .file_fd = -1};
    uint8_t *chunk = NULL;
    const struct fetch_snapshot_request_partition_snapshot *p = req.topics_count == 1 &&
                                                                        req.topics[0].partitions_count == 1
                                                                    ? &req.topics[0].partitions[0]
                                                                    : NULL;
    if (!raft_codec_cluster_ok(req.cluster_id, s->cfg.cluster_id[0] ? s->cfg.cluster_id : NULL)) {
        a.top_error = KAFKA_ERR_INCONSISTENT_CLUSTER_ID;
    } else if (!p || !raft_codec_topic_ok(req.topics[0].name, 1, p->partition)) {
        a.part.error_code = KAFKA_ERR_UNKNOWN_TOPIC_OR_PARTITION;
    } else {
        a.part.snapshot_id.end_offset = p->snapshot_id.end_offset;
        a.part.snapshot_id.epoch = p->snapshot_id.epoch;
        a.part.position = p->position;
        /* Kafka's checks: only the leader serves, at the fetcher's epoch. */
        if (st.role != RAFT_LEADER)
            a.part.error_code = KAFKA_ERR_NOT_LEADER_OR_FOLLOWER;
        else if (p->current_leader_epoch < st.epoch)
            a.part.error_code = KAFKA_ERR_FENCED_LEADER_EPOCH;
        else if (p->current_leader_epoch > st.epoch)
            a.part.error_code = KAFKA_ERR_UNKNOWN_LEADER_EPOCH;
        else if (!s->cfg.snapshot_dir[0])
            a.part.error_code = KAFKA_ERR_SNAPSHOT_NOT_FOUND;
        else {
            struct metadata_snapshot_id id = {p->snapshot_id.end_offset, p->snapshot_id.epoch};
            int32_t max = req.max_bytes > 0 && req.max_bytes < SNAPSHOT_CHUNK_MAX ? req.max_bytes : SNAPSHOT_CHUNK_MAX;
            int32_t n = 0;
            a.part.error_code = read_chunk(s->cfg.snapshot_dir, &id, p->position, max, &chunk, &n, &a.part.size);
            if (a.part.error_code == KAFKA_ERR_NONE) {
                a.part.unaligned_records.data = chunk;
                a.part.unaligned_records.len = n;
            }
        }
    }
    kafka_arena_free(&arena);
    shell_respond(reply, write_answer, &a);
    free(chunk);
}
