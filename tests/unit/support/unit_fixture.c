#include "support/unit_fixture.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/topic_config.h"
#include "log/log_config.h"

/* The broker's own topic config check, so internal topics' configs must pass it. */
static int unit_fixture_validate_topic_config(void *ctx, const char *key, const char *value, char *err, size_t errlen)
{
    (void)ctx;
    return topic_config_validate(key, value, err, errlen);
}

int unit_fixture_init(struct unit_fixture *f, const char *prefix)
{
    memset(f, 0, sizeof *f);
    int n = snprintf(f->dir, sizeof f->dir, "/tmp/%s-XXXXXX", prefix);
    if (n < 0 || (size_t)n >= sizeof f->dir || !mkdtemp(f->dir)) {
        f->dir[0] = '\0';
        return -1;
    }
    f->endpoint = (struct metadata_endpoint){"PLAINTEXT", "localhost", 9092, 0};
    return 0;
}

void unit_fixture_open_logs_in(struct unit_fixture *f, const char *log_dir)
{
    char err[256] = "";
    struct metadata_store_options mopts = {
        .dir = f->dir,
        .node_id = 1,
        .cluster_id = UNIT_FIXTURE_CLUSTER_ID,
        .endpoints = &f->endpoint,
        .endpoint_count = 1,
        .default_num_partitions = 1,
        .default_replication_factor = 1,
        .validate_topic_config = unit_fixture_validate_topic_config,
    };
    if (metadata_store_open(&mopts, &f->metadata, err, sizeof err) != 0)
        fail_msg("metadata store: %s", err);
    struct log_config defaults;
    log_config_defaults(&defaults);
    struct log_manager_config mcfg;
    log_manager_config_defaults(&mcfg);
    mcfg.background_thread = false;
    const char *dirs[] = {log_dir};
    if (log_manager_open(dirs, 1, &defaults, &mcfg, &f->logs, err, sizeof err) != 0)
        fail_msg("log manager: %s", err);
}

void unit_fixture_open(struct unit_fixture *f)
{
    unit_fixture_open_logs_in(f, f->dir);
}

void unit_fixture_close(struct unit_fixture *f)
{
    if (f->logs)
        log_manager_close(f->logs, false);
    f->logs = NULL;
    if (f->metadata)
        metadata_store_close(f->metadata);
    f->metadata = NULL;
}

void unit_fixture_reopen(struct unit_fixture *f)
{
    unit_fixture_close(f);
    unit_fixture_open(f);
}

bool unit_fixture_is_open(const struct unit_fixture *f)
{
    return f->metadata || f->logs;
}

static int unit_fixture_remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    if (remove(path) != 0) {
        fprintf(stderr, "unit fixture: cannot remove %s\n", path);
        return -1;
    }
    return 0;
}

int unit_fixture_destroy(struct unit_fixture *f)
{
    unit_fixture_close(f);
    if (!f->dir[0])
        return 0;
    /* Depth first, not following links: a link is removed, never what it points at. */
    int rc = nftw(f->dir, unit_fixture_remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    f->dir[0] = '\0';
    return rc == 0 ? 0 : -1;
}

int unit_fixture_setup(void **state, size_t size, const char *prefix)
{
    if (size < sizeof(struct unit_fixture))
        return -1;
    struct unit_fixture *f = calloc(1, size);
    if (!f || unit_fixture_init(f, prefix) != 0) {
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

int unit_fixture_teardown(void *fixture)
{
    int rc = unit_fixture_destroy(fixture);
    free(fixture);
    return rc;
}
