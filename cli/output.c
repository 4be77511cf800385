/* Output: errors on stderr, text tables and JSON on stdout. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

int cli_fail(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("cairn: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return code;
}

int cli_kafka_fail(int16_t code, struct kafka_str broker_msg, const char *what, const char *hint)
{
    fprintf(stderr, "cairn: %s: %s%s%s", kafka_error_name(code), what, broker_msg.len > 0 ? " (" : "",
            broker_msg.len > 0 ? cli_str(broker_msg) : "");
    fprintf(stderr, "%s", broker_msg.len > 0 ? ")" : "");
    if (hint && *hint)
        fprintf(stderr, "; %s", hint);
    fputc('\n', stderr);
    return CLI_EXIT_KAFKA;
}

const char *cli_str(struct kafka_str s)
{
    static char ring[8][1024];
    static int next;
    char *buf = ring[next];
    next = (next + 1) % 8;
    int len = s.len < 0 ? 0 : s.len;
    if (len > (int)sizeof(ring[0]) - 1)
        len = (int)sizeof(ring[0]) - 1;
    if (len)
        memcpy(buf, s.data, (size_t)len);
    buf[len] = '\0';
    return buf;
}

const char *cli_config_source_name(int8_t source)
{
    static const char *const names[] = {
        "UNKNOWN",
        "DYNAMIC_TOPIC_CONFIG",
        "DYNAMIC_BROKER_CONFIG",
        "DYNAMIC_DEFAULT_BROKER_CONFIG",
        "STATIC_BROKER_CONFIG",
        "DEFAULT_CONFIG",
        "DYNAMIC_BROKER_LOGGER_CONFIG",
        "CLIENT_METRICS_CONFIG",
        "GROUP_CONFIG",
    };
    if (source < 0 || source >= (int8_t)(sizeof(names) / sizeof(names[0])))
        return "UNKNOWN";
    return names[source];
}

const char *cli_int_list(const int32_t *v, int32_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%d", i ? "," : "", (int)v[i]);
    return buf;
}

struct cli_table {
    int columns;
    int rows, cap;
    char **cells; /* rows+1 (headers first) x columns */
};

struct cli_table *cli_table_new(int columns, const char *const *headers)
{
    struct cli_table *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->columns = columns;
    t->cap = 16;
    t->cells = calloc((size_t)t->cap * (size_t)columns, sizeof(char *));
    if (!t->cells) {
        free(t);
        return NULL;
    }
    for (int c = 0; c < columns; c++)
        t->cells[c] = strdup(headers[c]);
    t->rows = 1;
    return t;
}

void cli_table_add(struct cli_table *t, ...)
{
    if (!t)
        return;
    if (t->rows == t->cap) {
        char **grown = realloc(t->cells, (size_t)t->cap * 2 * (size_t)t->columns * sizeof(char *));
        if (!grown)
            return;
        t->cells = grown;
        t->cap *= 2;
    }
    va_list ap;
    va_start(ap, t);
    for (int c = 0; c < t->columns; c++) {
        const char *v = va_arg(ap, const char *);
        t->cells[t->rows * t->columns + c] = strdup(v ? v : "");
    }
    va_end(ap);
    t->rows++;
}

void cli_table_print(struct cli_table *t)
{
    if (!t)
        return;
    int width[32] = {0};
    for (int r = 0; r < t->rows; r++)
        for (int c = 0; c < t->columns && c < 32; c++) {
            const char *v = t->cells[r * t->columns + c];
            int w = v ? (int)strlen(v) : 0;
            if (w > width[c])
                width[c] = w;
        }
    for (int r = 0; r < t->rows; r++) {
        for (int c = 0; c < t->columns; c++) {
            const char *v = t->cells[r * t->columns + c];
            if (c == t->columns - 1)
                printf("%s\n", v ? v : "");
            else
                printf("%-*s  ", c < 32 ? width[c] : 0, v ? v : "");
        }
    }
    cli_table_free(t);
}

void cli_table_free(struct cli_table *t)
{
    if (!t)
        return;
    for (int i = 0; i < t->rows * t->columns; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

int cli_json_print(struct json_t *v)
{
    char *text = json_dumps(v, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text) {
        puts(text);
        free(text);
    }
    json_decref(v);
    return CLI_EXIT_OK;
}
