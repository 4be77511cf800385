/* The checker: what the cluster acknowledged against what was read.
 *
 * A record is one key "<producer>-<seq>"; a position is (partition, offset).
 * Reading the same position twice is a consumer's redelivery (at least once)
 * and is no fault. The faults it counts:
 *   lost        acknowledged, never read
 *   duplicate   one key read at two or more positions (the idempotent
 *               producer promised once)
 *   out of order  within one producer and partition, a lower seq at a
 *               higher offset
 *   phantom     read, but never handed to produce() (unknown producer, or a
 *               seq at or past the count it sent), or a value that does not
 *               match its key
 *   aborted read  a record of an aborted transaction ("X" line) was read
 *               (read_committed readers must never see one)
 * and two it reports without failing: a position read with two different
 * keys (the log at that offset was rewritten, as when a new leader reuses
 * offsets), and a key read at a position other than the acknowledged one. */
#include "chaos.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NO_OFFSET (-1)
#define ABORTED (-2)

struct producer_log {
    char name[32];
    int64_t sent;        /* -1 until an "S" line says */
    int64_t cap;         /* entries allocated below */
    int32_t *acked_part; /* by seq; -1: not acknowledged, ABORTED: its transaction aborted */
    int64_t *acked_off;
    int32_t *positions; /* distinct positions this seq was read at */
};

struct read_rec {
    int32_t part;
    int64_t off;
    int32_t prod; /* index in producers, -1 unknown */
    int64_t seq;
    int bad; /* value did not match, or key not ours */
};

struct check {
    struct producer_log *prods;
    int nprods, capprods;
    struct read_rec *reads;
    int64_t nreads, capreads;
};

static int find_producer(struct check *c, const char *name, int create)
{
    for (int i = 0; i < c->nprods; i++)
        if (strcmp(c->prods[i].name, name) == 0)
            return i;
    if (!create || strlen(name) >= sizeof c->prods[0].name)
        return -1;
    if (c->nprods == c->capprods) {
        int cap = c->capprods ? c->capprods * 2 : 16;
        struct producer_log *n = realloc(c->prods, (size_t)cap * sizeof *n);
        if (!n)
            return -1;
        c->prods = n;
        c->capprods = cap;
    }
    struct producer_log *p = &c->prods[c->nprods];
    memset(p, 0, sizeof *p);
    strcpy(p->name, name);
    p->sent = -1;
    return c->nprods++;
}

/* Makes room for seq in p's arrays; 0 on success. */
static int grow(struct producer_log *p, int64_t seq)
{
    if (seq < p->cap)
        return 0;
    if (seq > (int64_t)1 << 32)
        return -1;
    int64_t cap = p->cap ? p->cap : 1024;
    while (cap <= seq)
        cap *= 2;
    int32_t *ap = realloc(p->acked_part, (size_t)cap * sizeof *ap);
    if (ap)
        p->acked_part = ap;
    int64_t *ao = realloc(p->acked_off, (size_t)cap * sizeof *ao);
    if (ao)
        p->acked_off = ao;
    int32_t *pos = realloc(p->positions, (size_t)cap * sizeof *pos);
    if (pos)
        p->positions = pos;
    if (!ap || !ao || !pos)
        return -1;
    for (int64_t i = p->cap; i < cap; i++) {
        p->acked_part[i] = -1;
        p->acked_off[i] = NO_OFFSET;
        p->positions[i] = 0;
    }
    p->cap = cap;
    return 0;
}

static int load_acked(struct check *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cairn-chaos check: cannot read %s\n", path);
        return -1;
    }
    char line[256], name[64];
    long long seq, off;
    int part, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (sscanf(line, "A %63s %lld %d %lld", name, &seq, &part, &off) == 4 && seq >= 0) {
            int i = find_producer(c, name, 1);
            if (i < 0 || grow(&c->prods[i], seq) < 0)
                goto bad;
            c->prods[i].acked_part[seq] = part;
            c->prods[i].acked_off[seq] = off;
        } else if (sscanf(line, "X %63s %lld", name, &seq) == 2 && seq >= 0) {
            int i = find_producer(c, name, 1);
            if (i < 0 || grow(&c->prods[i], seq) < 0)
                goto bad;
            c->prods[i].acked_part[seq] = ABORTED;
        } else if (sscanf(line, "S %63s %lld", name, &seq) == 2 && seq >= 0) {
            int i = find_producer(c, name, 1);
            if (i < 0)
                goto bad;
            c->prods[i].sent = seq;
        } else if (line[0] != '\n' && line[0] != '#') {
            goto bad;
        }
    }
    fclose(f);
    return 0;
bad:
    fprintf(stderr, "cairn-chaos check: %s:%d: cannot use this line\n", path, lineno);
    fclose(f);
    return -1;
}

/* "<producer>-<seq>": the producer part, and seq; -1 when not of that form. */
static int64_t split_key(const char *key, char *prod, size_t len)
{
    const char *dash = strrchr(key, '-');
    if (!dash || dash == key || (size_t)(dash - key) >= len || !dash[1])
        return -1;
    char *end;
    long long seq = strtoll(dash + 1, &end, 10);
    if (*end || seq < 0)
        return -1;
    memcpy(prod, key, (size_t)(dash - key));
    prod[dash - key] = '\0';
    return seq;
}

static int load_reads(struct check *c, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cairn-chaos check: cannot read %s\n", path);
        return -1;
    }
    char line[256], key[64], ok[8], prod[64];
    long long off;
    int part, lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (line[0] == '\n' || line[0] == '#')
            continue;
        if (sscanf(line, "R %d %lld %63s %7s", &part, &off, key, ok) != 4) {
            fprintf(stderr, "cairn-chaos check: %s:%d: cannot use this line\n", path, lineno);
            fclose(f);
            return -1;
        }
        if (c->nreads == c->capreads) {
            int64_t cap = c->capreads ? c->capreads * 2 : 4096;
            struct read_rec *n = realloc(c->reads, (size_t)cap * sizeof *n);
            if (!n) {
                fclose(f);
                return -1;
            }
            c->reads = n;
            c->capreads = cap;
        }
        struct read_rec *r = &c->reads[c->nreads++];
        r->part = part;
        r->off = off;
        r->seq = split_key(key, prod, sizeof prod);
        r->prod = r->seq >= 0 ? find_producer(c, prod, 0) : -1;
        r->bad = strcmp(ok, "ok") != 0;
    }
    fclose(f);
    return 0;
}

static int by_position(const void *a, const void *b)
{
    const struct read_rec *x = a, *y = b;
    if (x->part != y->part)
        return x->part < y->part ? -1 : 1;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    if (x->prod != y->prod)
        return x->prod < y->prod ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_producer(const void *a, const void *b)
{
    const struct read_rec *x = a, *y = b;
    if (x->prod != y->prod)
        return x->prod < y->prod ? -1 : 1;
    if (x->part != y->part)
        return x->part < y->part ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

#define EXAMPLE(count, ...)                                                                                            \
    do {                                                                                                               \
        if ((count)++ < examples)                                                                                      \
            fprintf(out, __VA_ARGS__);                                                                                 \
    } while (0)

int chaos_check(const char *acked_path, const char *read_path, int examples, FILE *out, struct chaos_check_result *r)
{
    struct check c = {0};
    memset(r, 0, sizeof *r);
    int rc = 2;
    if (load_acked(&c, acked_path) < 0 || load_reads(&c, read_path) < 0)
        goto done;
    /* Unique positions; a position with two keys was rewritten. */
    qsort(c.reads, (size_t)c.nreads, sizeof *c.reads, by_position);
    int64_t n = 0;
    for (int64_t i = 0; i < c.nreads; i++) {
        struct read_rec *x = &c.reads[i];
        if (n > 0 && c.reads[n - 1].part == x->part && c.reads[n - 1].off == x->off) {
            struct read_rec *prev = &c.reads[n - 1];
            if (prev->prod == x->prod && prev->seq == x->seq) {
                r->redelivered++;
                continue;
            }
            EXAMPLE(r->rewritten_offsets, "rewritten: partition %d offset %" PRId64 " read with two keys\n", x->part,
                    x->off);
        }
        c.reads[n++] = *x;
    }
    c.nreads = n;
    r->read_unique = n;
    for (int64_t i = 0; i < n; i++) {
        struct read_rec *x = &c.reads[i];
        struct producer_log *p = x->prod >= 0 ? &c.prods[x->prod] : NULL;
        if (!p || x->seq < 0 || (p->sent >= 0 && x->seq >= p->sent) || (p->sent < 0 && x->seq >= p->cap)) {
            EXAMPLE(r->phantoms, "phantom: partition %d offset %" PRId64 " holds a record never sent\n", x->part,
                    x->off);
            x->prod = -1;
            continue;
        }
        if (x->bad)
            EXAMPLE(r->bad_values, "bad value: partition %d offset %" PRId64 " (%s-%" PRId64 ")\n", x->part, x->off,
                    p->name, x->seq);
        if (grow(p, x->seq) < 0)
            goto done;
        if (p->acked_part[x->seq] == ABORTED)
            EXAMPLE(r->aborted_read,
                    "aborted read: %s-%" PRId64 " at partition %d offset %" PRId64
                    " belongs to an aborted transaction\n",
                    p->name, x->seq, x->part, x->off);
        if (p->positions[x->seq]++ == 1)
            EXAMPLE(r->duplicates, "duplicate: %s-%" PRId64 " read at partition %d offset %" PRId64 " and before\n",
                    p->name, x->seq, x->part, x->off);
        if (p->acked_part[x->seq] >= 0 && (p->acked_part[x->seq] != x->part || p->acked_off[x->seq] != x->off))
            r->moved++;
    }
    for (int i = 0; i < c.nprods; i++) {
        struct producer_log *p = &c.prods[i];
        if (p->sent > 0)
            r->sent += p->sent;
        for (int64_t s = 0; s < p->cap; s++) {
            r->aborted += p->acked_part[s] == ABORTED;
            if (p->acked_part[s] < 0)
                continue;
            r->acked++;
            if (p->positions[s] == 0)
                EXAMPLE(r->lost, "lost: %s-%" PRId64 " acknowledged at partition %d offset %" PRId64 ", never read\n",
                        p->name, s, p->acked_part[s], p->acked_off[s]);
        }
    }
    /* Order: within a producer and partition, seqs rise with offsets. */
    qsort(c.reads, (size_t)n, sizeof *c.reads, by_producer);
    for (int64_t i = 1; i < n; i++) {
        struct read_rec *a = &c.reads[i - 1], *b = &c.reads[i];
        if (a->prod >= 0 && a->prod == b->prod && a->part == b->part && b->seq < a->seq)
            EXAMPLE(r->out_of_order,
                    "out of order: %s-%" PRId64 " at partition %d offset %" PRId64 " after seq %" PRId64 " at %" PRId64
                    "\n",
                    c.prods[b->prod].name, b->seq, b->part, b->off, a->seq, a->off);
    }
    fprintf(out,
            "sent %" PRId64 " acked %" PRId64 " read %" PRId64 " redelivered %" PRId64 "\n"
            "lost %" PRId64 " duplicates %" PRId64 " out_of_order %" PRId64 " phantoms %" PRId64 " bad_values %" PRId64
            "\n"
            "rewritten_offsets %" PRId64 " moved %" PRId64 "\n"
            "aborted %" PRId64 " aborted_read %" PRId64 "\n",
            r->sent, r->acked, r->read_unique, r->redelivered, r->lost, r->duplicates, r->out_of_order, r->phantoms,
            r->bad_values, r->rewritten_offsets, r->moved, r->aborted, r->aborted_read);
    rc = (r->lost || r->duplicates || r->out_of_order || r->phantoms || r->bad_values || r->aborted_read) ? 1 : 0;
    fprintf(out, "verdict %s\n", rc ? "FAIL" : "ok");
done:
    for (int i = 0; i < c.nprods; i++) {
        free(c.prods[i].acked_part);
        free(c.prods[i].acked_off);
        free(c.prods[i].positions);
    }
    free(c.prods);
    free(c.reads);
    return rc;
}
