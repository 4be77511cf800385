/* How cairn consume prints a record: a format string (kcat's escapes) or
 * one JSON object per line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "cli.h"
#include "protocol/record_batch.h"

int cli_format_check(const char *fmt, char *err, size_t errlen)
{
    for (const char *p = fmt; *p; p++) {
        if (*p != '%' && *p != '\\')
            continue;
        char next = p[1];
        const char *ok = *p == '%' ? "tpoTkKvSh%" : "ntr\\0";
        if (!next || !strchr(ok, next)) {
            snprintf(err, errlen, "bad format string '%s': unknown escape '%c%s' (%s)", fmt, *p,
                     next ? (char[2]){next, 0} : "",
                     *p == '%' ? "%t %p %o %T %k %K %v %S %h %% are known" : "\\n \\t \\r \\\\ \\0 are known");
            return -1;
        }
        p++;
    }
    return 0;
}

/* Headers as kcat prints them: key=value,key=value (a null value: key). */
static void print_headers(FILE *out, const struct record_batch_record *r)
{
    struct record_batch_headers_iter it;
    struct record_batch_header_field h;
    record_batch_headers_begin(&it, r);
    for (int i = 0; record_batch_headers_next(&it, &h) == 1; i++) {
        if (i)
            fputc(',', out);
        fwrite(h.key, 1, (size_t)h.key_len, out);
        if (h.value_len >= 0) {
            fputc('=', out);
            fwrite(h.value, 1, (size_t)h.value_len, out);
        }
    }
}

void cli_record_print_format(FILE *out, const char *fmt, const char *topic, int32_t partition,
                             const struct record_batch_record *r)
{
    for (const char *p = fmt; *p; p++) {
        if (*p == '\\') {
            p++;
            fputc(*p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p == '0' ? '\0' : '\\', out);
            continue;
        }
        if (*p != '%') {
            fputc(*p, out);
            continue;
        }
        switch (*++p) {
        case 't':
            fputs(topic, out);
            break;
        case 'p':
            fprintf(out, "%d", (int)partition);
            break;
        case 'o':
            fprintf(out, "%lld", (long long)r->offset);
            break;
        case 'T':
            fprintf(out, "%lld", (long long)r->timestamp);
            break;
        case 'k':
            if (r->key_len > 0)
                fwrite(r->key, 1, (size_t)r->key_len, out);
            break;
        case 'K':
            fprintf(out, "%d", (int)r->key_len);
            break;
        case 'v':
            if (r->value_len > 0)
                fwrite(r->value, 1, (size_t)r->value_len, out);
            break;
        case 'S':
            fprintf(out, "%d", (int)r->value_len);
            break;
        case 'h':
            print_headers(out, r);
            break;
        default:
            fputc('%', out);
            break;
        }
    }
}

/* A JSON string when the bytes are UTF-8 (jansson checks), else the same
 * name with "_base64" and the bytes in base64; null bytes as null. */
static void set_bytes(json_t *obj, const char *name, const uint8_t *b, int32_t len)
{
    if (len < 0) {
        json_object_set_new(obj, name, json_null());
        return;
    }
    json_t *s = json_stringn((const char *)b, (size_t)len);
    if (s) {
        json_object_set_new(obj, name, s);
        return;
    }
    char *enc = malloc(((size_t)len + 2) / 3 * 4 + 1);
    char key[64];
    snprintf(key, sizeof(key), "%s_base64", name);
    if (enc) {
        EVP_EncodeBlock((unsigned char *)enc, b, len);
        json_object_set_new(obj, key, json_string(enc));
    }
    free(enc);
}

void cli_record_print_json(FILE *out, const char *topic, int32_t partition, const struct record_batch_record *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "topic", json_string(topic));
    json_object_set_new(o, "partition", json_integer(partition));
    json_object_set_new(o, "offset", json_integer(r->offset));
    json_object_set_new(o, "timestamp", json_integer(r->timestamp));
    set_bytes(o, "key", r->key, r->key_len);
    set_bytes(o, "value", r->value, r->value_len);
    json_t *hs = json_array();
    struct record_batch_headers_iter it;
    struct record_batch_header_field h;
    record_batch_headers_begin(&it, r);
    while (record_batch_headers_next(&it, &h) == 1) {
        json_t *one = json_object();
        set_bytes(one, "key", h.key, h.key_len);
        set_bytes(one, "value", h.value, h.value_len);
        json_array_append_new(hs, one);
    }
    json_object_set_new(o, "headers", hs);
    char *text = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (text) {
        fputs(text, out);
        fputc('\n', out);
        free(text);
    }
    json_decref(o);
}
