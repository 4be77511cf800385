/* cairn partition reassign|elect-leaders: the partition commands under the
 * names kafka-reassign-partitions.sh and kafka-leader-election.sh users look
 * for; they run `cairn reassign` and `cairn leader elect` unchanged. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

#define MAX_ARGS 256

static const char partition_usage[] =
    "usage: cairn partition <subcommand> [flags]\n"
    "  reassign start|cancel|list|verify|generate [flags]   partition reassignment (as cairn reassign)\n"
    "  elect-leaders --type preferred|unclean (--all | --topic T [--partition N])\n"
    "                                                       leader election (as cairn leader elect)\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

int cli_partition_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(partition_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "reassign"))
        return cli_reassign_main(argc - 1, argv + 1);
    if (strcmp(argv[1], "elect-leaders") != 0)
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'partition %s'\n%s", argv[1], partition_usage);
    /* `leader elect FLAGS...` is what cli_leader_main parses. */
    if (argc > MAX_ARGS)
        return cli_fail(CLI_EXIT_USAGE, "too many arguments (at most %d)", MAX_ARGS);
    char *leader_argv[MAX_ARGS + 2];
    leader_argv[0] = "leader";
    leader_argv[1] = "elect";
    for (int i = 2; i < argc; i++)
        leader_argv[i] = argv[i];
    leader_argv[argc] = NULL;
    return cli_leader_main(argc, leader_argv);
}
