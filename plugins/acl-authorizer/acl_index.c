/* Hash index of ACL bindings by resource pattern; see acl_index.h. */
#include "acl_index.h"

#include <stdlib.h>
#include <string.h>

#define TYPE_SLOTS 8           /* CAIRN_RESOURCE_* values 0..7 */
#define FILTER_BITS (1u << 20) /* 128 KiB: stays in cache */

/* One binding on a resource pattern. */
struct acl_entry {
    uint8_t id[16];
    uint64_t principal_hash; /* compared before the string: most entries name someone else */
    char *principal;
    char *host;
    int32_t operation;
    int32_t permission;
};

/* One resource pattern with its bindings; a hash chain node. */
struct acl_resource {
    uint64_t hash;
    int32_t type;
    int32_t pattern;
    size_t name_len;
    struct acl_entry *entries;
    int32_t count, cap;
    struct acl_resource *next;
    char name[]; /* inline: one cache miss fewer per lookup */
};

struct acl_index {
    struct acl_resource **buckets;
    size_t mask;
    size_t resources;
    size_t bindings;
    uint64_t *filter; /* bits of every pattern's hash; never cleared but by clear */
    /* Per resource type: how many PREFIXED patterns have each name length. */
    uint32_t *prefix_lengths[TYPE_SLOTS];
    size_t prefix_cap[TYPE_SLOTS];
};

#define FNV_OFFSET 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static uint64_t fnv_step(uint64_t h, unsigned char c)
{
    return (h ^ c) * FNV_PRIME;
}

/* The key's hash: the name's running FNV state mixed with type and pattern. */
static uint64_t key_hash(uint64_t name_state, int32_t type, int32_t pattern)
{
    uint64_t h = name_state ^ ((uint64_t)(uint32_t)type << 40) ^ ((uint64_t)(uint32_t)pattern << 48);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static uint64_t name_state(const char *name, size_t len)
{
    uint64_t h = FNV_OFFSET;
    for (size_t i = 0; i < len; i++)
        h = fnv_step(h, (unsigned char)name[i]);
    return h;
}

static bool filter_has(const struct acl_index *idx, uint64_t h)
{
    uint32_t bit = (uint32_t)(h >> 20) & (FILTER_BITS - 1);
    return (idx->filter[bit / 64] >> (bit % 64)) & 1u;
}

static void filter_set(struct acl_index *idx, uint64_t h)
{
    uint32_t bit = (uint32_t)(h >> 20) & (FILTER_BITS - 1);
    idx->filter[bit / 64] |= 1ull << (bit % 64);
}

struct acl_index *acl_index_new(void)
{
    struct acl_index *idx = calloc(1, sizeof(*idx));
    if (!idx)
        return NULL;
    idx->mask = 1023;
    idx->buckets = calloc(idx->mask + 1, sizeof(*idx->buckets));
    idx->filter = calloc(FILTER_BITS / 64, sizeof(*idx->filter));
    if (!idx->buckets || !idx->filter) {
        acl_index_free(idx);
        return NULL;
    }
    return idx;
}

static void resource_free(struct acl_resource *r)
{
    for (int32_t i = 0; i < r->count; i++) {
        free(r->entries[i].principal);
        free(r->entries[i].host);
    }
    free(r->entries);
    free(r);
}

void acl_index_clear(struct acl_index *idx)
{
    for (size_t i = 0; i <= idx->mask; i++) {
        struct acl_resource *r = idx->buckets[i];
        while (r) {
            struct acl_resource *next = r->next;
            resource_free(r);
            r = next;
        }
        idx->buckets[i] = NULL;
    }
    for (int t = 0; t < TYPE_SLOTS; t++)
        if (idx->prefix_lengths[t])
            memset(idx->prefix_lengths[t], 0, idx->prefix_cap[t] * sizeof(uint32_t));
    memset(idx->filter, 0, FILTER_BITS / 8);
    idx->resources = 0;
    idx->bindings = 0;
}

void acl_index_free(struct acl_index *idx)
{
    if (!idx)
        return;
    if (idx->buckets)
        acl_index_clear(idx);
    for (int t = 0; t < TYPE_SLOTS; t++)
        free(idx->prefix_lengths[t]);
    free(idx->buckets);
    free(idx->filter);
    free(idx);
}

size_t acl_index_count(const struct acl_index *idx)
{
    return idx->bindings;
}

static struct acl_resource *find(const struct acl_index *idx, uint64_t h, int32_t type, int32_t pattern,
                                 const char *name, size_t len)
{
    for (struct acl_resource *r = idx->buckets[h & idx->mask]; r; r = r->next)
        if (r->hash == h && r->type == type && r->pattern == pattern && r->name_len == len &&
            memcmp(r->name, name, len) == 0)
            return r;
    return NULL;
}

static void grow_table(struct acl_index *idx)
{
    size_t mask = idx->mask * 2 + 1;
    struct acl_resource **buckets = calloc(mask + 1, sizeof(*buckets));
    if (!buckets)
        return; /* longer chains, still correct */
    for (size_t i = 0; i <= idx->mask; i++) {
        struct acl_resource *r = idx->buckets[i];
        while (r) {
            struct acl_resource *next = r->next;
            r->next = buckets[r->hash & mask];
            buckets[r->hash & mask] = r;
            r = next;
        }
    }
    free(idx->buckets);
    idx->buckets = buckets;
    idx->mask = mask;
}

static int count_prefix_length(struct acl_index *idx, int32_t type, size_t len, int delta)
{
    if (len >= idx->prefix_cap[type]) {
        if (delta < 0)
            return 0;
        size_t cap = len * 2 + 16;
        uint32_t *grown = realloc(idx->prefix_lengths[type], cap * sizeof(*grown));
        if (!grown)
            return -1;
        memset(grown + idx->prefix_cap[type], 0, (cap - idx->prefix_cap[type]) * sizeof(*grown));
        idx->prefix_lengths[type] = grown;
        idx->prefix_cap[type] = cap;
    }
    idx->prefix_lengths[type][len] += (uint32_t)delta;
    return 0;
}

static struct acl_resource *resource_add(struct acl_index *idx, uint64_t h, const struct cairn_acl_binding *b,
                                         size_t len)
{
    struct acl_resource *r = calloc(1, sizeof(*r) + len + 1);
    if (!r)
        return NULL;
    memcpy(r->name, b->resource_name, len + 1);
    if (b->pattern_type == CAIRN_PATTERN_PREFIXED && count_prefix_length(idx, b->resource_type, len, 1) != 0) {
        free(r);
        return NULL;
    }
    filter_set(idx, h);
    r->hash = h;
    r->type = b->resource_type;
    r->pattern = b->pattern_type;
    r->name_len = len;
    r->next = idx->buckets[h & idx->mask];
    idx->buckets[h & idx->mask] = r;
    if (++idx->resources > idx->mask + 1)
        grow_table(idx);
    return r;
}

static bool usable(const struct cairn_acl_binding *b)
{
    return b && b->resource_type > CAIRN_RESOURCE_ANY && b->resource_type < TYPE_SLOTS && b->resource_name &&
           (b->pattern_type == CAIRN_PATTERN_LITERAL || b->pattern_type == CAIRN_PATTERN_PREFIXED);
}

int acl_index_add(struct acl_index *idx, const struct cairn_acl_binding *b)
{
    if (!usable(b) || !b->principal || !b->host)
        return -1;
    size_t len = strlen(b->resource_name);
    uint64_t h = key_hash(name_state(b->resource_name, len), b->resource_type, b->pattern_type);
    struct acl_resource *r = find(idx, h, b->resource_type, b->pattern_type, b->resource_name, len);
    if (r) {
        for (int32_t i = 0; i < r->count; i++)
            if (memcmp(r->entries[i].id, b->id, sizeof(b->id)) == 0)
                return 0;
    } else if (!(r = resource_add(idx, h, b, len))) {
        return -1;
    }
    if (r->count == r->cap) {
        int32_t cap = r->cap ? r->cap * 2 : 2;
        struct acl_entry *grown = realloc(r->entries, (size_t)cap * sizeof(*grown));
        if (!grown)
            return -1;
        r->entries = grown;
        r->cap = cap;
    }
    struct acl_entry *e = &r->entries[r->count];
    memcpy(e->id, b->id, sizeof(e->id));
    e->principal_hash = name_state(b->principal, strlen(b->principal));
    e->principal = strdup(b->principal);
    e->host = strdup(b->host);
    if (!e->principal || !e->host) {
        free(e->principal);
        free(e->host);
        return -1;
    }
    e->operation = b->operation;
    e->permission = b->permission_type;
    r->count++;
    idx->bindings++;
    return 0;
}

void acl_index_remove(struct acl_index *idx, const struct cairn_acl_binding *b)
{
    if (!usable(b))
        return;
    size_t len = strlen(b->resource_name);
    uint64_t h = key_hash(name_state(b->resource_name, len), b->resource_type, b->pattern_type);
    struct acl_resource **link = &idx->buckets[h & idx->mask];
    while (*link && !((*link)->hash == h && (*link)->type == b->resource_type && (*link)->pattern == b->pattern_type &&
                      (*link)->name_len == len && memcmp((*link)->name, b->resource_name, len) == 0))
        link = &(*link)->next;
    struct acl_resource *r = *link;
    if (!r)
        return;
    for (int32_t i = 0; i < r->count; i++) {
        if (memcmp(r->entries[i].id, b->id, sizeof(b->id)) != 0)
            continue;
        free(r->entries[i].principal);
        free(r->entries[i].host);
        r->entries[i] = r->entries[--r->count];
        idx->bindings--;
        break;
    }
    if (r->count > 0)
        return;
    *link = r->next;
    if (r->pattern == CAIRN_PATTERN_PREFIXED)
        count_prefix_length(idx, r->type, len, -1);
    idx->resources--;
    resource_free(r);
}

/* Whether an ALLOW binding of `granted` covers `wanted`. */
static bool allow_covers(int32_t granted, int32_t wanted)
{
    if (granted == CAIRN_OP_ALL || granted == wanted)
        return true;
    if (wanted == CAIRN_OP_DESCRIBE)
        return granted == CAIRN_OP_READ || granted == CAIRN_OP_WRITE || granted == CAIRN_OP_DELETE ||
               granted == CAIRN_OP_ALTER;
    return wanted == CAIRN_OP_DESCRIBE_CONFIGS && granted == CAIRN_OP_ALTER_CONFIGS;
}

enum verdict { NO_ACL, NO_MATCH, ALLOW, DENY };

/* The principal asked about, with the hashes its entries are matched by. */
struct who {
    const char *principal;
    uint64_t hash;
    uint64_t wildcard_hash; /* of "User:*" */
};

/* Folds one resource's bindings into *v (DENY ends the search). */
static void visit(const struct acl_resource *r, const struct who *who, const char *host, int32_t op, enum verdict *v)
{
    if (!r)
        return;
    if (*v == NO_ACL && r->count > 0)
        *v = NO_MATCH;
    for (int32_t i = 0; i < r->count; i++) {
        const struct acl_entry *e = &r->entries[i];
        bool named = e->principal_hash == who->hash && strcmp(e->principal, who->principal) == 0;
        if (!named && !(e->principal_hash == who->wildcard_hash && strcmp(e->principal, "User:*") == 0))
            continue;
        if (strcmp(e->host, "*") != 0 && strcmp(e->host, host) != 0)
            continue;
        if (e->permission == CAIRN_PERMISSION_DENY) {
            if (e->operation == CAIRN_OP_ALL || e->operation == op) {
                *v = DENY;
                return;
            }
        } else if (e->permission == CAIRN_PERMISSION_ALLOW && allow_covers(e->operation, op)) {
            *v = ALLOW;
        }
    }
}

bool acl_index_allows(const struct acl_index *idx, const char *principal, const char *host, int32_t operation,
                      int32_t type, const char *name, bool allow_if_none)
{
    if (!principal || !name || type <= CAIRN_RESOURCE_ANY || type >= TYPE_SLOTS)
        return false;
    if (!host)
        host = "";
    struct who who = {principal, name_state(principal, strlen(principal)), name_state("User:*", 6)};
    enum verdict v = NO_ACL;
    uint64_t state = FNV_OFFSET;
    size_t len = 0;
    const uint32_t *lengths = idx->prefix_lengths[type];
    size_t cap = idx->prefix_cap[type];
    /* PREFIXED patterns: every prefix of the name (the whole name included). */
    for (const char *c = name; *c && v != DENY; c++) {
        state = fnv_step(state, (unsigned char)*c);
        len++;
        if (len >= cap || lengths[len] == 0)
            continue;
        uint64_t h = key_hash(state, type, CAIRN_PATTERN_PREFIXED);
        if (filter_has(idx, h))
            visit(find(idx, h, type, CAIRN_PATTERN_PREFIXED, name, len), &who, host, operation, &v);
    }
    uint64_t h = key_hash(state, type, CAIRN_PATTERN_LITERAL);
    if (v != DENY && filter_has(idx, h))
        visit(find(idx, h, type, CAIRN_PATTERN_LITERAL, name, len), &who, host, operation, &v);
    h = key_hash(fnv_step(FNV_OFFSET, '*'), type, CAIRN_PATTERN_LITERAL);
    if (v != DENY && !(len == 1 && name[0] == '*') && filter_has(idx, h))
        visit(find(idx, h, type, CAIRN_PATTERN_LITERAL, "*", 1), &who, host, operation, &v);
    if (v == NO_ACL)
        return allow_if_none;
    return v == ALLOW;
}
