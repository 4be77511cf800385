#include "server/storage.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/meta_properties.h"
#include "config/uuid.h"

#define MAX_STORAGE_DIRS 64

size_t storage_dirs(const struct broker_config *cfg, const char **out, size_t cap)
{
    size_t n_logs = 0, n = 0;
    const char *const *logs = config_log_dirs(cfg, &n_logs);
    for (size_t i = 0; i < n_logs && n < cap; i++)
        out[n++] = logs[i];
    const char *meta = config_get_string(cfg, "metadata.log.dir");
    bool listed = false;
    for (size_t i = 0; meta && meta[0] && i < n; i++)
        listed = listed || strcmp(out[i], meta) == 0;
    if (meta && meta[0] && !listed && n < cap)
        out[n++] = meta;
    return n;
}

int storage_require_formatted(const struct broker_config *cfg, char *err, size_t errlen)
{
    const char *dirs[MAX_STORAGE_DIRS];
    size_t n = storage_dirs(cfg, dirs, MAX_STORAGE_DIRS);
    return meta_properties_require(dirs, n, err, errlen);
}

static int random_uuid(void)
{
    uint8_t uuid[16];
    char text[UUID_BASE64URL_LEN + 1];
    if (uuid_random(uuid) < 0) {
        fprintf(stderr, "cairnd random-uuid: no random bytes from the kernel\n");
        return 1;
    }
    uuid_to_base64url(uuid, text);
    printf("%s\n", text);
    return 0;
}

static void format_usage(FILE *to)
{
    fprintf(to, "usage: cairnd format --config <file> --cluster-id <id> [--ignore-formatted] [--override key=value]...\n"
                "  -c, --config <file>      the node's server.properties\n"
                "  -t, --cluster-id <id>    the cluster id (cairnd random-uuid prints a new one)\n"
                "  -g, --ignore-formatted   skip dirs already formatted with this id instead of failing\n");
}

static int format(int argc, char **argv)
{
    const char *cluster_id = NULL;
    bool ignore_formatted = false;
    /* What config_load reads: the program name, --config and --override. */
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    if (!rest)
        return 1;
    int n_rest = 0;
    rest[n_rest++] = "cairnd format";
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            format_usage(stdout);
            free(rest);
            return 0;
        }
        if (strcmp(argv[i], "--ignore-formatted") == 0 || strcmp(argv[i], "-g") == 0) {
            ignore_formatted = true;
        } else if (strcmp(argv[i], "--cluster-id") == 0 || strcmp(argv[i], "-t") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "cairnd format: %s expects a cluster id\n", argv[i]);
                free(rest);
                return 2;
            }
            cluster_id = argv[++i];
        } else if (strncmp(argv[i], "--cluster-id=", 13) == 0) {
            cluster_id = argv[i] + 13;
        } else {
            rest[n_rest++] = argv[i];
        }
    }
    rest[n_rest] = NULL;
    if (!cluster_id) {
        fprintf(stderr, "cairnd format: --cluster-id is required\n");
        format_usage(stderr);
        free(rest);
        return 2;
    }
    char err[1024] = "";
    struct broker_config *cfg = NULL;
    int rc = config_load(n_rest, rest, &cfg, err, sizeof err);
    free(rest);
    if (rc != 0) {
        if (rc != 1)
            fprintf(stderr, "cairnd format: %s\n", err);
        return rc == 1 ? 0 : 2;
    }
    const char *configured = config_get_string(cfg, "cluster.id");
    if (configured && configured[0] && strcmp(configured, cluster_id) != 0) {
        fprintf(stderr, "cairnd format: the config sets cluster.id %s but --cluster-id is %s\n", configured, cluster_id);
        config_free(cfg);
        return 1;
    }
    const char *dirs[MAX_STORAGE_DIRS];
    size_t n = storage_dirs(cfg, dirs, MAX_STORAGE_DIRS);
    bool written[MAX_STORAGE_DIRS];
    int32_t node_id = config_node_id(cfg);
    rc = meta_properties_format(dirs, n, node_id, cluster_id, ignore_formatted, written, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "cairnd format: %s\n", err);
        config_free(cfg);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        printf("%s %s (cluster.id %s, node.id %d)\n", written[i] ? "Formatted" : "Already formatted:", dirs[i],
               cluster_id, node_id);
    config_free(cfg);
    return 0;
}

int storage_command(int argc, char **argv)
{
    if (argc < 2)
        return -1;
    if (strcmp(argv[1], "random-uuid") == 0)
        return random_uuid();
    if (strcmp(argv[1], "format") == 0)
        return format(argc, argv);
    return -1;
}
