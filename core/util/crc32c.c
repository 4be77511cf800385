/* CRC32C: slice-by-8 tables for portability, SSE4.2 crc32 instruction with
 * three interleaved streams for throughput (the instruction has a latency of
 * three cycles but can issue every cycle, so three independent chains keep
 * the unit busy). The partial CRCs are merged with a precomputed "append N
 * zero bytes" operator, which is linear over GF(2). */
#include "util/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define CRC32C_HAVE_X86 1
#else
#define CRC32C_HAVE_X86 0
#endif

#define CRC32C_POLY 0x82F63B78u

/* Per-stream lengths for the interleaved hardware loop. */
#define CRC32C_LONG_STREAM 4096u
#define CRC32C_SHORT_STREAM 256u

static uint32_t crc32c_slice[8][256];
/* Operators that advance a raw CRC over N zero bytes, one byte lane each. */
static uint32_t crc32c_shift_long[4][256];
static uint32_t crc32c_shift_short[4][256];
static bool crc32c_hw_ok;
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static uint32_t crc32c_zeros_bytewise(uint32_t crc, size_t n)
{
    while (n--)
        crc = (crc >> 8) ^ crc32c_slice[0][crc & 0xff];
    return crc;
}

static void crc32c_build_shift(uint32_t table[4][256], size_t zeros)
{
    uint32_t column[32];
    for (int bit = 0; bit < 32; bit++)
        column[bit] = crc32c_zeros_bytewise(1u << bit, zeros);
    for (int lane = 0; lane < 4; lane++) {
        for (int value = 0; value < 256; value++) {
            uint32_t acc = 0;
            for (int bit = 0; bit < 8; bit++)
                if (value & (1 << bit))
                    acc ^= column[lane * 8 + bit];
            table[lane][value] = acc;
        }
    }
}

static uint32_t crc32c_shift(const uint32_t table[4][256], uint32_t crc)
{
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^
           table[3][crc >> 24];
}

static void crc32c_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc32c_slice[0][n] = c;
    }
    for (int k = 1; k < 8; k++)
        for (int n = 0; n < 256; n++) {
            uint32_t prev = crc32c_slice[k - 1][n];
            crc32c_slice[k][n] = (prev >> 8) ^ crc32c_slice[0][prev & 0xff];
        }
    crc32c_build_shift(crc32c_shift_long, CRC32C_LONG_STREAM);
    crc32c_build_shift(crc32c_shift_short, CRC32C_SHORT_STREAM);
#if CRC32C_HAVE_X86
    __builtin_cpu_init();
    crc32c_hw_ok = __builtin_cpu_supports("sse4.2");
#else
    crc32c_hw_ok = false;
#endif
}

static inline uint64_t crc32c_load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap64(v);
#endif
    return v;
}

/* Raw CRC (no pre/post inversion). */
static uint32_t crc32c_sw_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint64_t word = crc32c_load64(p) ^ crc;
        crc = crc32c_slice[7][word & 0xff] ^ crc32c_slice[6][(word >> 8) & 0xff] ^
              crc32c_slice[5][(word >> 16) & 0xff] ^ crc32c_slice[4][(word >> 24) & 0xff] ^
              crc32c_slice[3][(word >> 32) & 0xff] ^ crc32c_slice[2][(word >> 40) & 0xff] ^
              crc32c_slice[1][(word >> 48) & 0xff] ^ crc32c_slice[0][word >> 56];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = (crc >> 8) ^ crc32c_slice[0][(crc ^ *p++) & 0xff];
    return crc;
}

uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init);
    return ~crc32c_sw_raw(~crc, data, len);
}

bool crc32c_hw_supported(void)
{
    pthread_once(&crc32c_once, crc32c_init);
    return crc32c_hw_ok;
}

#if CRC32C_HAVE_X86
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw_streams(uint32_t crc, const uint8_t **pp, size_t *lenp, size_t stream,
                  const uint32_t shift[4][256])
{
    const uint8_t *p = *pp;
    size_t len = *lenp;
    while (len >= 3 * stream) {
        uint64_t c0 = crc, c1 = 0, c2 = 0;
        for (size_t i = 0; i < stream; i += 8) {
            c0 = _mm_crc32_u64(c0, crc32c_load64(p + i));
            c1 = _mm_crc32_u64(c1, crc32c_load64(p + stream + i));
            c2 = _mm_crc32_u64(c2, crc32c_load64(p + 2 * stream + i));
        }
        crc = crc32c_shift(shift, (uint32_t)c0) ^ (uint32_t)c1;
        crc = crc32c_shift(shift, crc) ^ (uint32_t)c2;
        p += 3 * stream;
        len -= 3 * stream;
    }
    *pp = p;
    *lenp = len;
    return crc;
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw_raw(uint32_t crc, const uint8_t *p,
                                                                size_t len)
{
    /* Align to 8 bytes first so the main loops use aligned loads. */
    while (len > 0 && ((uintptr_t)p & 7) != 0) {
        crc = _mm_crc32_u8(crc, *p++);
        len--;
    }
    crc = crc32c_hw_streams(crc, &p, &len, CRC32C_LONG_STREAM, crc32c_shift_long);
    crc = crc32c_hw_streams(crc, &p, &len, CRC32C_SHORT_STREAM, crc32c_shift_short);
    uint64_t c = crc;
    while (len >= 8) {
        c = _mm_crc32_u64(c, crc32c_load64(p));
        p += 8;
        len -= 8;
    }
    crc = (uint32_t)c;
    while (len--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}

uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init);
    return ~crc32c_hw_raw(~crc, data, len);
}
#else
uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len)
{
    return crc32c_sw(crc, data, len);
}
#endif

uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init);
#if CRC32C_HAVE_X86
    if (crc32c_hw_ok)
        return ~crc32c_hw_raw(~crc, data, len);
#endif
    return ~crc32c_sw_raw(~crc, data, len);
}
