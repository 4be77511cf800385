/* Transaction bookkeeping of one cleaner pass (see log_clean_txn.h). */
#include "log/log_clean_txn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log/partition_log_internal.h"

static int cmp_first_offset(const void *a, const void *b)
{
    int64_t x = ((const struct txn_index_entry *)a)->first_offset;
    int64_t y = ((const struct txn_index_entry *)b)->first_offset;
    return (x > y) - (x < y);
}

int clean_txn_init(struct clean_txn *t, const struct txn_index_entry *aborted, size_t n)
{
    memset(t, 0, sizeof *t);
    t->pending = calloc(n ? n : 1, sizeof *t->pending);
    if (!t->pending)
        return ENOMEM;
    if (n > 0)
        memcpy(t->pending, aborted, n * sizeof *aborted);
    t->pending_count = n;
    qsort(t->pending, n, sizeof *t->pending, cmp_first_offset);
    return 0;
}

void clean_txn_free(struct clean_txn *t)
{
    free(t->pending);
    free(t->open);
    free(t->committing);
    txn_index_free(&t->gone);
    memset(t, 0, sizeof *t);
}

static struct clean_txn_open *find_open(struct clean_txn *t, int64_t producer_id)
{
    for (size_t i = 0; i < t->open_count; i++)
        if (t->open[i].entry.producer_id == producer_id)
            return &t->open[i];
    return NULL;
}

/* Aborted transactions starting at or before offset are now under way. */
static int open_up_to(struct clean_txn *t, int64_t offset)
{
    while (t->next_pending < t->pending_count && t->pending[t->next_pending].first_offset <= offset) {
        const struct txn_index_entry *e = &t->pending[t->next_pending++];
        if (find_open(t, e->producer_id))
            continue; /* the earlier one is still under way */
        if (t->open_count == t->open_cap) {
            size_t cap = t->open_cap ? t->open_cap * 2 : 8;
            struct clean_txn_open *grown = realloc(t->open, cap * sizeof *grown);
            if (!grown)
                return ENOMEM;
            t->open = grown;
            t->open_cap = cap;
        }
        t->open[t->open_count++] = (struct clean_txn_open){*e, false};
    }
    return 0;
}

static bool take_committing(struct clean_txn *t, int64_t producer_id)
{
    for (size_t i = 0; i < t->committing_count; i++)
        if (t->committing[i] == producer_id) {
            t->committing[i] = t->committing[--t->committing_count];
            return true;
        }
    return false;
}

static int add_committing(struct clean_txn *t, int64_t producer_id)
{
    for (size_t i = 0; i < t->committing_count; i++)
        if (t->committing[i] == producer_id)
            return 0;
    if (t->committing_count == t->committing_cap) {
        size_t cap = t->committing_cap ? t->committing_cap * 2 : 8;
        int64_t *grown = realloc(t->committing, cap * sizeof *grown);
        if (!grown)
            return ENOMEM;
        t->committing = grown;
        t->committing_cap = cap;
    }
    t->committing[t->committing_count++] = producer_id;
    return 0;
}

int clean_txn_data_batch(struct clean_txn *t, const struct record_batch_header *h, bool *aborted)
{
    *aborted = false;
    int rc = open_up_to(t, record_batch_last_offset(h));
    if (rc != 0 || h->producer_id < 0 || !record_batch_is_transactional(h))
        return rc;
    struct clean_txn_open *o = find_open(t, h->producer_id);
    if (o) {
        o->seen = true;
        *aborted = true;
        return 0;
    }
    return add_committing(t, h->producer_id);
}

int clean_txn_control_batch(struct clean_txn *t, const struct record_batch_header *h, const uint8_t *batch, size_t len,
                            bool horizon_passed, bool *drop)
{
    *drop = false;
    int rc = open_up_to(t, record_batch_last_offset(h));
    if (rc != 0)
        return rc;
    bool may_go = false;
    struct txn_index_entry entry = {.producer_id = -1};
    switch (partition_log_marker_kind(batch, len, NULL)) {
    case LOG_MARKER_EMPTY:
        /* Emptied already: nothing in it for a reader to act on. */
        *drop = true;
        return 0;
    case LOG_MARKER_ABORT: {
        struct clean_txn_open *o = find_open(t, h->producer_id);
        if (!o) {
            may_go = true; /* no data at all, so no entry either */
            break;
        }
        entry = o->entry;
        /* An entry naming another marker means a list we do not
         * understand: keep the marker and its entry. */
        may_go = !o->seen && entry.last_offset == h->base_offset;
        *o = t->open[--t->open_count];
        break;
    }
    case LOG_MARKER_COMMIT:
        may_go = !take_committing(t, h->producer_id);
        break;
    case LOG_MARKER_OTHER:
        break;
    }
    if (!may_go || !horizon_passed || t->keep_markers)
        return 0;
    if (entry.producer_id >= 0 && (rc = txn_index_add(&t->gone, &entry)) != 0)
        return rc;
    *drop = true;
    return 0;
}

void clean_txn_segment_kept(struct clean_txn *t, size_t mark, bool unwalked)
{
    if (t->gone.count > mark)
        t->gone.count = mark;
    if (unwalked)
        t->keep_markers = true;
}
