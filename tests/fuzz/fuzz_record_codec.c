/* Fuzzes decompression of untrusted batch payloads: the first byte picks
 * the codec, the rest is the compressed data. Whatever decompresses must
 * stay within the limit and survive a compress/decompress round trip. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/record_codec.h"

#define FUZZ_LIMIT (1 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int codec = 1 + data[0] % 4;
    uint8_t *out = NULL, *packed = NULL, *back = NULL;
    size_t out_len, packed_len, back_len;
    char err[200];
    if (record_codec_decompress(codec, data + 1, size - 1, FUZZ_LIMIT, &out, &out_len, err, sizeof err) != 0)
        return 0;
    if (out_len > FUZZ_LIMIT)
        abort();
    if (record_codec_compress(codec, out, out_len, &packed, &packed_len, err, sizeof err) != 0 ||
        record_codec_decompress(codec, packed, packed_len, out_len, &back, &back_len, err, sizeof err) != 0 ||
        back_len != out_len || memcmp(back, out, out_len) != 0)
        abort();
    free(out);
    free(packed);
    free(back);
    return 0;
}
