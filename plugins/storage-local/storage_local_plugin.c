/* The storage-local plugin: tiered storage's remote store in a directory.
 * Layout, one folder per partition and topic id so a recreated topic of
 * the same name never mixes with the old one:
 *   <dir>/<topic>-<partition>/<topic-id hex>/<base offset>-<segment-id hex>.<kind>
 * with kind log, index, timeindex, txnindex, snapshot or
 * leader-epoch-checkpoint (Kafka's local names). */
#include "storage_local_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sl_plugin {
    const struct cairn_host *host;
    struct sl_store store;
    struct cairn_metric *bytes_written;
    struct cairn_metric *bytes_read;
    struct cairn_metric *errors;
};

static void sl_count(struct sl_plugin *plugin, struct cairn_metric *metric, int64_t delta)
{
    if (metric)
        plugin->host->metric_add(metric, delta);
}

static int sl_copy_segment(void *instance, const struct cairn_remote_segment *segment,
                           const struct cairn_remote_segment_files *files, uint8_t *custom_metadata,
                           size_t *custom_metadata_len, char *err, size_t errlen)
{
    (void)custom_metadata;
    struct sl_plugin *plugin = instance;
    if (custom_metadata_len)
        *custom_metadata_len = 0; /* the path follows from the segment itself */
    if (!segment || !files || !files->log_path) {
        snprintf(err, errlen, "copy_segment without a segment or its log file");
        return CAIRN_INVALID;
    }
    char dir[4096], probe[4300];
    int status = sl_segment_dir(&plugin->store, segment, dir, sizeof(dir));
    if (status == CAIRN_OK)
        status = sl_segment_path(&plugin->store, segment, SL_LOG, probe, sizeof(probe));
    if (status != CAIRN_OK) {
        snprintf(err, errlen, "segment of '%s' at offset %lld cannot name a file", segment->topic ? segment->topic : "",
                 (long long)segment->start_offset);
        return status;
    }
    status = sl_make_dirs(&plugin->store, dir, err, errlen);
    if (status != CAIRN_OK)
        goto failed;
    const char *sources[SL_KIND_COUNT] = {
        [SL_OFFSET_INDEX] = files->offset_index_path,
        [SL_TIME_INDEX] = files->time_index_path,
        [SL_TXN_INDEX] = files->txn_index_path,
        [SL_PRODUCER_SNAPSHOT] = files->producer_snapshot_path,
        [SL_LOG] = files->log_path,
    };
    for (int kind = 0; kind < SL_KIND_COUNT; kind++) {
        char path[4300];
        sl_segment_path(&plugin->store, segment, (enum sl_kind)kind, path, sizeof(path));
        if (kind == SL_LEADER_EPOCH) {
            if (!files->leader_epoch_checkpoint)
                continue;
            status = sl_put_file(&plugin->store, path, NULL, files->leader_epoch_checkpoint,
                                 files->leader_epoch_checkpoint_len, false, err, errlen);
        } else {
            if (!sources[kind])
                continue;
            /* One directory fsync makes every index's rename durable
             * before the .log is renamed; one more after the .log's. */
            if (kind == SL_LOG)
                status = sl_sync_dir(&plugin->store, dir, err, errlen);
            if (status == CAIRN_OK)
                status = sl_put_file(&plugin->store, path, sources[kind], NULL, 0, kind == SL_LOG, err, errlen);
        }
        if (status != CAIRN_OK)
            goto failed;
        struct stat st;
        if (stat(path, &st) == 0)
            sl_count(plugin, plugin->bytes_written, (int64_t)st.st_size);
    }
    return CAIRN_OK;
failed:
    sl_count(plugin, plugin->errors, 1);
    return status;
}

static int sl_fetch_segment(void *instance, const struct cairn_remote_segment *segment, int64_t start_position,
                            int64_t end_position, const struct cairn_byte_sink *sink, char *err, size_t errlen)
{
    struct sl_plugin *plugin = instance;
    char path[4300];
    if (!segment || !sink || sl_segment_path(&plugin->store, segment, SL_LOG, path, sizeof(path)) != CAIRN_OK) {
        snprintf(err, errlen, "fetch_segment of an unnamed segment");
        return CAIRN_INVALID;
    }
    int status = sl_stream_file(path, start_position, end_position, sink, err, errlen);
    if (status != CAIRN_OK)
        sl_count(plugin, plugin->errors, 1);
    else
        sl_count(plugin, plugin->bytes_read,
                 end_position >= 0 ? end_position - start_position : 0 /* to the end: size unknown here */);
    return status;
}

static int sl_kind_of_index(int32_t index_type, enum sl_kind *kind)
{
    switch (index_type) {
    case CAIRN_REMOTE_INDEX_OFFSET:
        *kind = SL_OFFSET_INDEX;
        return CAIRN_OK;
    case CAIRN_REMOTE_INDEX_TIMESTAMP:
        *kind = SL_TIME_INDEX;
        return CAIRN_OK;
    case CAIRN_REMOTE_INDEX_PRODUCER_SNAPSHOT:
        *kind = SL_PRODUCER_SNAPSHOT;
        return CAIRN_OK;
    case CAIRN_REMOTE_INDEX_TRANSACTION:
        *kind = SL_TXN_INDEX;
        return CAIRN_OK;
    case CAIRN_REMOTE_INDEX_LEADER_EPOCH:
        *kind = SL_LEADER_EPOCH;
        return CAIRN_OK;
    default:
        return CAIRN_NOT_FOUND; /* a type newer than this plugin */
    }
}

static int sl_fetch_index(void *instance, const struct cairn_remote_segment *segment, int32_t index_type,
                          const struct cairn_byte_sink *sink, char *err, size_t errlen)
{
    struct sl_plugin *plugin = instance;
    enum sl_kind kind;
    if (sl_kind_of_index(index_type, &kind) != CAIRN_OK) {
        snprintf(err, errlen, "unknown index type %d", (int)index_type);
        return CAIRN_NOT_FOUND;
    }
    char path[4300];
    if (!segment || !sink || sl_segment_path(&plugin->store, segment, kind, path, sizeof(path)) != CAIRN_OK) {
        snprintf(err, errlen, "fetch_index of an unnamed segment");
        return CAIRN_INVALID;
    }
    int status = sl_stream_file(path, 0, -1, sink, err, errlen);
    if (status != CAIRN_OK && status != CAIRN_NOT_FOUND)
        sl_count(plugin, plugin->errors, 1);
    return status;
}

static int sl_delete_segment(void *instance, const struct cairn_remote_segment *segment, char *err, size_t errlen)
{
    struct sl_plugin *plugin = instance;
    char dir[4096];
    if (!segment || sl_segment_dir(&plugin->store, segment, dir, sizeof(dir)) != CAIRN_OK) {
        snprintf(err, errlen, "delete_segment of an unnamed segment");
        return CAIRN_INVALID;
    }
    /* The .log first: without it the rest is never read. Each object's
     * .tmp too: a copy cut short by a crash leaves one, and the broker
     * deletes that unfinished copy by this call. */
    for (int kind = SL_KIND_COUNT - 1; kind >= 0; kind--) {
        char paths[2][4320];
        if (sl_segment_path(&plugin->store, segment, (enum sl_kind)kind, paths[0], sizeof(paths[0])) != CAIRN_OK ||
            snprintf(paths[1], sizeof(paths[1]), "%s.tmp", paths[0]) >= (int)sizeof(paths[1])) {
            snprintf(err, errlen, "delete_segment: no path for the segment");
            return CAIRN_INVALID;
        }
        for (int i = 0; i < 2; i++) {
            if (unlink(paths[i]) != 0 && errno != ENOENT) {
                int error = errno;
                snprintf(err, errlen, "unlink %s: %s", paths[i], strerror(error));
                sl_count(plugin, plugin->errors, 1);
                return sl_status_of_errno(error);
            }
        }
    }
    int status = sl_sync_dir(&plugin->store, dir, err, errlen);
    if (status == CAIRN_NOT_FOUND)
        return CAIRN_OK; /* never copied here */
    /* Empty folders go too, so a deleted topic leaves nothing; rmdir
     * refuses a folder that still holds other segments. */
    if (status == CAIRN_OK && rmdir(dir) == 0) {
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            (void)rmdir(dir);
        }
    }
    return status;
}

static int sl_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    const char *dir = NULL;
    bool fsync_on = true;
    char why[256] = "";
    if (host->config_string(host->ctx, "dir", &dir, why, sizeof(why)) != CAIRN_OK || !dir || !dir[0]) {
        snprintf(err, errlen, "config dir: %s", why[0] ? why : "must name a directory");
        return CAIRN_ERROR;
    }
    if (host->config_bool(host->ctx, "fsync", &fsync_on, why, sizeof(why)) != CAIRN_OK) {
        snprintf(err, errlen, "config fsync: %s", why);
        return CAIRN_ERROR;
    }
    if (dir[0] != '/') {
        snprintf(err, errlen, "config dir: '%s' is not an absolute path", dir);
        return CAIRN_ERROR;
    }
    struct sl_plugin *plugin = calloc(1, sizeof(*plugin));
    if (plugin)
        plugin->store.root = strdup(dir);
    if (!plugin || !plugin->store.root) {
        free(plugin);
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    size_t len = strlen(plugin->store.root);
    while (len > 1 && plugin->store.root[len - 1] == '/')
        plugin->store.root[--len] = '\0';
    plugin->store.fsync = fsync_on;
    plugin->store.copy_range = sl_copy_range_default;
    plugin->host = host;
    struct stat st;
    if (mkdir(plugin->store.root, 0755) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "config dir: cannot create %s: %s", plugin->store.root, strerror(errno));
    } else if (stat(plugin->store.root, &st) != 0 || !S_ISDIR(st.st_mode) || access(plugin->store.root, W_OK) != 0) {
        snprintf(err, errlen, "config dir: %s is not a writable directory", plugin->store.root);
    } else {
        plugin->bytes_written = host->counter(host->ctx, "bytes_written", "Bytes written to the store");
        plugin->bytes_read = host->counter(host->ctx, "bytes_read", "Bytes of ranged segment reads");
        plugin->errors = host->counter(host->ctx, "errors", "Failed store operations");
        host->log(host->ctx, CAIRN_LOG_INFO, "remote segments in %s%s", plugin->store.root,
                  fsync_on ? "" : " (fsync off)");
        *instance = plugin;
        return CAIRN_OK;
    }
    free(plugin->store.root);
    free(plugin);
    return CAIRN_ERROR;
}

static void sl_fini(void *instance)
{
    struct sl_plugin *plugin = instance;
    if (!plugin)
        return;
    free(plugin->store.root);
    free(plugin);
}

static const struct cairn_config_key sl_key_dir = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "dir",
    .type = CAIRN_CONFIG_STRING,
    .default_value = NULL,
    .doc = "Absolute path of the directory that holds remote segments (created when missing).",
};
static const struct cairn_config_key sl_key_fsync = {
    .struct_size = sizeof(struct cairn_config_key),
    .name = "fsync",
    .type = CAIRN_CONFIG_BOOL,
    .default_value = "true",
    .doc = "fsync each object and its directory before a copy counts as done; off only for tests.",
};

static const struct cairn_config_key *const sl_config_keys[] = {
    &sl_key_dir,
    &sl_key_fsync,
};

static const struct cairn_remote_storage_vtable sl_vtable = {
    .struct_size = sizeof(struct cairn_remote_storage_vtable),
    .copy_segment = sl_copy_segment,
    .fetch_segment = sl_fetch_segment,
    .fetch_index = sl_fetch_index,
    .delete_segment = sl_delete_segment,
};

static const struct cairn_plugin_descriptor sl_descriptor = {
    .struct_size = sizeof(struct cairn_plugin_descriptor),
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "storage-local",
    .version = "1.0.0",
    .description = "Tiered storage in a local or mounted directory",
    .capabilities = CAIRN_CAP_REMOTE_STORAGE,
    .config_keys = sl_config_keys,
    .config_key_count = sizeof(sl_config_keys) / sizeof(sl_config_keys[0]),
    .init = sl_init,
    .fini = sl_fini,
    .remote_storage = &sl_vtable,
};

CAIRN_PLUGIN_DEFINE(sl_descriptor)
