/* Node identity kept in every data directory as Kafka's meta.properties:
 *   version=1, node.id=N, cluster.id=<uuid>, directory.id=<uuid>
 * Written once on first start (temp file, fsync, rename) and checked on
 * every later start. Called from the start-up thread only. */
#ifndef CAIRN_CONFIG_META_PROPERTIES_H
#define CAIRN_CONFIG_META_PROPERTIES_H
#include "config/uuid.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define META_PROPERTIES_FILE "meta.properties"

struct meta_properties {
    int version;
    int32_t node_id;
    char cluster_id[UUID_BASE64URL_LEN + 1];
    char directory_id[UUID_BASE64URL_LEN + 1]; /* "" when the file has none */
};

/* Read dir/meta.properties. Returns 0, 1 when the file does not exist, or
 * -1 with err filled (unreadable, malformed, unsupported version). */
int meta_properties_read(const char *dir, struct meta_properties *out, char *err, size_t errlen);

/* Write dir/meta.properties atomically and durably. */
int meta_properties_write(const char *dir, const struct meta_properties *props, char *err, size_t errlen);

/* Make every dir hold a meta.properties agreeing with node_id: create
 * missing dirs and files, reuse the cluster id already on disk (or
 * expected_cluster_id, or a new random one). Stops with an error when a
 * file names another node id, dirs disagree on the cluster id, the cluster
 * id differs from expected_cluster_id (may be NULL), or two dirs share a
 * directory id. cluster_id_out receives the cluster id in use. */
int meta_properties_ensure(const char *const *dirs, size_t count, int32_t node_id, const char *expected_cluster_id,
                           char cluster_id_out[UUID_BASE64URL_LEN + 1], char *err, size_t errlen);

/* What kafka-storage format does: writes meta.properties (version 1,
 * node.id, cluster.id, a new directory.id) into every dir, creating it.
 * Every dir is checked before any is written: one formatted with another
 * cluster.id or node.id is refused, one formatted with these too unless
 * ignore_formatted (then it is left as it is). written[i] (may be NULL)
 * says which dirs got a new file. */
int meta_properties_format(const char *const *dirs, size_t count, int32_t node_id, const char *cluster_id,
                           bool ignore_formatted, bool *written, char *err, size_t errlen);

/* A node of a quorum starts only on formatted dirs: -1 with err naming the
 * first dir without a meta.properties (or one that does not read). */
int meta_properties_require(const char *const *dirs, size_t count, char *err, size_t errlen);

#endif
