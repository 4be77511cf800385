/* cairn: a Kafka protocol command-line tool for Cairn (and Kafka) clusters. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int completion_main(int argc, char **argv);

/* The commands: dispatched on, listed by --help and completed by the
 * scripts `cairn completion` prints. */
static const struct cli_command commands[] = {
    {"topic", "create list describe delete add-partitions alter-config", NULL, cli_topic_main},
    {"cluster", "info", NULL, cli_cluster_main},
    {"group", "list describe delete reset-offsets delete-offsets", NULL, cli_group_main},
    {"acl", "create list delete", NULL, cli_acl_main},
    {"user", "create list delete", "SCRAM credentials", cli_user_main},
    {"quota", "set describe", "client quotas", cli_quota_main},
    {"quorum", "status", "KRaft controller quorum", cli_quorum_main},
    {"config", "describe alter", "configs of --broker ID, --broker-defaults or --topic T", cli_config_main},
    {"leader", "elect", "preferred or unclean leader election", cli_leader_main},
    {"reassign", "start cancel list verify generate", "partition reassignment", cli_reassign_main},
    {"partition", "reassign elect-leaders", "cairn reassign and cairn leader elect by Kafka's names",
     cli_partition_main},
    {"produce", "", "TOPIC: records from standard input, one per line", cli_produce_main},
    {"consume", "", "TOPIC: records to standard output", cli_consume_main},
    {"completion", "bash zsh", "shell completion script", completion_main},
};
#define COMMAND_COUNT (sizeof(commands) / sizeof(commands[0]))

static int completion_main(int argc, char **argv)
{
    return cli_completion_main(argc, argv, commands, COMMAND_COUNT);
}

static const char usage_flags[] =
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
        FILE *out = argc < 2 ? stderr : stdout;
        fputs("usage: cairn <command> <subcommand> [flags]\n\ncommands:\n", out);
        cli_commands_help(out, commands, COMMAND_COUNT);
        fputs(usage_flags, out);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    return cli_fail(CLI_EXIT_USAGE, "unknown command '%s'; see cairn --help", argv[1]);
}
