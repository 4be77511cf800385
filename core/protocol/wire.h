/* Kafka wire primitives: a bounds-checked reader over a byte buffer, a
 * growable writer that can splice file regions (for sendfile), and a
 * per-request arena for decoded arrays.
 *
 * Thread-safety: none of these objects is shared. A reader, writer or arena
 * belongs to the one thread that is decoding or encoding a message. */
#ifndef CAIRN_PROTOCOL_WIRE_H
#define CAIRN_PROTOCOL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A string inside a message. Not NUL-terminated; len -1 means null. */
struct kafka_str {
    const char *data;
    int32_t len;
};

/* Opaque bytes inside a message; len -1 means null. */
struct kafka_bytes {
    const uint8_t *data;
    int32_t len;
};

struct kafka_uuid {
    uint8_t bytes[16];
};

static inline bool kafka_uuid_is_zero(struct kafka_uuid u)
{
    for (int i = 0; i < 16; i++)
        if (u.bytes[i])
            return false;
    return true;
}

/* A records field: either bytes in memory (data) or a region of a file
 * (file_fd >= 0) that the network layer sends with sendfile(). */
struct kafka_records {
    const uint8_t *data;
    int32_t len; /* -1 = null */
    int file_fd; /* -1 = in memory */
    int64_t file_pos;
};

/* ---- reader ---- */

/* Reads from a caller-owned buffer. On underflow or malformed input a read
 * sets failed and error and returns a zero value; later reads then return
 * zero values too, so callers may check failed once after a group. */
struct kafka_reader {
    const uint8_t *data;
    size_t len;
    size_t pos;
    /* Bytes at the end that enclosing arrays still need for their later
     * elements; an array count must fit in what lies before them. */
    size_t reserved;
    int failed;
    char error[128];
};

void kafka_reader_init(struct kafka_reader *r, const void *data, size_t len);
size_t kafka_reader_remaining(const struct kafka_reader *r);
/* Marks the reader failed with a formatted message (first failure wins). */
void kafka_reader_fail(struct kafka_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefixes the current error with a field name, so the message names the
 * path to the field that failed ("topics.partitions.records: ..."). Returns -1. */
int kafka_reader_field_error(struct kafka_reader *r, const char *field);
/* Copies the error of a sub-reader (used for a tagged field) into r, then
 * prefixes the field name as kafka_reader_field_error does. Returns -1. */
int kafka_reader_adopt_error(struct kafka_reader *r, const struct kafka_reader *sub, const char *field);

int8_t kafka_read_int8(struct kafka_reader *r);
int16_t kafka_read_int16(struct kafka_reader *r);
int32_t kafka_read_int32(struct kafka_reader *r);
int64_t kafka_read_int64(struct kafka_reader *r);
uint16_t kafka_read_uint16(struct kafka_reader *r);
uint32_t kafka_read_uint32(struct kafka_reader *r);
double kafka_read_float64(struct kafka_reader *r);
bool kafka_read_bool(struct kafka_reader *r);
struct kafka_uuid kafka_read_uuid(struct kafka_reader *r);
/* Zigzag-encoded signed varints. */
int32_t kafka_read_varint(struct kafka_reader *r);
int64_t kafka_read_varlong(struct kafka_reader *r);
uint32_t kafka_read_uvarint(struct kafka_reader *r);
uint64_t kafka_read_uvarlong(struct kafka_reader *r);

/* Strings point into the reader's buffer. The non-nullable variants fail on
 * a null length. */
struct kafka_str kafka_read_string(struct kafka_reader *r);
struct kafka_str kafka_read_nullable_string(struct kafka_reader *r);
struct kafka_str kafka_read_compact_string(struct kafka_reader *r);
struct kafka_str kafka_read_compact_nullable_string(struct kafka_reader *r);
struct kafka_bytes kafka_read_bytes(struct kafka_reader *r);
struct kafka_bytes kafka_read_nullable_bytes(struct kafka_reader *r);
struct kafka_bytes kafka_read_compact_bytes(struct kafka_reader *r);
struct kafka_bytes kafka_read_compact_nullable_bytes(struct kafka_reader *r);
/* Records are always nullable on the wire. */
struct kafka_records kafka_read_records(struct kafka_reader *r);
struct kafka_records kafka_read_compact_records(struct kafka_reader *r);

/* Array element count, or -1 for a null array. Fails when the count exceeds
 * (remaining - reserved) / min_element_size, so a hostile count can never
 * drive a large allocation (min_element_size 0 is treated as 1). */
int32_t kafka_read_array_len(struct kafka_reader *r, size_t min_element_size);
int32_t kafka_read_compact_array_len(struct kafka_reader *r, size_t min_element_size);

/* Skips a tagged-field section (count, then tag/size/bytes triples). */
void kafka_reader_skip_tagged_fields(struct kafka_reader *r);
/* Skips n bytes. */
void kafka_reader_skip(struct kafka_reader *r, size_t n);

/* ---- arena ---- */

struct kafka_arena_block;

/* Bump allocator in chunks; everything is freed at once. Owned by the
 * thread handling one request. */
struct kafka_arena {
    struct kafka_arena_block *head;
    size_t used_total;  /* bytes handed out (rounded to 16) */
    size_t block_total; /* bytes malloc'd for blocks, headers included */
};

void kafka_arena_init(struct kafka_arena *a);
/* Zeroed, 16-byte aligned memory; NULL on failure or size overflow. */
void *kafka_arena_alloc(struct kafka_arena *a, size_t size);
/* Copies a C string into the arena; a NULL input gives a null string. */
struct kafka_str kafka_arena_strdup(struct kafka_arena *a, const char *s);
void kafka_arena_free(struct kafka_arena *a);
/* Bytes the arena holds from malloc (block headers included). Nothing is
 * freed before kafka_arena_free, so this is also its high-water mark; it
 * stays under 2 * used_total + 64 KiB + one block header. */
size_t kafka_arena_high_water(const struct kafka_arena *a);

/* ---- writer ---- */

/* A file region that belongs at buffer offset `at` in the output. */
struct kafka_splice {
    size_t at;
    int fd;
    int64_t pos;
    int32_t len;
};

/* Growable output buffer. Owns buf and the fds of its splices. Owned by one
 * thread at a time. failed is set (and stays set) on allocation failure. */
struct kafka_writer {
    uint8_t *buf;
    size_t len, cap;
    int failed;
    struct kafka_splice *splices;
    size_t splice_count, splice_cap;
};

int kafka_writer_init(struct kafka_writer *w, size_t initial_cap);
void kafka_writer_free(struct kafka_writer *w);
/* Appends n zero bytes and returns their offset (for a size prefix patched later). */
size_t kafka_writer_reserve(struct kafka_writer *w, size_t n);
void kafka_writer_patch_int32(struct kafka_writer *w, size_t offset, int32_t v);
/* Buffer bytes plus spliced file bytes. */
int64_t kafka_writer_total_len(const struct kafka_writer *w);
/* Reads every splice into the buffer (for TLS, or tests); closes the fds.
 * Returns 0, or -1 on read error or allocation failure. */
int kafka_writer_flatten(struct kafka_writer *w);

void kafka_write_raw(struct kafka_writer *w, const void *data, size_t n);
void kafka_write_int8(struct kafka_writer *w, int8_t v);
void kafka_write_int16(struct kafka_writer *w, int16_t v);
void kafka_write_int32(struct kafka_writer *w, int32_t v);
void kafka_write_int64(struct kafka_writer *w, int64_t v);
void kafka_write_uint16(struct kafka_writer *w, uint16_t v);
void kafka_write_uint32(struct kafka_writer *w, uint32_t v);
void kafka_write_float64(struct kafka_writer *w, double v);
void kafka_write_bool(struct kafka_writer *w, bool v);
void kafka_write_uuid(struct kafka_writer *w, struct kafka_uuid v);
void kafka_write_varint(struct kafka_writer *w, int32_t v);
void kafka_write_varlong(struct kafka_writer *w, int64_t v);
void kafka_write_uvarint(struct kafka_writer *w, uint32_t v);
void kafka_write_uvarlong(struct kafka_writer *w, uint64_t v);
/* A len -1 value is written as null; callers check nullability first. */
void kafka_write_string(struct kafka_writer *w, struct kafka_str s);
void kafka_write_compact_string(struct kafka_writer *w, struct kafka_str s);
void kafka_write_bytes(struct kafka_writer *w, struct kafka_bytes b);
void kafka_write_compact_bytes(struct kafka_writer *w, struct kafka_bytes b);
/* A file-backed records value becomes a splice; the writer takes the fd. */
void kafka_write_records(struct kafka_writer *w, const struct kafka_records *rec);
void kafka_write_compact_records(struct kafka_writer *w, const struct kafka_records *rec);
/* count -1 writes a null array. */
void kafka_write_array_len(struct kafka_writer *w, int32_t count);
void kafka_write_compact_array_len(struct kafka_writer *w, int32_t count);

/* Encoded sizes. */
size_t kafka_uvarint_size(uint32_t v);
size_t kafka_uvarlong_size(uint64_t v);
size_t kafka_varint_size(int32_t v);
size_t kafka_varlong_size(int64_t v);

/* ---- helpers ---- */

struct kafka_records kafka_records_from_memory(const void *data, int32_t len);
struct kafka_records kafka_records_from_file(int fd, int64_t pos, int32_t len);
struct kafka_str kafka_str_from_cstr(const char *s);
bool kafka_str_eq_cstr(struct kafka_str s, const char *cstr);
/* Copies into buf (truncating) with a NUL; a null string gives "". Returns buf. */
char *kafka_str_to_cstr(struct kafka_str s, char *buf, size_t buflen);

#endif
