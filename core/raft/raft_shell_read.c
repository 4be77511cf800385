/* The log's bytes come from the store, not the core: the shell runs the
 * core with entries_on_disk, so the core keeps one header per entry and
 * the shell reads the bytes back when it needs them, a bounded amount at a
 * time (loading the headers at start, a Fetch answer, one committed entry
 * for the listener). Raft thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raft/raft_shell_internal.h"
#include "util/logger.h"

/* What one store read at start may hold in memory at once (then more while
 * one entry alone is larger). */
#define LOAD_CHUNK_BYTES (1 << 20)

struct entry_list {
    struct raft_entry *entries;
    int64_t n, cap;
    int64_t limit; /* stop after this many; -1: no limit */
    bool with_data;
};

/* Stops the read (returns 1) once the list holds limit entries. */
static int collect_entry(void *arg, const struct raft_entry *e)
{
    struct entry_list *l = arg;
    if (l->limit >= 0 && l->n >= l->limit)
        return 1;
    if (l->n == l->cap) {
        int64_t ncap = l->cap ? l->cap * 2 : 64;
        struct raft_entry *grown = realloc(l->entries, (size_t)ncap * sizeof *grown);
        if (!grown)
            return -1;
        l->entries = grown;
        l->cap = ncap;
    }
    struct raft_entry *copy = &l->entries[l->n];
    *copy = *e;
    copy->data = NULL;
    if (l->with_data) {
        copy->data = malloc(e->len ? e->len : 1);
        if (!copy->data)
            return -1;
        memcpy(copy->data, e->data, e->len);
    }
    l->n++;
    return 0;
}

static void entry_list_free(struct entry_list *l)
{
    for (int64_t i = 0; i < l->n; i++)
        free(l->entries[i].data);
    free(l->entries);
    *l = (struct entry_list){.limit = -1};
}

/* Reads into l from offset; a stop by the limit is no error. */
static int read_into(struct raft_shell *s, int64_t offset, int32_t max_bytes, struct entry_list *l, char *err,
                     size_t errlen)
{
    int rc = s->cfg.store_ops->read(s->cfg.store, offset, max_bytes, collect_entry, l, err, errlen);
    if (rc < 0 && !err[0])
        snprintf(err, errlen, "out of memory reading the metadata quorum log");
    return rc < 0 ? -1 : 0;
}

int shell_load_headers(struct raft_shell *s, int64_t start, struct raft_entry **entries_out, int64_t *n_out, char *err,
                       size_t errlen)
{
    struct entry_list l = {.limit = -1};
    int64_t offset = start;
    for (;;) {
        int64_t before = l.n;
        if (read_into(s, offset, LOAD_CHUNK_BYTES, &l, err, errlen) != 0) {
            entry_list_free(&l);
            return -1;
        }
        if (l.n == before)
            break;
        offset = l.entries[l.n - 1].offset + l.entries[l.n - 1].count;
    }
    *entries_out = l.entries;
    *n_out = l.n;
    return 0;
}

static bool same_entry(const struct raft_entry *a, const struct raft_entry *b)
{
    return a->offset == b->offset && a->epoch == b->epoch && a->count == b->count;
}

int shell_fill_fetch(struct raft_shell *s, const struct raft_msg *m, int32_t max_bytes, struct raft_msg *filled)
{
    const struct raft_fetch_resp *r = &m->u.fetch_resp;
    *filled = *m;
    filled->u.fetch_resp.records = NULL;
    filled->u.fetch_resp.n_records = 0;
    if (r->n_records == 0)
        return 0;
    if (max_bytes <= 0)
        max_bytes = RAFT_CODEC_FETCH_MAX_BYTES;
    char err[256] = "";
    struct entry_list l = {.limit = r->n_records, .with_data = true};
    if (read_into(s, r->fetch_offset, max_bytes, &l, err, sizeof err) != 0) {
        /* Answered without records: the follower fetches again. */
        logger_warn("raft", "node %d: cannot read the quorum log at offset %lld for a fetch: %s", s->cfg.node_id,
                    (long long)r->fetch_offset, err);
        entry_list_free(&l);
        return -1;
    }
    /* Only what the core's log holds: the store is the same log. */
    int64_t keep = 0;
    while (keep < l.n && same_entry(&l.entries[keep], &r->records[keep]))
        keep++;
    for (int64_t i = keep; i < l.n; i++)
        free(l.entries[i].data);
    filled->u.fetch_resp.records = l.entries;
    filled->u.fetch_resp.n_records = (int32_t)keep;
    return 0;
}

const struct raft_entry *shell_entry_from_store(struct raft_shell *s, const struct raft_entry *header)
{
    free(s->scratch.data);
    s->scratch = (struct raft_entry){0};
    char err[256] = "";
    /* A budget of one byte reads exactly the entry at the offset. */
    struct entry_list l = {.limit = 1, .with_data = true};
    if (read_into(s, header->offset, 1, &l, err, sizeof err) != 0 || l.n != 1 || !same_entry(&l.entries[0], header)) {
        logger_error("raft", "node %d: cannot read the committed quorum entry at offset %lld: %s", s->cfg.node_id,
                     (long long)header->offset, err[0] ? err : "the store does not hold it");
        entry_list_free(&l);
        return NULL;
    }
    s->scratch = l.entries[0];
    free(l.entries);
    return &s->scratch;
}
