/* CRC32C: published vectors, chaining, and agreement between the table and
 * SSE4.2 implementations across lengths and alignments. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/crc32c.h"

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void check_vectors(crc_fn fn)
{
    uint8_t buf[48];

    assert_int_equal(fn(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(fn(0, "", 0), 0);

    /* RFC 3720 B.4 */
    memset(buf, 0, 32);
    assert_int_equal(fn(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, 32);
    assert_int_equal(fn(0, buf, 32), 0x62A8AB43u);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)i;
    assert_int_equal(fn(0, buf, 32), 0x46DD794Eu);
    for (int i = 0; i < 32; i++)
        buf[i] = (uint8_t)(31 - i);
    assert_int_equal(fn(0, buf, 32), 0x113FDB5Cu);
    static const uint8_t iscsi_read[48] = {
        0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18,
        0x28, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    };
    assert_int_equal(fn(0, iscsi_read, sizeof iscsi_read), 0xD9963A56u);
}

static void test_vectors_default(void **state)
{
    (void)state;
    check_vectors(crc32c);
}

static void test_vectors_software(void **state)
{
    (void)state;
    check_vectors(crc32c_sw);
}

static void test_vectors_hardware(void **state)
{
    (void)state;
    if (!crc32c_hw_supported())
        skip();
    check_vectors(crc32c_hw);
}

static void test_chaining(void **state)
{
    (void)state;
    const char *text = "123456789";
    for (size_t split = 0; split <= 9; split++) {
        uint32_t first = crc32c(0, text, split);
        assert_int_equal(crc32c(first, text + split, 9 - split), 0xE3069283u);
        first = crc32c_sw(0, text, split);
        assert_int_equal(crc32c_sw(first, text + split, 9 - split), 0xE3069283u);
    }
}

static void fill_random(uint8_t *buf, size_t len, uint64_t *seed)
{
    for (size_t i = 0; i < len; i++) {
        *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
        buf[i] = (uint8_t)(*seed >> 56);
    }
}

static void test_paths_agree_small(void **state)
{
    (void)state;
    if (!crc32c_hw_supported())
        skip();
    uint64_t seed = 42;
    uint8_t *buf = malloc(1024 + 16);
    assert_non_null(buf);
    fill_random(buf, 1024 + 16, &seed);
    for (size_t offset = 0; offset < 8; offset++)
        for (size_t len = 0; len <= 1024; len++) {
            uint32_t sw = crc32c_sw(0x1234u, buf + offset, len);
            assert_int_equal(crc32c_hw(0x1234u, buf + offset, len), sw);
            assert_int_equal(crc32c(0x1234u, buf + offset, len), sw);
        }
    free(buf);
}

/* Long enough to exercise both interleaved block sizes plus their tails. */
static void test_paths_agree_large(void **state)
{
    (void)state;
    if (!crc32c_hw_supported())
        skip();
    const size_t max = 3 * 4096 * 3 + 3 * 256 * 2 + 77;
    uint64_t seed = 7;
    uint8_t *buf = malloc(max + 8);
    assert_non_null(buf);
    fill_random(buf, max + 8, &seed);
    const size_t lengths[] = {767, 768, 769, 3 * 4096 - 1, 3 * 4096, 3 * 4096 + 1, 3 * 4096 + 768 + 13, max};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
        for (size_t offset = 0; offset < 8; offset += 3)
            assert_int_equal(crc32c_hw(0, buf + offset, lengths[i]), crc32c_sw(0, buf + offset, lengths[i]));
    free(buf);
}

/* A single flipped bit anywhere changes the checksum. */
static void test_detects_bit_flip(void **state)
{
    (void)state;
    uint8_t buf[256];
    uint64_t seed = 99;
    fill_random(buf, sizeof buf, &seed);
    uint32_t good = crc32c(0, buf, sizeof buf);
    for (size_t bit = 0; bit < sizeof buf * 8; bit += 13) {
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_int_not_equal(crc32c(0, buf, sizeof buf), good);
        buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
}

/* The carry-less-multiplication fold (where the CPU has it) agrees with the
 * table implementation: every length around its 256-byte blocks, 64-byte
 * steps and 16-byte lanes, at several alignments, for any initial CRC, and
 * on batch-sized inputs through crc32c() itself. */
static void test_fold_agrees(void **state)
{
    (void)state;
    if (!crc32c_fold_supported())
        skip();
    const size_t big = (1u << 21) + 333;
    uint64_t seed = 2024;
    uint8_t *buf = malloc(big + 64);
    assert_non_null(buf);
    fill_random(buf, big + 64, &seed);
    for (size_t offset = 0; offset < 64; offset += 7)
        for (size_t len = 0; len <= 1300; len++) {
            uint32_t sw = crc32c_sw(0xA5A5A5A5u, buf + offset, len);
            assert_int_equal(crc32c_fold(0xA5A5A5A5u, buf + offset, len), sw);
        }
    const size_t lengths[] = {4095, 4096, 4097, 65536 + 48, 1000 * 1090, big};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        uint32_t sw = crc32c_sw(0, buf + 3, lengths[i]);
        assert_int_equal(crc32c_fold(0, buf + 3, lengths[i]), sw);
        assert_int_equal(crc32c(0, buf + 3, lengths[i]), sw);
    }
    /* Chaining across a split inside a fold block. */
    uint32_t first = crc32c(0, buf, 70000);
    assert_int_equal(crc32c(first, buf + 70000, 30001), crc32c_sw(0, buf, 100001));
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors_default),   cmocka_unit_test(test_vectors_software),
        cmocka_unit_test(test_vectors_hardware),  cmocka_unit_test(test_chaining),
        cmocka_unit_test(test_paths_agree_small), cmocka_unit_test(test_paths_agree_large),
        cmocka_unit_test(test_detects_bit_flip),  cmocka_unit_test(test_fold_agrees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
