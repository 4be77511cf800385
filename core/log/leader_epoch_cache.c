/* Leader epoch cache and its leader-epoch-checkpoint file. */
#include "log/leader_epoch_cache.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log_checkpoint.h"

/* A checkpoint holds one line per leader change; a megabyte is tens of
 * thousands of them, far beyond any real partition. */
#define LEADER_EPOCH_CHECKPOINT_MAX_BYTES (1024 * 1024)

void leader_epoch_cache_init(struct leader_epoch_cache *c)
{
    memset(c, 0, sizeof *c);
}

void leader_epoch_cache_free(struct leader_epoch_cache *c)
{
    free(c->entries);
    leader_epoch_cache_init(c);
}

void leader_epoch_cache_clear(struct leader_epoch_cache *c)
{
    c->count = 0;
}

static int reserve_one(struct leader_epoch_cache *c)
{
    if (c->count < c->cap)
        return 0;
    size_t cap = c->cap ? c->cap * 2 : 4;
    struct leader_epoch_entry *grown = realloc(c->entries, cap * sizeof *grown);
    if (!grown)
        return ENOMEM;
    c->entries = grown;
    c->cap = cap;
    return 0;
}

int leader_epoch_cache_assign(struct leader_epoch_cache *c, int32_t epoch, int64_t start_offset, bool *changed)
{
    if (changed)
        *changed = false;
    if (epoch < 0 || start_offset < 0)
        return EINVAL;
    if (c->count > 0) {
        const struct leader_epoch_entry *last = &c->entries[c->count - 1];
        if (last->epoch == epoch && start_offset >= last->start_offset)
            return 0;
    }
    /* Room first, so a failure leaves the list as it was. */
    int rc = reserve_one(c);
    if (rc != 0)
        return rc;
    while (c->count > 0 &&
           (c->entries[c->count - 1].epoch >= epoch || c->entries[c->count - 1].start_offset >= start_offset))
        c->count--;
    c->entries[c->count++] = (struct leader_epoch_entry){epoch, start_offset};
    if (changed)
        *changed = true;
    return 0;
}

int32_t leader_epoch_cache_latest_epoch(const struct leader_epoch_cache *c)
{
    return c->count ? c->entries[c->count - 1].epoch : LEADER_EPOCH_UNDEFINED;
}

void leader_epoch_cache_end_offset_for(const struct leader_epoch_cache *c, int32_t requested, int64_t log_end_offset,
                                       int32_t *epoch_out, int64_t *offset_out)
{
    *epoch_out = LEADER_EPOCH_UNDEFINED;
    *offset_out = LEADER_EPOCH_UNDEFINED_OFFSET;
    if (requested == LEADER_EPOCH_UNDEFINED || c->count == 0)
        return;
    if (c->entries[c->count - 1].epoch == requested) {
        /* The epoch still being written: it ends at the log end. */
        *epoch_out = requested;
        *offset_out = log_end_offset;
        return;
    }
    /* First entry with an epoch above requested. */
    size_t lo = 0, hi = c->count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c->entries[mid].epoch > requested)
            hi = mid;
        else
            lo = mid + 1;
    }
    if (lo == c->count)
        return; /* newer than anything this log has seen */
    /* Below the earliest known epoch, Kafka answers the requested epoch
     * with the earliest start offset: the data before it is gone, and a
     * follower must start from there. */
    *epoch_out = lo == 0 ? requested : c->entries[lo - 1].epoch;
    *offset_out = c->entries[lo].start_offset;
}

int32_t leader_epoch_cache_epoch_for_offset(const struct leader_epoch_cache *c, int64_t offset)
{
    int32_t epoch = LEADER_EPOCH_UNDEFINED;
    for (size_t i = 0; i < c->count && c->entries[i].start_offset <= offset; i++)
        epoch = c->entries[i].epoch;
    return epoch;
}

bool leader_epoch_cache_truncate_from_end(struct leader_epoch_cache *c, int64_t end_offset)
{
    if (end_offset < 0)
        return false;
    size_t before = c->count;
    while (c->count > 0 && c->entries[c->count - 1].start_offset >= end_offset)
        c->count--;
    return c->count != before;
}

bool leader_epoch_cache_truncate_from_start(struct leader_epoch_cache *c, int64_t start_offset)
{
    size_t covered = 0; /* entries starting at or below start_offset */
    while (covered < c->count && c->entries[covered].start_offset <= start_offset)
        covered++;
    if (covered == 0)
        return false;
    /* The last of them covers start_offset: keep it, starting there. */
    bool changed = covered > 1 || c->entries[0].start_offset != start_offset;
    memmove(c->entries, c->entries + covered - 1, (c->count - covered + 1) * sizeof *c->entries);
    c->count -= covered - 1;
    c->entries[0].start_offset = start_offset;
    return changed;
}

/* ---- leader-epoch-checkpoint ---- */

int leader_epoch_checkpoint_format(const struct leader_epoch_cache *c, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *mem = open_memstream(text, len);
    if (!mem)
        return ENOMEM;
    fprintf(mem, "0\n%zu\n", c->count);
    for (size_t i = 0; i < c->count; i++)
        fprintf(mem, "%" PRId32 " %" PRId64 "\n", c->entries[i].epoch, c->entries[i].start_offset);
    if (fclose(mem) != 0) {
        free(*text);
        *text = NULL;
        return ENOMEM;
    }
    return 0;
}

/* Cursor over the text's lines; a line ends at '\n' (a '\r' before it is
 * dropped, as Java's readLine does). */
struct checkpoint_lines {
    const char *p, *end;
};

static bool next_line(struct checkpoint_lines *l, const char **line, size_t *n)
{
    if (l->p >= l->end)
        return false;
    const char *nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
    const char *stop = nl ? nl : l->end;
    *line = l->p;
    *n = (size_t)(stop - l->p);
    if (*n > 0 && (*line)[*n - 1] == '\r')
        (*n)--;
    l->p = nl ? nl + 1 : l->end;
    return true;
}

/* A decimal integer at s[*i] (optional '-') within [min, max]; one that
 * overflows 64 bits fails. Advances *i past it. */
static bool parse_int(const char *s, size_t n, size_t *i, int64_t min, int64_t max, int64_t *out)
{
    bool negative = *i < n && s[*i] == '-';
    size_t at = *i + (negative ? 1 : 0), digits = 0;
    int64_t v = 0;
    while (at < n && s[at] >= '0' && s[at] <= '9') {
        int d = s[at] - '0';
        if (v > (INT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
        digits++;
        at++;
    }
    if (digits == 0)
        return false;
    v = negative ? -v : v;
    if (v < min || v > max)
        return false;
    *i = at;
    *out = v;
    return true;
}

static bool is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* "<epoch> <offset>", separated by blanks, trailing blanks allowed. */
static bool parse_entry(const char *s, size_t n, struct leader_epoch_entry *out)
{
    size_t i = 0;
    int64_t epoch, offset;
    if (!parse_int(s, n, &i, INT32_MIN, INT32_MAX, &epoch) || i >= n || !is_blank(s[i]))
        return false;
    while (i < n && is_blank(s[i]))
        i++;
    if (!parse_int(s, n, &i, INT64_MIN + 1, INT64_MAX, &offset))
        return false;
    while (i < n && is_blank(s[i]))
        i++;
    if (i != n)
        return false;
    out->epoch = (int32_t)epoch;
    out->start_offset = offset;
    return true;
}

static int parse_fail(struct leader_epoch_cache *out, char *err, size_t errlen, const char *why, size_t line_no)
{
    snprintf(err, errlen, "%s (line %zu)", why, line_no);
    leader_epoch_cache_clear(out);
    return EINVAL;
}

int leader_epoch_checkpoint_parse(const char *text, size_t len, struct leader_epoch_cache *out, char *err,
                                  size_t errlen)
{
    struct checkpoint_lines lines = {text, text + len};
    const char *line;
    size_t n, i = 0;
    int64_t version, count;
    leader_epoch_cache_clear(out);
    if (!next_line(&lines, &line, &n) || !parse_int(line, n, &i, 0, INT32_MAX, &version) || i != n)
        return parse_fail(out, err, errlen, "missing version", 1);
    if (version != 0)
        return parse_fail(out, err, errlen, "unknown version", 1);
    i = 0;
    /* Each entry line takes at least two bytes, which bounds the count
     * before anything is allocated for it. */
    if (!next_line(&lines, &line, &n) || !parse_int(line, n, &i, 0, (int64_t)len / 2 + 1, &count) || i != n)
        return parse_fail(out, err, errlen, "bad entry count", 2);
    for (int64_t k = 0; k < count; k++) {
        struct leader_epoch_entry e;
        size_t line_no = (size_t)k + 3;
        if (!next_line(&lines, &line, &n))
            return parse_fail(out, err, errlen, "fewer entries than counted", line_no);
        if (!parse_entry(line, n, &e) || e.epoch < 0 || e.start_offset < 0)
            return parse_fail(out, err, errlen, "bad entry", line_no);
        if (out->count > 0 && (e.epoch <= out->entries[out->count - 1].epoch ||
                               e.start_offset <= out->entries[out->count - 1].start_offset))
            return parse_fail(out, err, errlen, "entries out of order", line_no);
        if (reserve_one(out) != 0)
            return parse_fail(out, err, errlen, "out of memory", line_no);
        out->entries[out->count++] = e;
    }
    if (lines.p < lines.end)
        return parse_fail(out, err, errlen, "more entries than counted", (size_t)count + 3);
    return 0;
}

int leader_epoch_checkpoint_write(const char *path, const struct leader_epoch_cache *c, bool durable)
{
    char *text;
    size_t len;
    int rc = leader_epoch_checkpoint_format(c, &text, &len);
    if (rc != 0)
        return rc;
    rc = durable ? log_file_write_atomic(path, text, len) : log_file_write_atomic_unsynced(path, text, len);
    free(text);
    return rc;
}

int leader_epoch_checkpoint_read(const char *path, struct leader_epoch_cache *out, char *err, size_t errlen)
{
    char *text;
    size_t len;
    leader_epoch_cache_clear(out);
    int rc = log_file_read_all(path, LEADER_EPOCH_CHECKPOINT_MAX_BYTES, &text, &len);
    if (rc == EFBIG) {
        snprintf(err, errlen, "larger than %d bytes", LEADER_EPOCH_CHECKPOINT_MAX_BYTES);
        return EINVAL;
    }
    if (rc != 0) {
        snprintf(err, errlen, "%s", strerror(rc));
        return rc;
    }
    rc = leader_epoch_checkpoint_parse(text, len, out, err, errlen);
    free(text);
    return rc;
}
