/* Fuzzes the decoders of the records Cairn replays from its own logs at
 * start-up: cluster metadata records (applied in sequence to one image
 * builder, so later records meet the state earlier ones built) and the
 * keys and values of __consumer_offsets. The logs are CRC-checked, but a
 * damaged or hand-edited disk must still give errors, not crashes.
 *
 * Input: one selector byte, then records as [uint16 big-endian length]
 * [bytes]... Selector bit 0 clear: metadata records; set: offsets-topic
 * key/value pairs (each pair is two length-prefixed items). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "group/group_log_codec.h"
#include "metadata/metadata_builder.h"
#include "metadata/metadata_image.h"
#include "metadata/metadata_records.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Next length-prefixed item, or NULL at the end of the input. */
static const uint8_t *next_item(const uint8_t **pos, const uint8_t *end, size_t *len)
{
    if (end - *pos < 2)
        return NULL;
    size_t n = (size_t)(*pos)[0] << 8 | (*pos)[1];
    *pos += 2;
    if ((size_t)(end - *pos) < n)
        n = (size_t)(end - *pos);
    const uint8_t *item = *pos;
    *pos += n;
    *len = n;
    return item;
}

static void replay_metadata(const uint8_t *pos, const uint8_t *end)
{
    struct metadata_builder *b = metadata_builder_new(NULL);
    if (!b)
        return;
    char err[256];
    size_t len;
    const uint8_t *record;
    int64_t offset = 0;
    while ((record = next_item(&pos, end, &len)) != NULL)
        (void)metadata_record_apply(b, record, len, offset++, err, sizeof err);
    struct metadata_image *img = metadata_builder_finish(b, offset - 1);
    if (img)
        metadata_image_release(img);
}

static void replay_offsets(const uint8_t *pos, const uint8_t *end)
{
    char err[256];
    size_t key_len, value_len;
    const uint8_t *key, *value;
    while ((key = next_item(&pos, end, &key_len)) != NULL) {
        value = next_item(&pos, end, &value_len);
        struct kafka_arena arena;
        kafka_arena_init(&arena);
        struct group_log_key k;
        if (group_log_decode_key(key, key_len, &arena, &k, err, sizeof err) == 0 && value) {
            if (k.type == GROUP_LOG_KEY_OFFSET) {
                struct group_offset_record rec;
                memset(&rec, 0, sizeof rec);
                (void)group_log_decode_offset_value(value, value_len, &arena, &rec, err, sizeof err);
            } else {
                struct group_snapshot_record group;
                memset(&group, 0, sizeof group);
                (void)group_log_decode_group_value(value, value_len, k.group_id, &arena, &group, err, sizeof err);
            }
        }
        kafka_arena_free(&arena);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (data[0] & 1)
        replay_offsets(data + 1, data + size);
    else
        replay_metadata(data + 1, data + size);
    return 0;
}
