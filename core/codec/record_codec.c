/* The four codecs over whole buffers. Decompression grows its output
 * geometrically up to the caller's limit, so a small input claiming a huge
 * size costs nothing until the bytes really come out. The zstd decoder is
 * kept per thread (a pthread key); nothing else outlives a call. */
#include "codec/record_codec.h"

#include <limits.h>
#include <pthread.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "protocol/record_batch.h"

#define CODEC_INITIAL_OUT (64 * 1024)
/* snappy-java's block size; its readers accept any. */
#define SNAPPY_XERIAL_CHUNK (32 * 1024)
/* A snappy element of 3 bytes copies at most 64: nothing legitimate
 * expands by more than this. */
#define SNAPPY_MAX_RATIO 22
/* Bounds the window a zstd frame may ask the decoder to allocate. */
#define ZSTD_WINDOW_LOG_MAX 25

static const uint8_t xerial_magic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* Output under construction, owned by the one call that builds it; limit
 * is max_out + 1 so that data exactly max_out long is told apart from data
 * that would go further. */
struct codec_out {
    uint8_t *buf;
    size_t len;
    size_t cap;
    size_t limit;
};

/* Make room for at least `need` more bytes (1 when the codec just wants
 * some). Returns 0, or -1 when the limit is reached or malloc fails. */
static int out_reserve(struct codec_out *o, size_t need)
{
    if (o->cap - o->len >= need && o->cap > o->len)
        return 0;
    if (need > o->limit - o->len || o->len == o->limit)
        return -1;
    size_t cap = o->cap ? o->cap : CODEC_INITIAL_OUT;
    while (cap - o->len < need && cap < o->limit)
        cap = cap > o->limit / 2 ? o->limit : cap * 2;
    if (cap > o->limit)
        cap = o->limit;
    if (cap == o->cap)
        cap = o->limit;
    uint8_t *grown = realloc(o->buf, cap);
    if (!grown)
        return -1;
    o->buf = grown;
    o->cap = cap;
    return 0;
}

static uint32_t get_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static int gzip_decompress(const uint8_t *in, size_t in_len, struct codec_out *o, char *err, size_t errlen)
{
    if (in_len > UINT_MAX)
        return fail(err, errlen, "gzip: input too large");
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, 15 + 16) != Z_OK)
        return fail(err, errlen, "gzip: cannot initialise zlib");
    s.next_in = (Bytef *)in;
    s.avail_in = (uInt)in_len;
    int rc = 0;
    for (;;) {
        if (out_reserve(o, 1) != 0) {
            rc = fail(err, errlen, "gzip: decompressed data exceeds %zu bytes", o->limit - 1);
            break;
        }
        size_t room = o->cap - o->len;
        s.next_out = o->buf + o->len;
        s.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        uInt before = s.avail_out;
        int zr = inflate(&s, Z_NO_FLUSH);
        o->len += before - s.avail_out;
        if (zr == Z_STREAM_END) {
            if (s.avail_in == 0)
                break;
            inflateReset(&s); /* another gzip member follows */
            continue;
        }
        if (zr == Z_BUF_ERROR) {
            rc = fail(err, errlen, "gzip: truncated data");
            break;
        }
        if (zr != Z_OK) {
            rc = fail(err, errlen, "gzip: %s", s.msg ? s.msg : "corrupt data");
            break;
        }
    }
    inflateEnd(&s);
    return rc;
}

static int snappy_block(const uint8_t *in, size_t n, struct codec_out *o, char *err, size_t errlen)
{
    size_t ulen;
    if (snappy_uncompressed_length((const char *)in, n, &ulen) != SNAPPY_OK)
        return fail(err, errlen, "snappy: corrupt block header");
    if (ulen / SNAPPY_MAX_RATIO > n + 1)
        return fail(err, errlen, "snappy: block of %zu bytes claims %zu", n, ulen);
    if (ulen == 0)
        return 0;
    if (out_reserve(o, ulen) != 0)
        return fail(err, errlen, "snappy: decompressed data exceeds %zu bytes", o->limit - 1);
    size_t got = ulen;
    if (snappy_uncompress((const char *)in, n, (char *)o->buf + o->len, &got) != SNAPPY_OK || got != ulen)
        return fail(err, errlen, "snappy: corrupt block");
    o->len += got;
    return 0;
}

static int snappy_decompress(const uint8_t *in, size_t in_len, struct codec_out *o, char *err, size_t errlen)
{
    if (in_len < 16 || memcmp(in, xerial_magic, sizeof xerial_magic) != 0)
        return snappy_block(in, in_len, o, err, errlen);
    /* magic, version, compatible version, then length-prefixed blocks */
    size_t pos = 16;
    while (pos < in_len) {
        if (in_len - pos < 4)
            return fail(err, errlen, "snappy: truncated block length");
        uint32_t n = get_be32(in + pos);
        pos += 4;
        if (n > in_len - pos)
            return fail(err, errlen, "snappy: block of %u bytes overruns the data", n);
        if (snappy_block(in + pos, n, o, err, errlen) != 0)
            return -1;
        pos += n;
    }
    return 0;
}

static int lz4_decompress(const uint8_t *in, size_t in_len, struct codec_out *o, char *err, size_t errlen)
{
    LZ4F_dctx *d = NULL;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&d, LZ4F_VERSION)))
        return fail(err, errlen, "lz4: cannot create a decompression context");
    size_t pos = 0, hint = 1;
    int rc = 0;
    /* hint 0: a frame just ended; input left over starts another one. */
    while (pos < in_len || hint != 0) {
        if (out_reserve(o, 1) != 0) {
            rc = fail(err, errlen, "lz4: decompressed data exceeds %zu bytes", o->limit - 1);
            break;
        }
        size_t dst = o->cap - o->len, src = in_len - pos;
        hint = LZ4F_decompress(d, o->buf + o->len, &dst, in + pos, &src, NULL);
        if (LZ4F_isError(hint)) {
            rc = fail(err, errlen, "lz4: %s", LZ4F_getErrorName(hint));
            break;
        }
        pos += src;
        o->len += dst;
        if (src == 0 && dst == 0) {
            rc = fail(err, errlen, "lz4: truncated frame");
            break;
        }
    }
    LZ4F_freeDecompressionContext(d);
    return rc;
}

/* One zstd decoder per thread, kept: a fresh one allocates its window
 * buffer (megabytes, faulted in page by page) for every batch. */
static pthread_key_t zstd_key;
static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;
static bool zstd_key_ok;

static void zstd_key_free(void *d)
{
    ZSTD_freeDCtx(d);
}

static void zstd_key_init(void)
{
    zstd_key_ok = pthread_key_create(&zstd_key, zstd_key_free) == 0;
}

/* The thread's decoder, reset; NULL when none can be made. Not freed by
 * the caller. */
static ZSTD_DCtx *zstd_thread_dctx(void)
{
    pthread_once(&zstd_once, zstd_key_init);
    ZSTD_DCtx *d = zstd_key_ok ? pthread_getspecific(zstd_key) : NULL;
    if (d) {
        ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
        return d;
    }
    if (!(d = ZSTD_createDCtx()))
        return NULL;
    ZSTD_DCtx_setParameter(d, ZSTD_d_windowLogMax, ZSTD_WINDOW_LOG_MAX);
    if (!zstd_key_ok || pthread_setspecific(zstd_key, d) != 0) {
        ZSTD_freeDCtx(d);
        return NULL;
    }
    return d;
}

static int zstd_decompress(const uint8_t *in, size_t in_len, struct codec_out *o, char *err, size_t errlen)
{
    ZSTD_DCtx *d = zstd_thread_dctx();
    if (!d)
        return fail(err, errlen, "zstd: cannot create a decompression context");
    ZSTD_inBuffer ib = {in, in_len, 0};
    size_t ret = 1;
    int rc = 0;
    /* ret 0: a frame is complete and flushed. */
    while (ib.pos < ib.size || ret != 0) {
        if (out_reserve(o, 1) != 0) {
            rc = fail(err, errlen, "zstd: decompressed data exceeds %zu bytes", o->limit - 1);
            break;
        }
        ZSTD_outBuffer ob = {o->buf + o->len, o->cap - o->len, 0};
        size_t in_before = ib.pos;
        ret = ZSTD_decompressStream(d, &ob, &ib);
        if (ZSTD_isError(ret)) {
            rc = fail(err, errlen, "zstd: %s", ZSTD_getErrorName(ret));
            break;
        }
        o->len += ob.pos;
        if (ob.pos == 0 && ib.pos == in_before) {
            rc = fail(err, errlen, "zstd: truncated frame");
            break;
        }
    }
    return rc;
}

/* Appends the decompressed data to o (within its limit). */
static int decompress_to(int codec, const uint8_t *in, size_t in_len, struct codec_out *o, char *err, size_t errlen)
{
    switch (codec) {
    case RECORD_BATCH_COMPRESSION_GZIP:
        return gzip_decompress(in, in_len, o, err, errlen);
    case RECORD_BATCH_COMPRESSION_SNAPPY:
        return snappy_decompress(in, in_len, o, err, errlen);
    case RECORD_BATCH_COMPRESSION_LZ4:
        return lz4_decompress(in, in_len, o, err, errlen);
    case RECORD_BATCH_COMPRESSION_ZSTD:
        return zstd_decompress(in, in_len, o, err, errlen);
    default:
        return fail(err, errlen, "unknown compression codec %d", codec);
    }
}

int record_codec_decompress(int codec, const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len,
                            char *err, size_t errlen)
{
    *out = NULL;
    *out_len = 0;
    struct codec_out o = {.limit = max_out < SIZE_MAX ? max_out + 1 : SIZE_MAX};
    int rc = decompress_to(codec, in, in_len, &o, err, errlen);
    if (rc == 0 && o.len > max_out)
        rc = fail(err, errlen, "decompressed data exceeds %zu bytes", max_out);
    if (rc != 0) {
        free(o.buf);
        return -1;
    }
    if (!o.buf && !(o.buf = malloc(1)))
        return fail(err, errlen, "out of memory");
    *out = o.buf;
    *out_len = o.len;
    return 0;
}

/* ---- compression ---- */

static int gzip_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
    if (in_len > UINT_MAX / 2)
        return fail(err, errlen, "gzip: input too large");
    z_stream s;
    memset(&s, 0, sizeof s);
    if (deflateInit2(&s, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return fail(err, errlen, "gzip: cannot initialise zlib");
    uLong bound = deflateBound(&s, (uLong)in_len);
    uint8_t *buf = malloc(bound);
    if (!buf) {
        deflateEnd(&s);
        return fail(err, errlen, "out of memory");
    }
    s.next_in = (Bytef *)in;
    s.avail_in = (uInt)in_len;
    s.next_out = buf;
    s.avail_out = (uInt)bound;
    int zr = deflate(&s, Z_FINISH);
    size_t n = bound - s.avail_out;
    deflateEnd(&s);
    if (zr != Z_STREAM_END) {
        free(buf);
        return fail(err, errlen, "gzip: compression failed");
    }
    *out = buf;
    *out_len = n;
    return 0;
}

static int snappy_compress_xerial(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len, char *err,
                                  size_t errlen)
{
    size_t chunks = (in_len + SNAPPY_XERIAL_CHUNK - 1) / SNAPPY_XERIAL_CHUNK;
    size_t bound = 16 + chunks * (4 + snappy_max_compressed_length(SNAPPY_XERIAL_CHUNK));
    uint8_t *buf = malloc(bound);
    if (!buf)
        return fail(err, errlen, "out of memory");
    memcpy(buf, xerial_magic, sizeof xerial_magic);
    put_be32(buf + 8, 1);  /* version */
    put_be32(buf + 12, 1); /* oldest compatible version */
    size_t pos = 16;
    for (size_t at = 0; at < in_len; at += SNAPPY_XERIAL_CHUNK) {
        size_t n = in_len - at < SNAPPY_XERIAL_CHUNK ? in_len - at : SNAPPY_XERIAL_CHUNK;
        size_t clen = bound - pos - 4;
        if (snappy_compress((const char *)in + at, n, (char *)buf + pos + 4, &clen) != SNAPPY_OK) {
            free(buf);
            return fail(err, errlen, "snappy: compression failed");
        }
        put_be32(buf + pos, (uint32_t)clen);
        pos += 4 + clen;
    }
    *out = buf;
    *out_len = pos;
    return 0;
}

static int lz4_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
    LZ4F_preferences_t prefs;
    memset(&prefs, 0, sizeof prefs);
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    size_t bound = LZ4F_compressFrameBound(in_len, &prefs);
    uint8_t *buf = malloc(bound);
    if (!buf)
        return fail(err, errlen, "out of memory");
    size_t n = LZ4F_compressFrame(buf, bound, in, in_len, &prefs);
    if (LZ4F_isError(n)) {
        free(buf);
        return fail(err, errlen, "lz4: %s", LZ4F_getErrorName(n));
    }
    *out = buf;
    *out_len = n;
    return 0;
}

static int zstd_compress(const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len, char *err, size_t errlen)
{
    size_t bound = ZSTD_compressBound(in_len);
    uint8_t *buf = malloc(bound ? bound : 1);
    if (!buf)
        return fail(err, errlen, "out of memory");
    size_t n = ZSTD_compress(buf, bound, in, in_len, 3); /* Kafka's default level */
    if (ZSTD_isError(n)) {
        free(buf);
        return fail(err, errlen, "zstd: %s", ZSTD_getErrorName(n));
    }
    *out = buf;
    *out_len = n;
    return 0;
}

int record_codec_compress(int codec, const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len, char *err,
                          size_t errlen)
{
    *out = NULL;
    *out_len = 0;
    switch (codec) {
    case RECORD_BATCH_COMPRESSION_GZIP:
        return gzip_compress(in, in_len, out, out_len, err, errlen);
    case RECORD_BATCH_COMPRESSION_SNAPPY:
        return snappy_compress_xerial(in, in_len, out, out_len, err, errlen);
    case RECORD_BATCH_COMPRESSION_LZ4:
        return lz4_compress(in, in_len, out, out_len, err, errlen);
    case RECORD_BATCH_COMPRESSION_ZSTD:
        return zstd_compress(in, in_len, out, out_len, err, errlen);
    default:
        return fail(err, errlen, "unknown compression codec %d", codec);
    }
}

/* ---- whole batches ---- */

int record_codec_inflate_batch(const uint8_t *batch, size_t len, size_t max_records, uint8_t **out, size_t *out_len,
                               char *err, size_t errlen)
{
    struct record_batch_header h;
    *out = NULL;
    *out_len = 0;
    if (record_batch_parse_header(batch, len, &h) != 0 || h.batch_length < 0 || record_batch_total_size(&h) != len)
        return fail(err, errlen, "malformed batch header");
    uint8_t *records = NULL;
    size_t n = 0;
    if (max_records > (size_t)INT32_MAX - RECORD_BATCH_HEADER_SIZE)
        max_records = (size_t)INT32_MAX - RECORD_BATCH_HEADER_SIZE;
    if (record_codec_decompress(record_batch_compression(&h), batch + RECORD_BATCH_HEADER_SIZE,
                                len - RECORD_BATCH_HEADER_SIZE, max_records, &records, &n, err, errlen) != 0)
        return -1;
    uint8_t *buf = malloc(RECORD_BATCH_HEADER_SIZE + n);
    if (!buf) {
        free(records);
        return fail(err, errlen, "out of memory");
    }
    memcpy(buf, batch, RECORD_BATCH_HEADER_SIZE);
    memcpy(buf + RECORD_BATCH_HEADER_SIZE, records, n);
    free(records);
    put_be32(buf + RECORD_BATCH_OFFSET_BATCH_LENGTH,
             (uint32_t)(RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD + n));
    buf[RECORD_BATCH_OFFSET_ATTRIBUTES + 1] &= (uint8_t)~RECORD_BATCH_COMPRESSION_MASK;
    *out = buf;
    *out_len = RECORD_BATCH_HEADER_SIZE + n;
    return 0;
}

int record_codec_inflate_batch_into(const uint8_t *batch, size_t len, size_t max_records, uint8_t **buf, size_t *cap,
                                    size_t *out_len, char *err, size_t errlen)
{
    struct record_batch_header h;
    *out_len = 0;
    if (record_batch_parse_header(batch, len, &h) != 0 || h.batch_length < 0 || record_batch_total_size(&h) != len)
        return fail(err, errlen, "malformed batch header");
    if (max_records > (size_t)INT32_MAX - RECORD_BATCH_HEADER_SIZE)
        max_records = (size_t)INT32_MAX - RECORD_BATCH_HEADER_SIZE;
    /* The caller's buffer, seen no larger than this call's limit. */
    struct codec_out o = {.buf = *buf, .cap = *cap, .limit = RECORD_BATCH_HEADER_SIZE + max_records + 1};
    if (o.cap > o.limit)
        o.cap = o.limit;
    int rc = out_reserve(&o, RECORD_BATCH_HEADER_SIZE) == 0 ? 0 : fail(err, errlen, "out of memory");
    if (rc == 0) {
        o.len = RECORD_BATCH_HEADER_SIZE;
        rc = decompress_to(record_batch_compression(&h), batch + RECORD_BATCH_HEADER_SIZE,
                           len - RECORD_BATCH_HEADER_SIZE, &o, err, errlen);
    }
    if (o.buf != *buf || o.cap > *cap) { /* grown: the caller keeps the new one */
        *buf = o.buf;
        *cap = o.cap;
    }
    if (rc != 0)
        return -1;
    size_t n = o.len - RECORD_BATCH_HEADER_SIZE;
    if (n > max_records)
        return fail(err, errlen, "decompressed data exceeds %zu bytes", max_records);
    memcpy(o.buf, batch, RECORD_BATCH_HEADER_SIZE);
    put_be32(o.buf + RECORD_BATCH_OFFSET_BATCH_LENGTH,
             (uint32_t)(RECORD_BATCH_HEADER_SIZE - RECORD_BATCH_LOG_OVERHEAD + n));
    o.buf[RECORD_BATCH_OFFSET_ATTRIBUTES + 1] &= (uint8_t)~RECORD_BATCH_COMPRESSION_MASK;
    *out_len = o.len;
    return 0;
}

int record_codec_deflate_batch(const uint8_t *plain, size_t plain_len, int codec, uint8_t **out, size_t *out_len,
                               char *err, size_t errlen)
{
    *out = NULL;
    *out_len = 0;
    if (plain_len < RECORD_BATCH_HEADER_SIZE)
        return fail(err, errlen, "malformed batch header");
    uint8_t *records = NULL;
    size_t n = 0;
    if (record_codec_compress(codec, plain + RECORD_BATCH_HEADER_SIZE, plain_len - RECORD_BATCH_HEADER_SIZE, &records,
                              &n, err, errlen) != 0)
        return -1;
    if (n > (size_t)INT32_MAX - RECORD_BATCH_HEADER_SIZE) {
        free(records);
        return fail(err, errlen, "compressed batch too large");
    }
    uint8_t *buf = malloc(RECORD_BATCH_HEADER_SIZE + n);
    if (!buf) {
        free(records);
        return fail(err, errlen, "out of memory");
    }
    memcpy(buf, plain, RECORD_BATCH_HEADER_SIZE);
    memcpy(buf + RECORD_BATCH_HEADER_SIZE, records, n);
    free(records);
    size_t total = RECORD_BATCH_HEADER_SIZE + n;
    put_be32(buf + RECORD_BATCH_OFFSET_BATCH_LENGTH, (uint32_t)(total - RECORD_BATCH_LOG_OVERHEAD));
    uint8_t *attr_low = buf + RECORD_BATCH_OFFSET_ATTRIBUTES + 1;
    *attr_low = (uint8_t)((*attr_low & ~RECORD_BATCH_COMPRESSION_MASK) | (codec & RECORD_BATCH_COMPRESSION_MASK));
    record_batch_update_crc(buf, total);
    *out = buf;
    *out_len = total;
    return 0;
}
