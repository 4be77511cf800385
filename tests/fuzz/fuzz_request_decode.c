/* libFuzzer entry: the input is one request frame without its size prefix
 * (header + body), decoded exactly as the broker does. */
#include <stddef.h>
#include <stdint.h>

#include "protocol/messages.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    int16_t api_key = (int16_t)((data[0] << 8) | data[1]);
    int16_t api_version = (int16_t)((data[2] << 8) | data[3]);
    const struct kafka_api_desc *desc = kafka_api_lookup(api_key);
    if (!desc)
        return 0;
    int16_t header_version = kafka_request_header_version(api_key, api_version);
    struct kafka_arena arena;
    kafka_arena_init(&arena);
    struct kafka_reader r;
    kafka_reader_init(&r, data, size);
    struct request_header header;
    if (request_header_decode(&header, &r, header_version, &arena) == 0 && api_version >= desc->min_version &&
        api_version <= desc->max_version) {
        void *msg = kafka_arena_alloc(&arena, desc->request_size_of);
        if (msg && desc->request_decode(msg, &r, api_version, &arena) == 0) {
            /* What decodes must re-encode to exactly its measured size. */
            struct kafka_writer w;
            if (kafka_writer_init(&w, 256) == 0) {
                if (desc->request_encode(msg, &w, api_version) == 0 && w.len != desc->request_size(msg, api_version))
                    __builtin_trap();
                kafka_writer_free(&w);
            }
        }
    }
    /* Accepted or not, decoding stays within the memory bound that
     * unit_protocol_test_decode_bound states (docs/architecture.md). */
    if (kafka_arena_high_water(&arena) > 32 * size + 128 * 1024)
        __builtin_trap();
    kafka_arena_free(&arena);
    return 0;
}
