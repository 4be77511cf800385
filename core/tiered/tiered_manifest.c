/* The remote segment list of a replicated partition, kept in the remote
 * store itself so that followers and a new leader learn what the leader
 * copied. It rides on the plugin ABI as it stands: the manifest is stored
 * as the .log object of a pseudo-segment with a fixed id (all 0xff, which
 * a random copy id never takes) at offset 0, written with copy_segment
 * (every plugin replaces an object atomically: rename, or an S3 PUT),
 * read with fetch_segment and removed with delete_segment. Its content is
 * the broker's metadata file plus the writer's leader epoch.
 *
 * Only the leader writes it, after every change of its list (before the
 * change takes effect for a copy or a delete: a COPY_STARTED entry is in
 * the store before the copy, so a new leader cleans up what a dead one
 * left half done). */
#include "tiered/tiered_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/clock.h"
#include "util/fs_util.h"
#include "util/logger.h"

#define MANIFEST_MAX_BYTES (64 << 20) /* a list far past any real partition's */

static void manifest_view(const struct tiered *t, const struct tiered_partition *p, struct cairn_remote_segment *out)
{
    *out = (struct cairn_remote_segment){
        .struct_size = sizeof *out,
        .topic = p->topic,
        .partition = p->partition,
        .start_offset = 0,
        .end_offset = 0,
        .max_timestamp_ms = -1,
        .broker_id = t->opts.node_id,
    };
    memcpy(out->topic_id, p->topic_id, 16);
    memset(out->segment_id, 0xff, 16);
}

int tiered_manifest_write(struct tiered *t, struct tiered_partition *p, int32_t epoch)
{
    pthread_mutex_lock(&p->lock);
    char *text = tiered_metadata_text(p, epoch);
    pthread_mutex_unlock(&p->lock);
    char *tmp = NULL;
    if (!text || asprintf(&tmp, "%s.manifest", p->meta_path) < 0) {
        free(text);
        return -1;
    }
    char err[512] = "";
    int rc = fs_replace_file(tmp, text, strlen(text), false, err, sizeof err);
    free(text);
    if (rc == 0) {
        struct cairn_remote_segment view;
        manifest_view(t, p, &view);
        struct cairn_remote_segment_files files = {.struct_size = sizeof files, .log_path = tmp};
        uint8_t custom[TIERED_CUSTOM_METADATA_MAX];
        size_t custom_len = sizeof custom;
        rc = t->rsm->copy_segment(t->rsm_instance, &view, &files, custom, &custom_len, err, sizeof err);
        tiered_store_note(t, rc);
    }
    unlink(tmp);
    free(tmp);
    if (rc != 0) {
        tiered_count_error(t, TIERED_OP_COPY, tiered_error_kind_of(rc));
        logger_warn("tiered", "%s-%" PRId32 ": writing the remote segment manifest failed (%d): %s", p->topic,
                    p->partition, rc, err);
        return -1;
    }
    p->manifest_epoch = epoch;
    return 0;
}

struct buffer {
    char *data;
    size_t len, cap;
};

static int buffer_write(void *ctx, const uint8_t *data, size_t len)
{
    struct buffer *b = ctx;
    if (len > MANIFEST_MAX_BYTES - b->len)
        return CAIRN_INVALID;
    if (b->len + len > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + len)
            cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown)
            return CAIRN_ERROR;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    return CAIRN_OK;
}

/* Whether l names the segments p lists, in the same states, and the same
 * log start. Caller holds p->lock. */
static bool same_list_locked(const struct tiered_partition *p, const struct tiered_list *l)
{
    if (l->count != p->count || l->log_start_offset > p->log_start_offset)
        return false;
    for (size_t i = 0; i < l->count; i++)
        if (memcmp(l->segs[i].id, p->segs[i].id, 16) != 0 || l->segs[i].state != p->segs[i].state)
            return false;
    return true;
}

int tiered_manifest_read(struct tiered *t, struct tiered_partition *p)
{
    struct cairn_remote_segment view;
    manifest_view(t, p, &view);
    struct buffer buf = {0};
    struct cairn_byte_sink sink = {.struct_size = sizeof sink, .ctx = &buf, .write = buffer_write};
    char err[512] = "";
    int64_t started_ns = clock_mono_ns();
    int rc = t->rsm->fetch_segment(t->rsm_instance, &view, 0, -1, &sink, err, sizeof err);
    tiered_store_note(t, rc == CAIRN_NOT_FOUND ? CAIRN_OK : rc); /* an answer, if not a manifest */
    tiered_observe_fetch(t, TIERED_FETCH_MANIFEST, started_ns);
    if (rc == CAIRN_NOT_FOUND) { /* none written yet: not an error */
        free(buf.data);
        return 1;
    }
    struct tiered_list list;
    if (rc != CAIRN_OK || tiered_metadata_parse(buf.data ? buf.data : "", buf.len, p, &list, err, sizeof err) != 0) {
        free(buf.data);
        /* A manifest the plugin returned but that does not parse is corrupt. */
        tiered_count_error(t, TIERED_OP_FETCH, rc != CAIRN_OK ? tiered_error_kind_of(rc) : TIERED_ERROR_CORRUPT);
        logger_warn("tiered", "%s-%" PRId32 ": reading the remote segment manifest failed (%d): %s", p->topic,
                    p->partition, rc, err);
        return -1;
    }
    free(buf.data);
    pthread_mutex_lock(&p->lock);
    if (same_list_locked(p, &list)) {
        pthread_mutex_unlock(&p->lock);
        tiered_list_free(&list);
        return 0; /* a follower reads every pass: no rewrite when nothing changed */
    }
    for (size_t i = 0; i < p->count; i++)
        tiered_segment_free(&p->segs[i]);
    free(p->segs);
    p->segs = list.segs;
    p->count = p->cap = list.count;
    if (list.log_start_offset > p->log_start_offset)
        p->log_start_offset = list.log_start_offset;
    rc = tiered_metadata_save(p, err, sizeof err);
    pthread_mutex_unlock(&p->lock);
    if (rc != 0)
        logger_warn("tiered", "%s-%" PRId32 ": cannot save the remote segment list: %s", p->topic, p->partition, err);
    return 0;
}

int tiered_manifest_delete(struct tiered *t, struct tiered_partition *p)
{
    struct cairn_remote_segment view;
    manifest_view(t, p, &view);
    char err[512] = "";
    int rc = t->rsm->delete_segment(t->rsm_instance, &view, err, sizeof err);
    tiered_store_note(t, rc);
    if (rc != CAIRN_OK) {
        tiered_count_error(t, TIERED_OP_DELETE, tiered_error_kind_of(rc));
        logger_warn("tiered", "%s-%" PRId32 ": deleting the remote segment manifest failed (%d): %s", p->topic,
                    p->partition, rc, err);
        return -1;
    }
    return 0;
}
