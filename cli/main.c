/* cairn: a Kafka protocol command-line tool for Cairn (and Kafka) clusters. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: cairn <command> <subcommand> [flags]\n"
    "\n"
    "commands:\n"
    "  topic    create | list | describe | delete | add-partitions | alter-config\n"
    "  cluster  info\n"
    "  group    list | describe\n"
    "  acl      create | list | delete\n"
    "  user     create | list | delete      (SCRAM credentials)\n"
    "  quota    set | describe              (client quotas)\n"
    "  quorum   status                      (KRaft controller quorum)\n"
    "  config   describe | alter            (broker configs: --broker ID or --broker-defaults)\n"
    "  leader   elect                       (preferred or unclean leader election)\n"
    "  reassign start | cancel | list       (partition reassignment)\n"
    "\n"
    "flags every command takes:\n"
    "  -b, --brokers host:port,...  bootstrap brokers (else CAIRN_BROKERS, else the profile)\n"
    "      --profile FILE           librdkafka-style key=value file (default ~/.config/cairn/profile)\n"
    "  -X key=value                 a profile key (security.protocol=ssl|sasl_plaintext|sasl_ssl, ssl.ca.location,\n"
    "                               sasl.mechanism=PLAIN|SCRAM-SHA-256|SCRAM-SHA-512, sasl.username, sasl.password,\n"
    "                               ...); also CAIRN_<KEY>\n"
    "      --format text|json       output format of read commands\n"
    "      --timeout MS             request timeout (default 10000)\n"
    "  -h, --help                   help for any command\n"
    "\n"
    "exit codes: 0 ok, 1 Kafka error from the broker, 2 usage error, 3 no broker reachable\n";

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "topic"))
        return cli_topic_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "cluster"))
        return cli_cluster_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "group"))
        return cli_group_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "acl"))
        return cli_acl_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "user"))
        return cli_user_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "quota"))
        return cli_quota_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "quorum"))
        return cli_quorum_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "leader"))
        return cli_leader_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "reassign"))
        return cli_reassign_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "config"))
        return cli_config_main(argc - 1, argv + 1);
    return cli_fail(CLI_EXIT_USAGE, "unknown command '%s'; see cairn --help", argv[1]);
}
