/* The store the metadata tests open: a fresh temporary directory, node 1
 * with one PLAINTEXT endpoint, and the cluster id every test expects.
 * Header-only so each test executable links only its module. */
#ifndef CAIRN_TESTS_METADATA_STORE_FIXTURE_H
#define CAIRN_TESTS_METADATA_STORE_FIXTURE_H
#include <stdio.h>
#include <stdlib.h>

#include "metadata/metadata_log.h"
#include "metadata/metadata_store.h"
#include "metadata/metadata_store_internal.h"

struct fixture {
    char dir[64];
    char log_dir[128]; /* dir/__cluster_metadata-0 */
    struct metadata_endpoint endpoints[1];
    struct metadata_store_options opts;
    struct metadata_store *store;
};

static inline void open_store(struct fixture *f)
{
    char err[512] = "";
    if (metadata_store_open(&f->opts, &f->store, err, sizeof(err)) != 0)
        fail_msg("open failed: %s", err);
}

/* Closes the store once its snapshot writer has acted on every commit so
 * far: what a test wrote is in the snapshots it looks for after. */
static inline void close_store(struct fixture *f)
{
    if (f->store)
        metadata_snapshot_writer_flush(f->store);
    metadata_store_close(f->store);
    f->store = NULL;
}

/* A fixture whose options the caller may adjust before open_store; dir_template
 * ends in XXXXXX. NULL when the directory cannot be made. */
static inline struct fixture *fixture_new(const char *dir_template)
{
    struct fixture *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    snprintf(f->dir, sizeof(f->dir), "%s", dir_template);
    if (!mkdtemp(f->dir)) {
        free(f);
        return NULL;
    }
    snprintf(f->log_dir, sizeof(f->log_dir), "%s/%s", f->dir, METADATA_LOG_TOPIC_DIR);
    f->endpoints[0] = (struct metadata_endpoint){"PLAINTEXT", "localhost", 9092, 0};
    f->opts = (struct metadata_store_options){
        .dir = f->dir,
        .node_id = 1,
        .cluster_id = "q1Sh-9_ISia_zwGINzRvyQ",
        .endpoints = f->endpoints,
        .endpoint_count = 1,
    };
    return f;
}

/* Closes the store and removes the directory; -1 when that fails. */
static inline int fixture_free(struct fixture *f)
{
    metadata_store_close(f->store);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    int rc = system(cmd) == 0 ? 0 : -1;
    free(f);
    return rc;
}

#endif
