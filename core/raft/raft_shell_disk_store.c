/* The durable store behind raft_shell_store_ops: the quorum-state file and
 * the Raft log of raft_store.h (raft_shell_store.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log_manager.h"
#include "raft/raft_shell_store.h"
#include "raft/raft_store.h"

/* Owned by the raft thread once the shell has started. */
struct disk_store {
    struct raft_store *log;
    char qs_dir[PATH_MAX];   /* <dir>/__cluster_metadata-0, where Kafka keeps quorum-state */
    struct raft_store_qs qs; /* cluster id and voters written with every quorum state */
};

void *raft_shell_disk_store_open(const char *dir, const char *cluster_id, const int32_t *voters, int n_voters,
                                 char *err, size_t errlen)
{
    struct disk_store *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if ((size_t)snprintf(s->qs_dir, sizeof s->qs_dir, "%s/%s", dir, LOG_MANAGER_METADATA_DIR) >= sizeof s->qs_dir ||
        n_voters > RAFT_MAX_VOTERS) {
        snprintf(err, errlen, "bad metadata quorum store under %s", dir);
        free(s);
        return NULL;
    }
    snprintf(s->qs.cluster_id, sizeof s->qs.cluster_id, "%s", cluster_id);
    memcpy(s->qs.voters, voters, (size_t)n_voters * sizeof *voters);
    s->qs.n_voters = n_voters;
    if (raft_store_open(dir, &s->log, err, errlen) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

void raft_shell_disk_store_set_segments(void *store, int64_t segment_bytes, int64_t segment_ms)
{
    raft_store_set_segments(((struct disk_store *)store)->log, segment_bytes, segment_ms);
}

static int disk_load_qs(void *store, struct raft_quorum_state *qs, bool *found, char *err, size_t errlen)
{
    struct disk_store *s = store;
    struct raft_store_qs got;
    int rc = raft_store_qs_read(s->qs_dir, &got, err, errlen);
    *found = rc == 1;
    if (rc < 0)
        return -1;
    if (rc == 1 && got.cluster_id[0] && strcmp(got.cluster_id, s->qs.cluster_id) != 0) {
        snprintf(err, errlen, "%s/%s belongs to cluster %s, not %s", s->qs_dir, RAFT_STORE_QUORUM_STATE_FILE,
                 got.cluster_id, s->qs.cluster_id);
        return -1;
    }
    if (rc == 1)
        *qs = got.qs;
    return 0;
}

static int disk_persist_qs(void *store, const struct raft_quorum_state *qs, char *err, size_t errlen)
{
    struct disk_store *s = store;
    s->qs.qs = *qs;
    return raft_store_qs_write(s->qs_dir, &s->qs, err, errlen);
}

static int disk_append(void *store, const struct raft_entry *e, char *err, size_t errlen)
{
    return raft_store_append(((struct disk_store *)store)->log, e, err, errlen);
}

static int disk_truncate(void *store, int64_t offset, char *err, size_t errlen)
{
    return raft_store_truncate(((struct disk_store *)store)->log, offset, err, errlen);
}

static int disk_flush(void *store, int64_t *end, char *err, size_t errlen)
{
    struct raft_store *log = ((struct disk_store *)store)->log;
    return raft_store_flush(log, raft_store_end_offset(log), end, err, errlen);
}

static int disk_read(void *store, int64_t offset, int32_t max_bytes, int (*fn)(void *arg, const struct raft_entry *e),
                     void *arg, char *err, size_t errlen)
{
    struct raft_entry *entries;
    int64_t n;
    if (raft_store_read(((struct disk_store *)store)->log, offset, max_bytes, &entries, &n, err, errlen) != 0)
        return -1;
    int rc = 0;
    for (int64_t i = 0; i < n && rc == 0; i++)
        rc = fn(arg, &entries[i]);
    raft_store_entries_free(entries, n);
    return rc;
}

static int64_t disk_start_offset(void *store)
{
    return raft_store_start_offset(((struct disk_store *)store)->log);
}

static int disk_delete_before(void *store, int64_t offset, char *err, size_t errlen)
{
    return raft_store_delete_before(((struct disk_store *)store)->log, offset, err, errlen);
}

static int disk_start_at(void *store, int64_t offset, char *err, size_t errlen)
{
    return raft_store_start_at(((struct disk_store *)store)->log, offset, err, errlen);
}

static void disk_close(void *store)
{
    struct disk_store *s = store;
    if (!s)
        return;
    raft_store_close(s->log);
    free(s);
}

const struct raft_shell_store_ops raft_shell_disk_store_ops = {
    .load_qs = disk_load_qs,
    .persist_qs = disk_persist_qs,
    .append = disk_append,
    .truncate = disk_truncate,
    .flush = disk_flush,
    .read = disk_read,
    .start_offset = disk_start_offset,
    .delete_before = disk_delete_before,
    .start_at = disk_start_at,
    .close = disk_close,
};
