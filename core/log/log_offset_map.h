/* The log cleaner's dedupe map: record key -> greatest offset seen, stored
 * as a 128-bit hash of the key (two independent 64-bit hashes) and the
 * offset, 24 bytes per slot, open addressing with linear probing.
 *
 * Memory is bounded: the table grows by doubling up to max_bytes and is
 * "full" once it holds load_factor of its largest size; the cleaner then
 * stops reading dirty segments (Kafka's log.cleaner.dedupe.buffer.size and
 * log.cleaner.io.buffer.load.factor).
 *
 * Thread-safety: none; one cleaner pass owns a map. */
#ifndef CAIRN_LOG_LOG_OFFSET_MAP_H
#define CAIRN_LOG_LOG_OFFSET_MAP_H
#include <stddef.h>
#include <stdint.h>

#define LOG_OFFSET_MAP_SLOT_BYTES 24

struct log_offset_map_slot {
    uint64_t hash_hi;
    uint64_t hash_lo;
    int64_t offset; /* -1: empty slot */
};

struct log_offset_map {
    struct log_offset_map_slot *slots;
    size_t cap;     /* a power of two */
    size_t max_cap; /* largest power of two that fits max_bytes */
    size_t count;
    double load_factor;
};

/* max_bytes below a few slots is raised to a minimum table; load_factor
 * outside (0, 0.95] becomes 0.9. Returns 0 or ENOMEM. */
int log_offset_map_init(struct log_offset_map *m, size_t max_bytes, double load_factor);
void log_offset_map_free(struct log_offset_map *m);
/* Record offset for key (keeps the greater of the old and new offsets).
 * Returns 0, 1 when the map is full (nothing stored) or ENOMEM. */
int log_offset_map_put(struct log_offset_map *m, const uint8_t *key, size_t key_len, int64_t offset);
/* Greatest offset stored for key, or -1. */
int64_t log_offset_map_get(const struct log_offset_map *m, const uint8_t *key, size_t key_len);
/* Slots the map may fill before put reports it full. */
size_t log_offset_map_capacity(const struct log_offset_map *m);

#endif
