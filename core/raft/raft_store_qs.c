/* The quorum-state file in Kafka's FileQuorumStateStore format. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "raft/raft_store.h"
#include "util/fs_util.h"

static int qs_path(const char *dir, char *path, size_t len, char *err, size_t errlen)
{
    if ((size_t)snprintf(path, len, "%s/%s", dir, RAFT_STORE_QUORUM_STATE_FILE) >= len) {
        snprintf(err, errlen, "quorum-state path too long under %s", dir);
        return -1;
    }
    return 0;
}

int raft_store_qs_write(const char *dir, const struct raft_store_qs *qs, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (qs_path(dir, path, sizeof path, err, errlen) != 0)
        return -1;
    json_t *root = json_object();
    json_t *voters = json_array();
    int bad = !root || !voters;
    bad |= json_object_set_new(root, "clusterId", json_string(qs->cluster_id));
    bad |= json_object_set_new(root, "leaderId", json_integer(qs->qs.leader_id));
    bad |= json_object_set_new(root, "leaderEpoch", json_integer(qs->qs.leader_epoch));
    bad |= json_object_set_new(root, "votedId", json_integer(qs->qs.voted_id));
    bad |= json_object_set_new(root, "appliedOffset", json_integer(qs->applied_offset));
    for (int i = 0; i < qs->n_voters && !bad; i++) {
        json_t *v = json_object();
        bad |= !v || json_object_set_new(v, "voterId", json_integer(qs->voters[i]));
        bad |= json_array_append_new(voters, v);
    }
    bad |= json_object_set_new(root, "currentVoters", voters);
    bad |= json_object_set_new(root, "data_version", json_integer(0));
    char *text = bad ? NULL : json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    if (!text) {
        snprintf(err, errlen, "out of memory writing %s", path);
        return -1;
    }
    /* durable: fsync of the file, rename, fsync of the directory */
    int rc = fs_replace_file(path, text, strlen(text), true, err, errlen);
    free(text);
    return rc == 0 ? 0 : -1;
}

/* An integer field within [min, max]; false when absent or out of range. */
static bool int_field(json_t *root, const char *name, int64_t min, int64_t max, int64_t *out)
{
    json_t *v = json_object_get(root, name);
    if (!json_is_integer(v))
        return false;
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return false;
    *out = (int64_t)x;
    return true;
}

static int parse(json_t *root, struct raft_store_qs *out, const char **bad_field)
{
    int64_t leader, epoch, voted, applied, version;
    if (!json_is_object(root)) {
        *bad_field = "the top level (not an object)";
        return -1;
    }
    if (!int_field(root, "data_version", 0, 0, &version)) {
        *bad_field = "data_version";
        return -1;
    }
    if (!int_field(root, "leaderId", -1, INT32_MAX, &leader)) {
        *bad_field = "leaderId";
        return -1;
    }
    if (!int_field(root, "leaderEpoch", 0, INT32_MAX, &epoch)) {
        *bad_field = "leaderEpoch";
        return -1;
    }
    if (!int_field(root, "votedId", -1, INT32_MAX, &voted)) {
        *bad_field = "votedId";
        return -1;
    }
    if (!int_field(root, "appliedOffset", -1, INT64_MAX, &applied)) {
        *bad_field = "appliedOffset";
        return -1;
    }
    json_t *cluster = json_object_get(root, "clusterId");
    if (cluster && !json_is_null(cluster) &&
        (!json_is_string(cluster) || json_string_length(cluster) >= sizeof out->cluster_id)) {
        *bad_field = "clusterId";
        return -1;
    }
    json_t *voters = json_object_get(root, "currentVoters");
    if (voters && !json_is_null(voters) && (!json_is_array(voters) || json_array_size(voters) > RAFT_MAX_VOTERS)) {
        *bad_field = "currentVoters";
        return -1;
    }
    memset(out, 0, sizeof *out);
    if (json_is_string(cluster))
        memcpy(out->cluster_id, json_string_value(cluster), json_string_length(cluster));
    out->qs = (struct raft_quorum_state){
        .leader_epoch = (int32_t)epoch, .voted_id = (int32_t)voted, .leader_id = (int32_t)leader};
    out->applied_offset = applied;
    size_t i;
    json_t *v;
    json_array_foreach(voters, i, v)
    {
        int64_t id;
        if (!json_is_object(v) || !int_field(v, "voterId", 0, INT32_MAX, &id)) {
            *bad_field = "currentVoters[].voterId";
            return -1;
        }
        out->voters[out->n_voters++] = (int32_t)id;
    }
    return 0;
}

int raft_store_qs_read(const char *dir, struct raft_store_qs *out, char *err, size_t errlen)
{
    char path[PATH_MAX];
    if (qs_path(dir, path, sizeof path, err, errlen) != 0)
        return -1;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        snprintf(err, errlen, "corrupt quorum state file %s: %s (line %d); refusing to start from an empty state", path,
                 jerr.text, jerr.line);
        return -1;
    }
    const char *bad = NULL;
    int rc = parse(root, out, &bad);
    json_decref(root);
    if (rc != 0) {
        snprintf(err, errlen, "corrupt quorum state file %s: bad or missing %s; refusing to start from an empty state",
                 path, bad);
        return -1;
    }
    return 1;
}
