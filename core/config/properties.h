/* Java properties format (java.util.Properties.load): key=value, key: value,
 * key value, # and ! comments, backslash continuation and escapes.
 * Bytes outside escapes pass through unchanged, so UTF-8 files work as-is.
 *
 * A struct properties is a plain value: owned by its creator, not
 * thread-safe; read-only use from several threads is fine. */
#ifndef CAIRN_CONFIG_PROPERTIES_H
#define CAIRN_CONFIG_PROPERTIES_H
#include <stddef.h>

/* Larger files are refused: a broker config is a few kilobytes. */
#define PROPERTIES_MAX_FILE_BYTES (16u * 1024u * 1024u)

struct properties_entry {
    char *key;
    char *value;
    int line; /* 1-based line where the entry starts; 0 if set in code */
};

struct properties {
    struct properties_entry *entries; /* in order of first appearance */
    size_t count;
    size_t capacity;
};

/* Parse text (need not be NUL-terminated). Later duplicates replace earlier
 * values. On error returns -1 with a message naming the line; out is left
 * empty. */
int properties_parse(const char *text, size_t len, struct properties *out, char *err, size_t errlen);

/* Read and parse a file. */
int properties_load_file(const char *path, struct properties *out, char *err, size_t errlen);

/* Insert or replace. Returns 0, or -1 when out of memory. */
int properties_set(struct properties *props, const char *key, const char *value, int line);

/* Value for key, or NULL when absent. */
const char *properties_get(const struct properties *props, const char *key);

void properties_free(struct properties *props);

#endif
