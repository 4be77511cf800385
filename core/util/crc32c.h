/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78), as used by Kafka's
 * record batch v2 and iSCSI. Thread-safe: pure functions over read-only tables
 * built once on first use.
 *
 * crc32c(0, "123456789", 9) == 0xE3069283. Calls chain:
 * crc32c(crc32c(0, a, la), b, lb) == crc32c(0, a||b, la + lb). */
#ifndef CAIRN_UTIL_CRC32C_H
#define CAIRN_UTIL_CRC32C_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fastest available implementation (SSE4.2 when the CPU has it). */
uint32_t crc32c(uint32_t crc, const void *data, size_t len);

/* Portable slice-by-8 table implementation. */
uint32_t crc32c_sw(uint32_t crc, const void *data, size_t len);

/* True when the CPU supports the SSE4.2 crc32 instruction. */
bool crc32c_hw_supported(void);

/* Hardware implementation; only call when crc32c_hw_supported() is true. */
uint32_t crc32c_hw(uint32_t crc, const void *data, size_t len);

/* True when the CPU folds with VPCLMULQDQ/AVX-512 (which crc32c() then uses
 * for long inputs). */
bool crc32c_fold_supported(void);
/* The folding implementation; only call when crc32c_fold_supported(). */
uint32_t crc32c_fold(uint32_t crc, const void *data, size_t len);

#endif
