/* Audit plugin internals: configuration and filters, event formatting, the
 * bounded event queue and the file/stdout sink. Only audit_plugin.c sees
 * the host; the other parts are plain C over these structs. */
#ifndef CAIRN_AUDIT_INTERNAL_H
#define CAIRN_AUDIT_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn/plugin.h"

#define AUDIT_PATH_MAX 4096

enum audit_sink_kind {
    AUDIT_SINK_FILE = 1,
    AUDIT_SINK_STDOUT = 2,
};

/* Which events are written. Type masks hold 1u << enum cairn_audit_event_type;
 * an include mask of 0 means every type. Prefix lists filter on the
 * resource name of events that name one. Immutable after init, so any
 * thread may read it. */
struct audit_filter {
    uint32_t include_types;
    uint32_t exclude_types;
    char **include_prefixes;
    size_t include_prefix_count;
    char **exclude_prefixes;
    size_t exclude_prefix_count;
};

/* The plugin's settings, read once in init; immutable afterwards. */
struct audit_config {
    enum audit_sink_kind sink;
    char file_path[AUDIT_PATH_MAX];
    uint64_t file_max_bytes;
    int64_t file_max_files;
    int64_t queue_capacity;
    bool drop_when_full;
    struct audit_filter filter;
};

/* Reads and validates every key through the host's config functions. */
int audit_config_load(const struct cairn_host *host, struct audit_config *config, char *err, size_t errlen);
void audit_config_free(struct audit_config *config);

/* Parses a comma-separated list of event type names into a mask. */
int audit_parse_type_list(const char *list, uint32_t *mask, char *err, size_t errlen);
/* Whether an event of `type` naming `resource_name` (may be NULL) passes. */
bool audit_filter_accepts(const struct audit_filter *filter, int32_t type, const char *resource_name);

/* Formats one event as a JSON object followed by '\n'. Returns a malloc()ed
 * string (length in *len), or NULL for an unknown event type or no memory.
 * fallback_time_ms is used when the event carries no timestamp. */
char *audit_event_format(const struct cairn_audit_event *event, int64_t fallback_time_ms, size_t *len);
/* Kafka's name of an API key, "Unknown" outside the table. */
const char *audit_api_name(int32_t api_key);
/* "2026-01-31T12:00:00.123Z" into out (at least 32 bytes). */
void audit_format_time(int64_t epoch_ms, char *out, size_t outlen);

/* One formatted line. Owned by the io thread that formatted it until it is
 * pushed, then by the queue, then by the writer thread, which frees it. */
struct audit_line {
    char *text;
    size_t len;
};

/* Bounded FIFO of formatted lines between io threads (producers) and the
 * writer thread (single consumer). Every field is guarded by lock. */
struct audit_queue {
    pthread_mutex_t lock;
    pthread_cond_t not_empty;
    pthread_cond_t not_full;
    struct audit_line *slots;
    size_t capacity;
    size_t head;
    size_t count;
    bool closed;
};

enum audit_push_result {
    AUDIT_PUSH_OK = 0,
    AUDIT_PUSH_FULL = 1,   /* drop policy and no room: the caller keeps the line */
    AUDIT_PUSH_CLOSED = 2, /* the queue no longer accepts lines */
};

int audit_queue_init(struct audit_queue *queue, size_t capacity);
/* Takes ownership of line->text on AUDIT_PUSH_OK only. With wait_for_room
 * the call sleeps until the writer makes room. */
int audit_queue_push(struct audit_queue *queue, struct audit_line line, bool wait_for_room);
/* Waits for lines and moves up to max of them into out; returns 0 only
 * once the queue is closed and empty. */
size_t audit_queue_pop(struct audit_queue *queue, struct audit_line *out, size_t max);
/* No more pushes; pop drains what is left, then returns 0. */
void audit_queue_close(struct audit_queue *queue);
/* Frees lines still queued. Call once no thread uses the queue. */
void audit_queue_destroy(struct audit_queue *queue);

/* Where lines go. Owned by the writer thread once started (before that and
 * after it is joined, by the thread running init/fini). */
struct audit_sink {
    int fd;
    bool is_regular_file; /* only regular files rotate and count bytes */
    bool owns_fd;
    char path[AUDIT_PATH_MAX];
    uint64_t max_bytes;
    int64_t max_files;
    uint64_t file_bytes; /* bytes in the current file, written or buffered */
    char *buffer;
    size_t buffered;
    size_t buffer_capacity;
};

int audit_sink_open(struct audit_sink *sink, const struct audit_config *config, char *err, size_t errlen);
/* Appends one line, rotating first when it would push the file past
 * max_bytes. Data may stay buffered until audit_sink_flush. */
int audit_sink_write(struct audit_sink *sink, const char *data, size_t len, char *err, size_t errlen);
int audit_sink_flush(struct audit_sink *sink, char *err, size_t errlen);
/* Flushes, fsyncs a regular file and closes. */
int audit_sink_close(struct audit_sink *sink, char *err, size_t errlen);

#endif
