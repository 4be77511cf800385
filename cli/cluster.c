/* cairn cluster info: cluster id, brokers and the controller, from Metadata. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

static const char cluster_usage[] =
    "usage: cairn cluster info [--format json]\n"
    "  shows the cluster id, the controller id and every broker with host:port and rack\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

static int cluster_info(const struct cli_conn *c, bool json)
{
    const struct metadata_response *m = c->meta;
    const char *id = c->meta_version >= 2 ? cli_str(m->cluster_id) : "";
    if (json) {
        json_t *brokers = json_array();
        for (int32_t i = 0; i < m->brokers_count; i++) {
            const struct metadata_response_metadata_response_broker *b = &m->brokers[i];
            json_array_append_new(brokers,
                                  json_pack("{s:i, s:s, s:i, s:s?}", "id", (int)b->node_id, "host", cli_str(b->host),
                                            "port", (int)b->port, "rack", b->rack.len < 0 ? NULL : cli_str(b->rack)));
        }
        return cli_json_print(
            json_pack("{s:s, s:i, s:o}", "cluster_id", id, "controller_id", (int)m->controller_id, "brokers", brokers));
    }
    printf("CLUSTER     %s\nCONTROLLER  %d\n\nBROKERS\n", id, (int)m->controller_id);
    static const char *const headers[] = {"ID", "HOST:PORT", "RACK"};
    struct cli_table *t = cli_table_new(3, headers);
    for (int32_t i = 0; i < m->brokers_count; i++) {
        const struct metadata_response_metadata_response_broker *b = &m->brokers[i];
        char idtxt[24], hp[300];
        snprintf(idtxt, sizeof(idtxt), "%d%s", (int)b->node_id, b->node_id == m->controller_id ? "*" : "");
        snprintf(hp, sizeof(hp), "%s:%d", cli_str(b->host), (int)b->port);
        cli_table_add(t, idtxt, hp, b->rack.len < 0 ? "-" : cli_str(b->rack));
    }
    cli_table_print(t);
    return CLI_EXIT_OK;
}

int cli_cluster_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(cluster_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "info") != 0)
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'cluster %s'\n%s", argv[1], cluster_usage);
    struct cli_settings s;
    char *pos[1];
    int npos;
    int rc = cli_parse(argc - 1, argv + 1, cluster_usage, "", NULL, NULL, NULL, &s, pos, &npos, 0);
    if (rc >= 0)
        return rc;
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    rc = cluster_info(&c, s.json);
    cli_close(&c);
    return rc;
}
