/* cairn completion bash|zsh, and the command list of cairn --help: both
 * from the command table main() dispatches on. The scripts complete
 * commands and subcommands from the table, the common flags from args.c,
 * and a subcommand's own flags from its --help text at completion time,
 * so no list is kept twice. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

void cli_commands_help(FILE *out, const struct cli_command *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char subs[256];
        size_t used = 0;
        subs[0] = '\0';
        for (const char *p = cmds[i].subcommands; *p && used + 4 < sizeof(subs); p++)
            used += (size_t)snprintf(subs + used, sizeof(subs) - used, *p == ' ' ? " | " : "%c", *p);
        if (cmds[i].note)
            fprintf(out, "  %-10s %-34s (%s)\n", cmds[i].name, subs, cmds[i].note);
        else
            fprintf(out, "  %-10s %s\n", cmds[i].name, subs);
    }
}

static void print_words(const struct cli_command *cmds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        printf("%s ", cmds[i].name);
    printf("help");
}

/* A shell command printing the common flags and those named in
 * `cairn CMD SUB --help` (run by the shell when the user completes a
 * flag), one a line, each once; run is how the shell names CMD SUB. */
static void print_flags_command(const char *run)
{
    printf("$( (printf '%%s\\n'");
    const char *const *f = cli_common_flags();
    for (size_t i = 0; f[i]; i++)
        printf(" %s", f[i]);
    printf("; %s --help 2>/dev/null | grep -o -e '--[a-z][a-z-]*') | sort -u)", run);
}

static void print_bash(const struct cli_command *cmds, size_t n)
{
    printf("# bash completion for cairn, printed by `cairn completion bash`.\n"
           "# Load it with: source <(cairn completion bash)\n"
           "_cairn()\n"
           "{\n"
           "    local cur=${COMP_WORDS[COMP_CWORD]} prev=\n"
           "    (( COMP_CWORD > 0 )) && prev=${COMP_WORDS[COMP_CWORD-1]}\n"
           "    case $prev in\n"
           "        --format) COMPREPLY=($(compgen -W \"text json\" -- \"$cur\")); return ;;\n"
           "        --profile) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
           "    esac\n"
           "    if (( COMP_CWORD == 1 )); then\n"
           "        COMPREPLY=($(compgen -W \"");
    print_words(cmds, n);
    printf("\" -- \"$cur\"))\n"
           "        return\n"
           "    fi\n"
           "    local subs=\n"
           "    case ${COMP_WORDS[1]} in\n");
    for (size_t i = 0; i < n; i++)
        printf("        %s) subs=\"%s\" ;;\n", cmds[i].name, cmds[i].subcommands);
    printf("    esac\n"
           "    if (( COMP_CWORD == 2 )); then\n"
           "        COMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
           "        return\n"
           "    fi\n"
           "    if [[ $cur == -* ]]; then\n"
           "        local flags=\"");
    print_flags_command("\"${COMP_WORDS[0]}\" \"${COMP_WORDS[1]}\" \"${COMP_WORDS[2]}\"");
    printf("\"\n"
           "        COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
           "    fi\n"
           "}\n"
           "complete -o default -F _cairn cairn\n");
}

static void print_zsh(const struct cli_command *cmds, size_t n)
{
    printf("#compdef cairn\n"
           "# zsh completion for cairn, printed by `cairn completion zsh`.\n"
           "# Install it as _cairn in a directory of $fpath, or load it with: source <(cairn completion zsh)\n"
           "_cairn() {\n"
           "    local -a subs flags\n"
           "    case ${words[CURRENT-1]} in\n"
           "        --format) compadd -- text json; return ;;\n"
           "        --profile) _files; return ;;\n"
           "    esac\n"
           "    if (( CURRENT == 2 )); then\n"
           "        compadd -- ");
    print_words(cmds, n);
    printf("\n"
           "        return\n"
           "    fi\n"
           "    case ${words[2]} in\n");
    for (size_t i = 0; i < n; i++)
        printf("        %s) subs=(%s) ;;\n", cmds[i].name, cmds[i].subcommands);
    printf("    esac\n"
           "    if (( CURRENT == 3 )); then\n"
           "        compadd -a subs\n"
           "        return\n"
           "    fi\n"
           "    if [[ ${words[CURRENT]} == -* ]]; then\n"
           "        flags=(${(f)\"");
    print_flags_command("${words[1]} ${words[2]} ${words[3]}");
    printf("\"})\n"
           "        compadd -a flags\n"
           "        return\n"
           "    fi\n"
           "    _files\n"
           "}\n"
           "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
           "    _cairn \"$@\"\n"
           "else\n"
           "    compdef _cairn cairn\n"
           "fi\n");
}

static const char completion_usage[] =
    "usage: cairn completion bash|zsh\n"
    "  prints a completion script for the shell:\n"
    "    bash: source <(cairn completion bash)   (in ~/.bashrc), or save it in /etc/bash_completion.d/cairn\n"
    "    zsh:  cairn completion zsh > \"${fpath[1]}/_cairn\"   (then compinit), or source <(cairn completion zsh)\n";

int cli_completion_main(int argc, char **argv, const struct cli_command *cmds, size_t n)
{
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        fputs(completion_usage, stdout);
        return CLI_EXIT_OK;
    }
    if (argc == 3 && (!strcmp(argv[2], "-h") || !strcmp(argv[2], "--help"))) {
        fputs(completion_usage, stdout);
        return CLI_EXIT_OK;
    }
    if (argc != 2)
        return cli_fail(CLI_EXIT_USAGE, "completion wants one shell, bash or zsh\n%s", completion_usage);
    if (!strcmp(argv[1], "bash"))
        print_bash(cmds, n);
    else if (!strcmp(argv[1], "zsh"))
        print_zsh(cmds, n);
    else
        return cli_fail(CLI_EXIT_USAGE, "completion wants bash or zsh, got '%s'\n%s", argv[1], completion_usage);
    return CLI_EXIT_OK;
}
