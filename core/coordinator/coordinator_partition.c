#include "coordinator/coordinator_partition.h"

/* Decodes one UTF-8 code point at s[*i]; advances *i. Malformed input gives
 * U+FFFD and consumes one byte. */
static uint32_t next_code_point(const unsigned char *s, size_t len, size_t *i)
{
    unsigned char c = s[*i];
    size_t need;
    uint32_t cp, min;
    if (c < 0x80) {
        (*i)++;
        return c;
    } else if ((c & 0xe0) == 0xc0) {
        need = 1, cp = c & 0x1f, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
        need = 2, cp = c & 0x0f, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
        need = 3, cp = c & 0x07, min = 0x10000;
    } else {
        (*i)++;
        return 0xfffd;
    }
    if (*i + need >= len) {
        (*i)++;
        return 0xfffd;
    }
    for (size_t k = 1; k <= need; k++) {
        if ((s[*i + k] & 0xc0) != 0x80) {
            (*i)++;
            return 0xfffd;
        }
        cp = cp << 6 | (s[*i + k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
        (*i)++;
        return 0xfffd;
    }
    *i += need + 1;
    return cp;
}

int32_t coordinator_key_hash(const char *key, size_t len)
{
    const unsigned char *s = (const unsigned char *)key;
    uint32_t h = 0;
    size_t i = 0;
    while (i < len) {
        uint32_t cp = next_code_point(s, len, &i);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            h = h * 31u + (0xd800u + (cp >> 10));
            h = h * 31u + (0xdc00u + (cp & 0x3ff));
        } else {
            h = h * 31u + cp;
        }
    }
    return (int32_t)h;
}

int32_t coordinator_partition_for(const char *key, size_t len, int32_t partition_count)
{
    if (partition_count <= 0)
        return 0;
    /* Kafka's Utils.abs: |h|, with INT32_MIN giving 0 (not the sign mask,
     * which the producer's partitioner uses and which differs for negative h). */
    int32_t h = coordinator_key_hash(key, len);
    uint32_t a = h == INT32_MIN ? 0u : (uint32_t)(h < 0 ? -(int64_t)h : h);
    return (int32_t)(a % (uint32_t)partition_count);
}
