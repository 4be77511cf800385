#include "config/uuid.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>

static const char base64url_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static int base64url_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '-')
        return 62;
    if (c == '_')
        return 63;
    return -1;
}

bool uuid_is_zero(const uint8_t uuid[16])
{
    for (int i = 0; i < 16; i++)
        if (uuid[i])
            return false;
    return true;
}

static int fill_random(uint8_t *buf, size_t len)
{
    size_t got = 0;
    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        got += (size_t)n;
    }
    return 0;
}

int uuid_random(uint8_t out[16])
{
    for (;;) {
        if (fill_random(out, 16) < 0)
            return -1;
        out[6] = (uint8_t)((out[6] & 0x0F) | 0x40); /* version 4 */
        out[8] = (uint8_t)((out[8] & 0x3F) | 0x80); /* RFC 4122 variant */
        char text[UUID_BASE64URL_LEN + 1];
        uuid_to_base64url(out, text);
        if (text[0] != '-' && !uuid_is_zero(out))
            return 0;
    }
}

void uuid_to_base64url(const uint8_t uuid[16], char out[UUID_BASE64URL_LEN + 1])
{
    size_t o = 0;
    int i = 0;
    for (; i + 3 <= 15; i += 3) {
        uint32_t v = ((uint32_t)uuid[i] << 16) | ((uint32_t)uuid[i + 1] << 8) | uuid[i + 2];
        out[o++] = base64url_alphabet[(v >> 18) & 63];
        out[o++] = base64url_alphabet[(v >> 12) & 63];
        out[o++] = base64url_alphabet[(v >> 6) & 63];
        out[o++] = base64url_alphabet[v & 63];
    }
    /* 15 bytes gave 20 characters; the last byte gives two more. */
    out[o++] = base64url_alphabet[uuid[15] >> 2];
    out[o++] = base64url_alphabet[(uuid[15] & 3) << 4];
    out[o] = '\0';
}

int uuid_from_base64url(const char *text, uint8_t out[16])
{
    if (!text || strlen(text) != UUID_BASE64URL_LEN)
        return -1;
    int values[UUID_BASE64URL_LEN];
    for (int i = 0; i < UUID_BASE64URL_LEN; i++) {
        values[i] = base64url_value(text[i]);
        if (values[i] < 0)
            return -1;
    }
    if (values[21] & 15)
        return -1; /* non-canonical: padding bits set */
    int o = 0;
    for (int i = 0; i < 20; i += 4) {
        uint32_t v = ((uint32_t)values[i] << 18) | ((uint32_t)values[i + 1] << 12) | ((uint32_t)values[i + 2] << 6) |
                     (uint32_t)values[i + 3];
        out[o++] = (uint8_t)(v >> 16);
        out[o++] = (uint8_t)(v >> 8);
        out[o++] = (uint8_t)v;
    }
    out[o] = (uint8_t)((values[20] << 2) | (values[21] >> 4));
    return 0;
}
