/* CRC32C: slice-by-8 tables for portability, SSE4.2 crc32 instruction with
 * three interleaved streams for throughput (the instruction has a latency of
 * three cycles but can issue every cycle, so three independent chains keep
 * the unit busy). The partial CRCs are merged with a precomputed "append N
 * zero bytes" operator, which is linear over GF(2). Where the CPU has
 * VPCLMULQDQ with AVX-512, long inputs are instead folded 256 bytes at a time
 * with carry-less multiplications (four 512-bit accumulators), and the last
 * 16 folded bytes go through the crc32 instruction, which does the final
 * reduction. */
#include "util/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
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
static bool crc32c_fold_ok;
/* Folding constants, one 128-bit lane each: {x^(d+31), x^(d-33)} mod P,
 * bit-reflected, for a fold distance of d bits. */
static uint64_t crc32c_k2048[2], crc32c_k512[2], crc32c_k384[2], crc32c_k256[2], crc32c_k128[2];
/* Below this many bytes folding does not pay for its set-up. */
#define CRC32C_FOLD_MIN 512u
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
    return table[0][crc & 0xff] ^ table[1][(crc >> 8) & 0xff] ^ table[2][(crc >> 16) & 0xff] ^ table[3][crc >> 24];
}

/* x^n mod P (P = 0x1EDC6F41), bit-reflected as the CRC registers are. */
static uint64_t crc32c_xpow_reflected(unsigned n)
{
    uint64_t r = 1;
    for (unsigned i = 0; i < n; i++) {
        r <<= 1;
        if (r & (1ull << 32))
            r ^= 0x11EDC6F41ull;
    }
    uint32_t out = 0;
    for (int bit = 0; bit < 32; bit++)
        if (r & (1ull << bit))
            out |= 1u << (31 - bit);
    return out;
}

static void crc32c_fold_constants(uint64_t k[2], unsigned bits)
{
    k[0] = crc32c_xpow_reflected(bits + 31);
    k[1] = crc32c_xpow_reflected(bits - 33);
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
    crc32c_fold_ok = crc32c_hw_ok && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("vpclmulqdq") &&
                     __builtin_cpu_supports("pclmul");
    crc32c_fold_constants(crc32c_k2048, 2048);
    crc32c_fold_constants(crc32c_k512, 512);
    crc32c_fold_constants(crc32c_k384, 384);
    crc32c_fold_constants(crc32c_k256, 256);
    crc32c_fold_constants(crc32c_k128, 128);
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
__attribute__((target("sse4.2"))) static uint32_t crc32c_hw_streams(uint32_t crc, const uint8_t **pp, size_t *lenp,
                                                                    size_t stream, const uint32_t shift[4][256])
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

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw_raw(uint32_t crc, const uint8_t *p, size_t len)
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

#define CRC32C_FOLD_TARGET "avx512f,vpclmulqdq,pclmul,sse4.2"

/* Moves the 128-bit lanes of x d bits further along the message. */
__attribute__((target(CRC32C_FOLD_TARGET))) static inline __m512i crc32c_fold512(__m512i x, __m512i k)
{
    return _mm512_xor_si512(_mm512_clmulepi64_epi128(x, k, 0x00), _mm512_clmulepi64_epi128(x, k, 0x11));
}

__attribute__((target(CRC32C_FOLD_TARGET))) static inline __m128i crc32c_fold128(__m128i x, const uint64_t k[2])
{
    __m128i kv = _mm_set_epi64x((long long)k[1], (long long)k[0]);
    return _mm_xor_si128(_mm_clmulepi64_si128(x, kv, 0x00), _mm_clmulepi64_si128(x, kv, 0x11));
}

__attribute__((target(CRC32C_FOLD_TARGET))) static inline __m512i crc32c_lanes(const uint64_t k[2])
{
    return _mm512_set_epi64((long long)k[1], (long long)k[0], (long long)k[1], (long long)k[0], (long long)k[1],
                            (long long)k[0], (long long)k[1], (long long)k[0]);
}

/* Raw CRC of len >= 256 bytes by folding; the tail under 64 bytes goes to
 * the crc32 instruction. */
__attribute__((target(CRC32C_FOLD_TARGET))) static uint32_t crc32c_fold_raw(uint32_t crc, const uint8_t *p, size_t len)
{
    __m512i x0 = _mm512_loadu_si512((const void *)p);
    __m512i x1 = _mm512_loadu_si512((const void *)(p + 64));
    __m512i x2 = _mm512_loadu_si512((const void *)(p + 128));
    __m512i x3 = _mm512_loadu_si512((const void *)(p + 192));
    x0 = _mm512_xor_si512(x0, _mm512_castsi128_si512(_mm_cvtsi32_si128((int)crc)));
    p += 256;
    len -= 256;
    const __m512i k2048 = crc32c_lanes(crc32c_k2048);
    while (len >= 256) {
        x0 = _mm512_xor_si512(crc32c_fold512(x0, k2048), _mm512_loadu_si512((const void *)p));
        x1 = _mm512_xor_si512(crc32c_fold512(x1, k2048), _mm512_loadu_si512((const void *)(p + 64)));
        x2 = _mm512_xor_si512(crc32c_fold512(x2, k2048), _mm512_loadu_si512((const void *)(p + 128)));
        x3 = _mm512_xor_si512(crc32c_fold512(x3, k2048), _mm512_loadu_si512((const void *)(p + 192)));
        p += 256;
        len -= 256;
    }
    /* Four accumulators to one: x0 moves 192 bytes on, x1 128, x2 64. */
    const __m512i k512 = crc32c_lanes(crc32c_k512);
    __m512i x = _mm512_xor_si512(crc32c_fold512(x0, k512), x1);
    x = _mm512_xor_si512(crc32c_fold512(x, k512), x2);
    x = _mm512_xor_si512(crc32c_fold512(x, k512), x3);
    while (len >= 64) {
        x = _mm512_xor_si512(crc32c_fold512(x, k512), _mm512_loadu_si512((const void *)p));
        p += 64;
        len -= 64;
    }
    /* Four 128-bit lanes to one: lane i moves (3 - i) * 16 bytes on. */
    __m128i r = _mm512_extracti32x4_epi32(x, 3);
    r = _mm_xor_si128(r, crc32c_fold128(_mm512_extracti32x4_epi32(x, 0), crc32c_k384));
    r = _mm_xor_si128(r, crc32c_fold128(_mm512_extracti32x4_epi32(x, 1), crc32c_k256));
    r = _mm_xor_si128(r, crc32c_fold128(_mm512_extracti32x4_epi32(x, 2), crc32c_k128));
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(r));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(r, 1));
    return crc32c_hw_raw((uint32_t)c, p, len);
}

bool crc32c_fold_supported(void)
{
    pthread_once(&crc32c_once, crc32c_init);
    return crc32c_fold_ok;
}

uint32_t crc32c_fold(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init);
    if (len < 256)
        return ~crc32c_hw_raw(~crc, data, len);
    return ~crc32c_fold_raw(~crc, data, len);
}
#else
uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len)
{
    return crc32c_sw(crc, data, len);
}

bool crc32c_fold_supported(void)
{
    return false;
}

uint32_t crc32c_fold(uint32_t crc, const void *data, size_t len)
{
    return crc32c_sw(crc, data, len);
}
#endif

uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
    pthread_once(&crc32c_once, crc32c_init);
#if CRC32C_HAVE_X86
    if (crc32c_fold_ok && len >= CRC32C_FOLD_MIN)
        return ~crc32c_fold_raw(~crc, data, len);
    if (crc32c_hw_ok)
        return ~crc32c_hw_raw(~crc, data, len);
#endif
    return ~crc32c_sw_raw(~crc, data, len);
}
