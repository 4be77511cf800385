/* The wire primitives' arena (what decoded arrays live in) and the
 * kafka_str / kafka_records helpers; the reader is in wire_reader.c, the
 * writer in wire_writer.c. */
#include "protocol/wire.h"

#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- arena */

#define ARENA_MIN_BLOCK 4096u
#define ARENA_MAX_BLOCK 65536u

struct kafka_arena_block {
    struct kafka_arena_block *next;
    size_t size;
    size_t used;
    /* Keeps data 16-byte aligned regardless of the header fields above. */
    _Alignas(16) unsigned char data[];
};

void kafka_arena_init(struct kafka_arena *a)
{
    a->head = NULL;
    a->used_total = 0;
    a->block_total = 0;
}

static struct kafka_arena_block *arena_new_block(struct kafka_arena *a, size_t size)
{
    if (size > SIZE_MAX - sizeof(struct kafka_arena_block))
        return NULL;
    struct kafka_arena_block *b = malloc(sizeof(*b) + size);
    if (!b)
        return NULL;
    b->size = size;
    b->used = 0;
    a->block_total += sizeof(*b) + size;
    return b;
}

void *kafka_arena_alloc(struct kafka_arena *a, size_t size)
{
    if (size > SIZE_MAX - 32)
        return NULL;
    size_t need = (size + 15) & ~(size_t)15;
    if (need == 0)
        need = 16;
    struct kafka_arena_block *b = a->head;
    if (!b || b->size - b->used < need) {
        /* Blocks grow with use. A request of a quarter block or more gets a
         * block of its own behind the head, which keeps its room; a smaller
         * one starts a new head, so a retired head wastes under a quarter of
         * itself. Block bytes thus stay under 2 * used + one block. */
        size_t block = a->used_total < ARENA_MAX_BLOCK ? ARENA_MIN_BLOCK : ARENA_MAX_BLOCK;
        if (need >= block / 4) {
            struct kafka_arena_block *own = arena_new_block(a, need);
            if (!own)
                return NULL;
            if (b) {
                own->next = b->next;
                b->next = own;
            } else {
                own->next = NULL;
                a->head = own;
            }
            b = own;
        } else {
            struct kafka_arena_block *nb = arena_new_block(a, block);
            if (!nb)
                return NULL;
            nb->next = b;
            a->head = nb;
            b = nb;
        }
    }
    void *p = b->data + b->used;
    b->used += need;
    a->used_total += need;
    memset(p, 0, size);
    return p;
}

size_t kafka_arena_high_water(const struct kafka_arena *a)
{
    return a->block_total;
}

struct kafka_str kafka_arena_strdup(struct kafka_arena *a, const char *s)
{
    struct kafka_str out = {NULL, -1};
    if (!s)
        return out;
    size_t n = strlen(s);
    if (n > INT32_MAX - 1)
        return out;
    char *p = kafka_arena_alloc(a, n + 1);
    if (!p)
        return out;
    memcpy(p, s, n);
    out.data = p;
    out.len = (int32_t)n;
    return out;
}

void kafka_arena_free(struct kafka_arena *a)
{
    struct kafka_arena_block *b = a->head;
    while (b) {
        struct kafka_arena_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
    a->used_total = 0;
    a->block_total = 0;
}

/* --------------------------------------------------------------- helpers */

struct kafka_records kafka_records_from_memory(const void *data, int32_t len)
{
    struct kafka_records r = {data, len < 0 ? -1 : len, -1, 0};
    return r;
}

struct kafka_records kafka_records_from_file(int fd, int64_t pos, int32_t len)
{
    struct kafka_records r = {NULL, len < 0 ? -1 : len, fd, pos};
    return r;
}

struct kafka_str kafka_str_from_cstr(const char *s)
{
    struct kafka_str out = {s, -1};
    if (s) {
        size_t n = strlen(s);
        out.len = n > INT32_MAX ? INT32_MAX : (int32_t)n;
    }
    return out;
}

bool kafka_str_eq_cstr(struct kafka_str s, const char *cstr)
{
    if (s.len < 0 || !cstr)
        return s.len < 0 && !cstr;
    size_t n = strlen(cstr);
    return n == (size_t)s.len && (n == 0 || memcmp(s.data, cstr, n) == 0);
}

char *kafka_str_to_cstr(struct kafka_str s, char *buf, size_t buflen)
{
    if (buflen == 0)
        return buf;
    size_t n = s.len > 0 ? (size_t)s.len : 0;
    if (n > buflen - 1)
        n = buflen - 1;
    if (n)
        memcpy(buf, s.data, n);
    buf[n] = '\0';
    return buf;
}
