/* Hashing for in-memory tables: FNV-1a to fold bytes, a 64-bit finaliser
 * (splitmix64's) so the low bits index well. Not cryptographic: tables
 * that hold client-chosen keys start from a random seed.
 *
 * Thread-safety: pure functions. */
#ifndef CAIRN_UTIL_HASH_H
#define CAIRN_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV_OFFSET 14695981039346656037ull

static inline uint64_t hash_fold_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static inline uint64_t hash_finish(uint64_t h)
{
    h ^= h >> 30;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    h *= 0x94d049bb133111ebull;
    h ^= h >> 31;
    return h;
}

#endif
