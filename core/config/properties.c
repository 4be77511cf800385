#include "config/properties.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Growable byte buffer used while assembling one logical line. */
struct text_buffer {
    char *data;
    size_t len;
    size_t cap;
};

static int text_buffer_push(struct text_buffer *buf, const char *bytes, size_t n)
{
    if (buf->len + n + 1 > buf->cap) {
        size_t cap = buf->cap ? buf->cap : 128;
        while (cap < buf->len + n + 1)
            cap *= 2;
        char *grown = realloc(buf->data, cap);
        if (!grown)
            return -1;
        buf->data = grown;
        buf->cap = cap;
    }
    memcpy(buf->data + buf->len, bytes, n);
    buf->len += n;
    buf->data[buf->len] = '\0';
    return 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\f';
}
static bool is_eol(char c)
{
    return c == '\n' || c == '\r';
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int read_u_escape(const char *s, size_t len, size_t pos, uint32_t *out)
{
    if (pos + 4 > len)
        return -1;
    uint32_t v = 0;
    for (size_t i = 0; i < 4; i++) {
        int d = hex_digit(s[pos + i]);
        if (d < 0)
            return -1;
        v = (v << 4) | (uint32_t)d;
    }
    *out = v;
    return 0;
}

/* Resolve escapes of s[0..len) into a new NUL-terminated string. \uXXXX is
 * a UTF-16 unit as in Java; surrogate pairs are joined, lone ones become
 * U+FFFD. */
static char *unescape(const char *s, size_t len, int line, char *err, size_t errlen)
{
    struct text_buffer out = {0};
    if (text_buffer_push(&out, "", 0) < 0)
        goto oom;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c != '\\') {
            if (text_buffer_push(&out, &c, 1) < 0)
                goto oom;
            continue;
        }
        if (++i >= len)
            break; /* a dangling backslash at the end is dropped, as Java does */
        c = s[i];
        char single = c;
        switch (c) {
        case 't':
            single = '\t';
            break;
        case 'n':
            single = '\n';
            break;
        case 'r':
            single = '\r';
            break;
        case 'f':
            single = '\f';
            break;
        case 'u': {
            uint32_t unit;
            if (read_u_escape(s, len, i + 1, &unit) < 0) {
                snprintf(err, errlen, "line %d: malformed \\uXXXX escape", line);
                free(out.data);
                return NULL;
            }
            i += 4;
            uint32_t cp = unit;
            if (unit >= 0xD800 && unit <= 0xDBFF) {
                uint32_t low;
                if (i + 2 < len && s[i + 1] == '\\' && s[i + 2] == 'u' && read_u_escape(s, len, i + 3, &low) == 0 &&
                    low >= 0xDC00 && low <= 0xDFFF) {
                    cp = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    i += 6;
                } else {
                    cp = 0xFFFD;
                }
            } else if (unit >= 0xDC00 && unit <= 0xDFFF) {
                cp = 0xFFFD;
            }
            if (cp == 0) {
                snprintf(err, errlen, "line %d: \\u0000 is not allowed", line);
                free(out.data);
                return NULL;
            }
            char enc[4];
            if (text_buffer_push(&out, enc, utf8_encode(cp, enc)) < 0)
                goto oom;
            continue;
        }
        default:
            break;
        }
        if (text_buffer_push(&out, &single, 1) < 0)
            goto oom;
    }
    return out.data;
oom:
    snprintf(err, errlen, "out of memory");
    free(out.data);
    return NULL;
}

int properties_set(struct properties *props, const char *key, const char *value, int line)
{
    for (size_t i = 0; i < props->count; i++) {
        if (strcmp(props->entries[i].key, key) == 0) {
            char *copy = strdup(value);
            if (!copy)
                return -1;
            free(props->entries[i].value);
            props->entries[i].value = copy;
            props->entries[i].line = line;
            return 0;
        }
    }
    if (props->count == props->capacity) {
        size_t cap = props->capacity ? props->capacity * 2 : 16;
        struct properties_entry *grown = realloc(props->entries, cap * sizeof *grown);
        if (!grown)
            return -1;
        props->entries = grown;
        props->capacity = cap;
    }
    char *k = strdup(key);
    char *v = strdup(value);
    if (!k || !v) {
        free(k);
        free(v);
        return -1;
    }
    props->entries[props->count++] = (struct properties_entry){.key = k, .value = v, .line = line};
    return 0;
}

const char *properties_get(const struct properties *props, const char *key)
{
    for (size_t i = 0; i < props->count; i++)
        if (strcmp(props->entries[i].key, key) == 0)
            return props->entries[i].value;
    return NULL;
}

void properties_free(struct properties *props)
{
    if (!props)
        return;
    for (size_t i = 0; i < props->count; i++) {
        free(props->entries[i].key);
        free(props->entries[i].value);
    }
    free(props->entries);
    memset(props, 0, sizeof *props);
}

/* Split one logical line (escapes still in place) into key and value. */
static int parse_logical_line(const char *s, size_t len, int line, struct properties *out, char *err, size_t errlen)
{
    size_t key_len = 0, value_start = len;
    bool has_separator = false, escaped = false;
    while (key_len < len) {
        char c = s[key_len];
        if ((c == '=' || c == ':') && !escaped) {
            value_start = key_len + 1;
            has_separator = true;
            break;
        }
        if (is_blank(c) && !escaped) {
            value_start = key_len + 1;
            break;
        }
        escaped = (c == '\\') ? !escaped : false;
        key_len++;
    }
    while (value_start < len) {
        char c = s[value_start];
        if (!is_blank(c)) {
            if (!has_separator && (c == '=' || c == ':'))
                has_separator = true;
            else
                break;
        }
        value_start++;
    }
    char *key = unescape(s, key_len, line, err, errlen);
    if (!key)
        return -1;
    char *value = unescape(s + value_start, len - value_start, line, err, errlen);
    if (!value) {
        free(key);
        return -1;
    }
    int rc = properties_set(out, key, value, line);
    if (rc < 0)
        snprintf(err, errlen, "out of memory");
    free(key);
    free(value);
    return rc;
}

int properties_parse(const char *text, size_t len, struct properties *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    struct text_buffer logical = {0};
    size_t pos = 0;
    int line_no = 1;
    if (memchr(text, '\0', len)) {
        snprintf(err, errlen, "file contains a NUL byte");
        return -1;
    }
    while (pos < len) {
        /* Start of a natural line that begins a logical line. */
        while (pos < len && is_blank(text[pos]))
            pos++;
        if (pos >= len)
            break;
        if (is_eol(text[pos]) || text[pos] == '#' || text[pos] == '!') {
            while (pos < len && !is_eol(text[pos]))
                pos++;
            if (pos < len && text[pos] == '\r' && pos + 1 < len && text[pos + 1] == '\n')
                pos++;
            pos++;
            line_no++;
            continue;
        }
        int start_line = line_no;
        logical.len = 0;
        for (;;) {
            size_t seg_start = pos;
            while (pos < len && !is_eol(text[pos]))
                pos++;
            size_t seg_end = pos;
            size_t backslashes = 0;
            while (seg_end - backslashes > seg_start && text[seg_end - backslashes - 1] == '\\')
                backslashes++;
            bool continues = (backslashes % 2) == 1;
            size_t keep = seg_end - seg_start - (continues ? 1 : 0);
            if (text_buffer_push(&logical, text + seg_start, keep) < 0) {
                snprintf(err, errlen, "out of memory");
                goto fail;
            }
            if (pos < len) {
                if (text[pos] == '\r' && pos + 1 < len && text[pos + 1] == '\n')
                    pos++;
                pos++;
                line_no++;
            }
            if (!continues || pos >= len)
                break;
            while (pos < len && is_blank(text[pos]))
                pos++;
        }
        if (parse_logical_line(logical.data, logical.len, start_line, out, err, errlen) < 0)
            goto fail;
    }
    free(logical.data);
    return 0;
fail:
    free(logical.data);
    properties_free(out);
    return -1;
}

int properties_load_file(const char *path, struct properties *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
        return -1;
    }
    struct text_buffer content = {0};
    char chunk[8192];
    size_t n;
    int rc = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (content.len + n > PROPERTIES_MAX_FILE_BYTES) {
            snprintf(err, errlen, "'%s' is larger than %u bytes", path, PROPERTIES_MAX_FILE_BYTES);
            rc = -1;
            break;
        }
        if (text_buffer_push(&content, chunk, n) < 0) {
            snprintf(err, errlen, "out of memory reading '%s'", path);
            rc = -1;
            break;
        }
    }
    if (rc == 0 && ferror(f)) {
        snprintf(err, errlen, "cannot read '%s': %s", path, strerror(errno));
        rc = -1;
    }
    fclose(f);
    if (rc == 0) {
        char inner[512];
        if (properties_parse(content.data ? content.data : "", content.len, out, inner, sizeof inner) < 0) {
            snprintf(err, errlen, "%s: %s", path, inner);
            rc = -1;
        }
    }
    free(content.data);
    return rc;
}
