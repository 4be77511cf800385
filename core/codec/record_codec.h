/* Compression codecs of v2 record batches: gzip, snappy, lz4 and zstd, in
 * the framings Kafka clients write, and batch-level helpers that open a
 * compressed batch for the record iterator of protocol/record_batch.h and
 * close it again.
 *
 * Input is untrusted: every decompression is bounded by a caller-given
 * limit (no size announced by the data is believed), and malformed,
 * truncated or oversized input fails with -1 and a message in err.
 *
 * Thread-safety: every call works on its own buffers; the zstd decoder is
 * one per thread (kept, freed at thread exit), so any thread may call any
 * function. */
#ifndef CAIRN_CODEC_RECORD_CODEC_H
#define CAIRN_CODEC_RECORD_CODEC_H
#include <stddef.h>
#include <stdint.h>

/* codec: a record_batch_compression value (GZIP, SNAPPY, LZ4 or ZSTD).
 * Decompress in into a new heap buffer *out (free() it) of *out_len bytes,
 * at most max_out. gzip: one or more gzip members. snappy: the xerial
 * (snappy-java) stream framing or a raw snappy block. lz4: one or more LZ4
 * frames. zstd: one or more frames, with or without a content size.
 * Returns 0, or -1 with a message in err. */
int record_codec_decompress(int codec, const uint8_t *in, size_t in_len, size_t max_out, uint8_t **out, size_t *out_len,
                            char *err, size_t errlen);

/* Compress in with codec into a new heap buffer *out (free() it), in the
 * framing Kafka's own producers write (gzip member, xerial snappy, LZ4
 * frame with independent 64 KiB blocks, zstd frame). Returns 0 or -1. */
int record_codec_compress(int codec, const uint8_t *in, size_t in_len, uint8_t **out, size_t *out_len, char *err,
                          size_t errlen);

/* Copy of the compressed batch (len = its total size) with its records
 * section decompressed (at most max_records bytes): the same header except
 * batchLength and the codec bits, cleared, so record_batch_records_begin
 * reads it. The CRC is left stale. Returns 0 or -1. */
int record_codec_inflate_batch(const uint8_t *batch, size_t len, size_t max_records, uint8_t **out, size_t *out_len,
                               char *err, size_t errlen);

/* As record_codec_inflate_batch, into *buf (capacity *cap; NULL and 0 at
 * first), which is grown with realloc when needed and stays the caller's
 * to reuse and free(), so that frequent callers do not allocate, fault in
 * and copy a fresh buffer per batch. On success the inflated batch is the
 * first *out_len bytes of *buf. Returns 0 or -1. */
int record_codec_inflate_batch_into(const uint8_t *batch, size_t len, size_t max_records, uint8_t **buf, size_t *cap,
                                    size_t *out_len, char *err, size_t errlen);

/* The reverse: a batch whose records section is plain's, compressed with
 * codec; header fields from plain, codec bits set, batchLength and CRC
 * recomputed. Returns 0 or -1. */
int record_codec_deflate_batch(const uint8_t *plain, size_t plain_len, int codec, uint8_t **out, size_t *out_len,
                               char *err, size_t errlen);

#endif
