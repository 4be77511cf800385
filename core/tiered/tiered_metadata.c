/* Durable remote segment lists: one JSON file per partition incarnation,
 * replaced atomically on every change. A crash leaves the old list or the
 * new one; a COPY_STARTED entry found at load names a copy that may be
 * partial, which the next task pass deletes from the store. */
#include "tiered/tiered_internal.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fs_util.h"

static const char *const state_names[] = {
    [TIERED_COPY_STARTED] = "COPY_SEGMENT_STARTED",
    [TIERED_COPY_FINISHED] = "COPY_SEGMENT_FINISHED",
    [TIERED_DELETE_STARTED] = "DELETE_SEGMENT_STARTED",
};

void tiered_hex(const uint8_t *bytes, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}

static int unhex(const char *text, uint8_t *out, size_t n)
{
    if (!text || strlen(text) != 2 * n)
        return -1;
    for (size_t i = 0; i < 2 * n; i++) {
        char c = text[i];
        int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (v < 0)
            return -1;
        out[i / 2] = (uint8_t)(i % 2 ? (out[i / 2] | v) : v << 4);
    }
    return 0;
}

void tiered_segment_free(struct tiered_segment *s)
{
    free(s->epochs);
    free(s->epoch_starts);
    free(s->aborted);
    s->epochs = NULL;
    s->epoch_starts = NULL;
    s->epoch_count = 0;
    s->aborted = NULL;
    s->aborted_count = 0;
}

static json_t *segment_json(const struct tiered_segment *s)
{
    char id[33], custom[2 * TIERED_CUSTOM_METADATA_MAX + 1];
    tiered_hex(s->id, 16, id);
    tiered_hex(s->custom, s->custom_len, custom);
    json_t *epochs = json_array();
    for (size_t i = 0; epochs && i < s->epoch_count; i++)
        json_array_append_new(epochs, json_pack("[iI]", (int)s->epochs[i], (json_int_t)s->epoch_starts[i]));
    json_t *aborted = json_array();
    for (size_t i = 0; aborted && i < s->aborted_count; i++) {
        const struct txn_index_entry *e = &s->aborted[i];
        json_array_append_new(aborted, json_pack("[IIII]", (json_int_t)e->producer_id, (json_int_t)e->first_offset,
                                                 (json_int_t)e->last_offset, (json_int_t)e->last_stable_offset));
    }
    return json_pack(
        "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:i, s:o, s:o, s:s}", "segment_id", id, "state", state_names[s->state],
        "start_offset", (json_int_t)s->start_offset, "end_offset", (json_int_t)s->end_offset, "max_timestamp_ms",
        (json_int_t)s->max_timestamp_ms, "segment_size_bytes", (json_int_t)s->size_bytes, "event_timestamp_ms",
        (json_int_t)s->event_timestamp_ms, "broker_id", (int)s->broker_id, "leader_epochs",
        epochs ? epochs : json_array(), "aborted_txns", aborted ? aborted : json_array(), "custom_metadata", custom);
}

char *tiered_metadata_text(const struct tiered_partition *p, int32_t leader_epoch)
{
    char topic_id[33];
    tiered_hex(p->topic_id, 16, topic_id);
    json_t *segs = json_array();
    json_t *root = json_pack("{s:i, s:s, s:i, s:s, s:I, s:i, s:o}", "version", 1, "topic", p->topic, "partition",
                             (int)p->partition, "topic_id", topic_id, "log_start_offset",
                             (json_int_t)p->log_start_offset, "leader_epoch", (int)leader_epoch, "segments",
                             segs ? segs : json_array());
    for (size_t i = 0; root && i < p->count; i++) {
        json_t *s = segment_json(&p->segs[i]);
        if (!s || json_array_append_new(json_object_get(root, "segments"), s) != 0) {
            json_decref(root);
            root = NULL;
        }
    }
    char *text = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
    json_decref(root);
    return text;
}

int tiered_metadata_save(struct tiered_partition *p, char *err, size_t errlen)
{
    char *text = tiered_metadata_text(p, -1);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return ENOMEM;
    }
    int rc = fs_replace_file(p->meta_path, text, strlen(text), true, err, errlen);
    free(text);
    return rc;
}

static int parse_state(const char *name, enum tiered_segment_state *out)
{
    for (size_t i = 0; i < sizeof state_names / sizeof state_names[0]; i++) {
        if (name && strcmp(name, state_names[i]) == 0) {
            *out = (enum tiered_segment_state)i;
            return 0;
        }
    }
    return -1;
}

static int parse_segment(json_t *js, struct tiered_segment *s)
{
    const char *id = NULL, *state = NULL, *custom = NULL;
    json_int_t start, end, max_ts, size, event_ts;
    int broker;
    json_t *epochs = NULL;
    memset(s, 0, sizeof *s);
    if (json_unpack(js, "{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:i, s:o, s:s}", "segment_id", &id, "state", &state,
                    "start_offset", &start, "end_offset", &end, "max_timestamp_ms", &max_ts, "segment_size_bytes",
                    &size, "event_timestamp_ms", &event_ts, "broker_id", &broker, "leader_epochs", &epochs,
                    "custom_metadata", &custom) != 0 ||
        unhex(id, s->id, 16) != 0 || parse_state(state, &s->state) != 0 || !json_is_array(epochs) ||
        strlen(custom) / 2 > TIERED_CUSTOM_METADATA_MAX || unhex(custom, s->custom, strlen(custom) / 2) != 0 ||
        start < 0 || end < start)
        return -1;
    s->custom_len = strlen(custom) / 2;
    s->start_offset = start;
    s->end_offset = end;
    s->max_timestamp_ms = max_ts;
    s->size_bytes = size;
    s->event_timestamp_ms = event_ts;
    s->broker_id = broker;
    size_t n = json_array_size(epochs);
    if (n > 0) {
        s->epochs = calloc(n, sizeof *s->epochs);
        s->epoch_starts = calloc(n, sizeof *s->epoch_starts);
        if (!s->epochs || !s->epoch_starts) {
            tiered_segment_free(s);
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int epoch;
        json_int_t at;
        if (json_unpack(json_array_get(epochs, i), "[iI]", &epoch, &at) != 0) {
            tiered_segment_free(s);
            return -1;
        }
        s->epochs[i] = epoch;
        s->epoch_starts[i] = at;
    }
    s->epoch_count = n;
    json_t *aborted = json_object_get(js, "aborted_txns");
    size_t m = json_is_array(aborted) ? json_array_size(aborted) : 0;
    s->aborted = m ? calloc(m, sizeof *s->aborted) : NULL;
    for (size_t i = 0; s->aborted && i < m; i++) {
        json_int_t pid, first, last, lso;
        if (json_unpack(json_array_get(aborted, i), "[IIII]", &pid, &first, &last, &lso) != 0) {
            tiered_segment_free(s);
            return -1;
        }
        s->aborted[i] = (struct txn_index_entry){pid, first, last, lso};
        s->aborted_count++;
    }
    if (m && !s->aborted) {
        tiered_segment_free(s);
        return -1;
    }
    return 0;
}

/* The segments of a parsed list into *segs (*count of them). */
static int parse_segments(json_t *segs, struct tiered_segment **out, size_t *count, char *err, size_t errlen)
{
    size_t n = json_array_size(segs);
    *out = n ? calloc(n, sizeof **out) : NULL;
    *count = 0;
    if (n && !*out) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (parse_segment(json_array_get(segs, i), &(*out)[i]) != 0) {
            snprintf(err, errlen, "segment %zu is malformed", i);
            return -1;
        }
        (*count)++;
    }
    return 0;
}

int tiered_metadata_parse(const char *text, size_t len, const struct tiered_partition *p, struct tiered_list *out,
                          char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->log_start_offset = -1;
    out->leader_epoch = -1;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    const char *topic = NULL, *topic_id = NULL;
    int partition = -1;
    json_t *segs = NULL;
    uint8_t id[16];
    if (!root ||
        json_unpack(root, "{s:s, s:i, s:s, s:o}", "topic", &topic, "partition", &partition, "topic_id", &topic_id,
                    "segments", &segs) != 0 ||
        unhex(topic_id, id, 16) != 0 || !json_is_array(segs)) {
        snprintf(err, errlen, "not a remote segment list (%s)", root ? "fields" : jerr.text);
        json_decref(root);
        return -1;
    }
    if (strcmp(topic, p->topic) != 0 || partition != p->partition || memcmp(id, p->topic_id, 16) != 0) {
        snprintf(err, errlen, "the list of another partition (%s-%d)", topic, partition);
        json_decref(root);
        return -1;
    }
    json_t *start = json_object_get(root, "log_start_offset");
    if (json_is_integer(start))
        out->log_start_offset = json_integer_value(start);
    json_t *epoch = json_object_get(root, "leader_epoch");
    if (json_is_integer(epoch))
        out->leader_epoch = (int32_t)json_integer_value(epoch);
    int rc = parse_segments(segs, &out->segs, &out->count, err, errlen);
    json_decref(root);
    if (rc != 0)
        tiered_list_free(out);
    return rc;
}

void tiered_list_free(struct tiered_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        tiered_segment_free(&l->segs[i]);
    free(l->segs);
    l->segs = NULL;
    l->count = 0;
}

static int load_file(struct tiered *t, const char *path, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    const char *topic = NULL, *topic_id = NULL;
    int partition = -1;
    json_t *segs = NULL;
    uint8_t id[16];
    if (!root ||
        json_unpack(root, "{s:s, s:i, s:s, s:o}", "topic", &topic, "partition", &partition, "topic_id", &topic_id,
                    "segments", &segs) != 0 ||
        unhex(topic_id, id, 16) != 0 || !json_is_array(segs)) {
        snprintf(err, errlen, "%s: not a remote segment list (%s)", path, root ? "fields" : jerr.text);
        json_decref(root);
        return -1;
    }
    pthread_mutex_lock(&t->lock);
    struct tiered_partition *p = tiered_partition_get_locked(t, topic, partition, id);
    pthread_mutex_unlock(&t->lock);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        json_decref(root);
        return -1;
    }
    json_t *start = json_object_get(root, "log_start_offset");
    if (json_is_integer(start))
        p->log_start_offset = json_integer_value(start);
    char why[256] = "";
    struct tiered_segment *list = NULL;
    size_t n = 0;
    int rc = parse_segments(segs, &list, &n, why, sizeof why);
    json_decref(root);
    if (rc != 0) {
        snprintf(err, errlen, "%s: %s", path, why);
        for (size_t i = 0; i < n; i++)
            tiered_segment_free(&list[i]);
        free(list);
        return -1;
    }
    for (size_t i = 0; i < p->count; i++)
        tiered_segment_free(&p->segs[i]);
    free(p->segs);
    p->segs = list;
    p->count = p->cap = n;
    return 0;
}

int tiered_metadata_load_all(struct tiered *t, char *err, size_t errlen)
{
    DIR *d = opendir(t->meta_dir);
    if (!d) {
        snprintf(err, errlen, "cannot read %s: %s", t->meta_dir, strerror(errno));
        return -1;
    }
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue; /* .tmp files are a save cut short: the old file stands */
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", t->meta_dir, e->d_name);
        rc = load_file(t, path, err, errlen);
    }
    closedir(d);
    return rc;
}
