/* The in-memory store: not durable (see raft_shell_store.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raft/raft_shell_store.h"

struct mem_store {
    struct raft_quorum_state qs;
    bool has_qs;
    struct raft_entry *entries; /* consecutive from offset 0 */
    int64_t len, cap;
};

void *raft_shell_mem_store_create(void)
{
    return calloc(1, sizeof(struct mem_store));
}

static int mem_load_qs(void *store, struct raft_quorum_state *qs, bool *found, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct mem_store *s = store;
    *found = s->has_qs;
    if (s->has_qs)
        *qs = s->qs;
    return 0;
}

static int mem_persist_qs(void *store, const struct raft_quorum_state *qs, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct mem_store *s = store;
    s->qs = *qs;
    s->has_qs = true;
    return 0;
}

static int64_t mem_end(const struct mem_store *s)
{
    return s->len ? s->entries[s->len - 1].offset + s->entries[s->len - 1].count : 0;
}

static int mem_append(void *store, const struct raft_entry *e, char *err, size_t errlen)
{
    struct mem_store *s = store;
    if (e->offset != mem_end(s)) {
        snprintf(err, errlen, "append at offset %lld but the log ends at %lld", (long long)e->offset,
                 (long long)mem_end(s));
        return -1;
    }
    if (s->len == s->cap) {
        int64_t ncap = s->cap ? s->cap * 2 : 64;
        struct raft_entry *grown = realloc(s->entries, (size_t)ncap * sizeof *grown);
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        s->entries = grown;
        s->cap = ncap;
    }
    struct raft_entry *copy = &s->entries[s->len];
    *copy = *e;
    copy->data = malloc(e->len ? e->len : 1);
    if (!copy->data) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (e->len)
        memcpy(copy->data, e->data, e->len);
    s->len++;
    return 0;
}

static int mem_truncate(void *store, int64_t offset, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct mem_store *s = store;
    while (s->len > 0 && s->entries[s->len - 1].offset >= offset)
        free(s->entries[--s->len].data);
    return 0;
}

static int mem_flush(void *store, int64_t *end, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    *end = mem_end(store);
    return 0;
}

static int mem_read(void *store, int64_t offset, int (*fn)(void *arg, const struct raft_entry *e), void *arg, char *err,
                    size_t errlen)
{
    (void)err;
    (void)errlen;
    struct mem_store *s = store;
    for (int64_t i = 0; i < s->len; i++) {
        if (s->entries[i].offset + s->entries[i].count <= offset)
            continue;
        int rc = fn(arg, &s->entries[i]);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static void mem_close(void *store)
{
    struct mem_store *s = store;
    if (!s)
        return;
    for (int64_t i = 0; i < s->len; i++)
        free(s->entries[i].data);
    free(s->entries);
    free(s);
}

const struct raft_shell_store_ops raft_shell_mem_store_ops = {
    .load_qs = mem_load_qs,
    .persist_qs = mem_persist_qs,
    .append = mem_append,
    .truncate = mem_truncate,
    .flush = mem_flush,
    .read = mem_read,
    .close = mem_close,
};
