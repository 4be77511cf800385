/* Writes the seed corpus of fuzz_record_batch into a directory: real
 * librdkafka batches in every codec and builder batches with headers, each
 * with and without the fuzzer's fix-the-CRC flag. Starting from valid
 * batches lets a short run reach the record walk and the decompressors. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/record_batch.h"
#include "../unit/codec/golden_librdkafka.inc"

static int write_seed(const char *dir, const char *name, uint8_t flag, const uint8_t *batch, size_t len, int copies)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%u", dir, name, flag);
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return -1;
    }
    int ok = fwrite(&flag, 1, 1, f) == 1;
    for (int i = 0; i < copies && ok; i++)
        ok = fwrite(batch, 1, len, f) == len;
    if (fclose(f) != 0 || !ok) {
        fprintf(stderr, "%s: write failed\n", path);
        return -1;
    }
    return 0;
}

static uint8_t *builder_batch(size_t *len)
{
    struct record_batch_builder b;
    record_batch_builder_init(&b, 1700000000000);
    const struct record_batch_header_field headers[] = {
        {(const uint8_t *)"trace", 5, (const uint8_t *)"abc", 3},
        {(const uint8_t *)"empty", 5, NULL, -1},
    };
    record_batch_builder_add(&b, 1700000000000, "k0", 2, "first value", 11, headers, 2);
    record_batch_builder_add(&b, 1700000000001, NULL, -1, "keyless", 7, NULL, 0);
    record_batch_builder_add(&b, 1700000000002, "k2", 2, NULL, -1, headers, 1);
    uint8_t *out = NULL;
    return record_batch_builder_finish(&b, &out, len) == 0 ? out : NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: record_batch_seeds DIR\n");
        return 2;
    }
    size_t len;
    uint8_t *plain = builder_batch(&len);
    if (!plain)
        return 1;
    int rc = 0;
    for (uint8_t flag = 0; flag < 2; flag++) {
        rc |= write_seed(argv[1], "plain", flag, plain, len, 1);
        rc |= write_seed(argv[1], "plain-twice", flag, plain, len, 2);
        rc |= write_seed(argv[1], "gzip", flag, golden_gzip, sizeof golden_gzip, 1);
        rc |= write_seed(argv[1], "snappy", flag, golden_snappy, sizeof golden_snappy, 1);
        rc |= write_seed(argv[1], "lz4", flag, golden_lz4, sizeof golden_lz4, 1);
        rc |= write_seed(argv[1], "zstd", flag, golden_zstd, sizeof golden_zstd, 1);
    }
    free(plain);
    return rc == 0 ? 0 : 1;
}
