/* A string-keyed index of pointers to structs whose key is a char * field
 * (group id, member id, group instance id): open addressing with linear
 * probing and backward-shift deletion, grown to keep the load under 1/2.
 * The hash starts from a per-coordinator random seed, so ids a client
 * picks cannot pile into one probe run.
 *
 * Thread-safety: none of its own; its owner's lock guards it. */
#ifndef CAIRN_GROUP_GROUP_INDEX_H
#define CAIRN_GROUP_GROUP_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct group_index {
    void **slots;     /* NULL: empty */
    uint64_t *hashes; /* of the key in the same slot */
    size_t cap;       /* 0 or a power of two */
    size_t count;
    size_t key_offset; /* offsetof the char * key in the pointed struct */
    uint64_t seed;
};

void group_index_init(struct group_index *ix, size_t key_offset, uint64_t seed);
void group_index_free(struct group_index *ix);
/* The entry whose key equals key, or NULL. */
void *group_index_find(const struct group_index *ix, const char *key);
/* Adds p, whose key must not be in the index yet (and not NULL). Returns
 * 0, or -1 when out of memory (the index is unchanged). */
int group_index_put(struct group_index *ix, void *p);
/* Removes p (found by its key and address); nothing when absent. */
void group_index_del(struct group_index *ix, const void *p);
/* Removes p filed under key, which p no longer holds (a renamed entry is
 * put under its new key first, then this). */
void group_index_del_at_key(struct group_index *ix, const void *p, const char *key);
/* A random seed for the indexes of one coordinator. */
uint64_t group_index_random_seed(void);

#endif
