/* Flag parsing shared by every command, and the profile file. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_parse_int(const char *text, long long min, long long max, long long *out)
{
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Applies one librdkafka-named property. Settings cairn cannot honour yet
 * (TLS, SASL) are refused rather than ignored: connecting in plaintext to
 * a cluster the file says is secured would be wrong. */
static int profile_apply(const char *path, int line, const char *key, const char *val, struct cli_settings *s)
{
    if (!strcmp(key, "bootstrap.servers") || !strcmp(key, "metadata.broker.list")) {
        snprintf(s->brokers, sizeof(s->brokers), "%s", val);
    } else if (!strcmp(key, "client.id")) {
        snprintf(s->client_id, sizeof(s->client_id), "%s", val);
    } else if (!strcmp(key, "request.timeout.ms") || !strcmp(key, "socket.timeout.ms")) {
        long long v;
        if (cli_parse_int(val, 1, 3600000, &v) < 0)
            return cli_fail(CLI_EXIT_USAGE, "%s:%d: %s must be milliseconds, got '%s'", path, line, key, val);
        s->timeout_ms = v;
    } else if (!strcmp(key, "security.protocol")) {
        if (strcasecmp(val, "plaintext") != 0)
            return cli_fail(CLI_EXIT_USAGE,
                            "%s:%d: security.protocol=%s is not supported by cairn yet (only plaintext); "
                            "use a plaintext listener",
                            path, line, val);
    } else if (!strncmp(key, "ssl.", 4) || !strncmp(key, "sasl.", 5)) {
        return cli_fail(CLI_EXIT_USAGE, "%s:%d: %s is not supported by cairn yet (only plaintext)", path, line, key);
    }
    /* Anything else belongs to other tools sharing the file (group.id, ...). */
    return 0;
}

int cli_profile_load(const char *path, struct cli_settings *s)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return cli_fail(CLI_EXIT_USAGE, "cannot read profile %s: %s", path, strerror(errno));
    char buf[2048];
    int line = 0, rc = 0;
    while (rc == 0 && fgets(buf, sizeof(buf), f)) {
        line++;
        char *l = trim(buf);
        if (!*l || *l == '#')
            continue;
        char *eq = strchr(l, '=');
        if (!eq) {
            rc = cli_fail(CLI_EXIT_USAGE, "%s:%d: want key=value", path, line);
            break;
        }
        *eq = '\0';
        rc = profile_apply(path, line, trim(l), trim(eq + 1), s);
    }
    fclose(f);
    return rc;
}

enum { OPT_PROFILE = 1000, OPT_FORMAT, OPT_TIMEOUT };

static const struct option common_long[] = {
    {"brokers", required_argument, NULL, 'b'},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"help", no_argument, NULL, 'h'},
};
#define COMMON_LONG_COUNT (sizeof(common_long) / sizeof(common_long[0]))

/* Defaults, then the profile (--profile, else ~/.config/cairn/profile when
 * it exists), then CAIRN_BROKERS, then flags. */
static int resolve(struct cli_settings *s, const char *flag_brokers, const char *profile, long long flag_timeout)
{
    char home_profile[1024];
    if (!profile) {
        const char *home = getenv("HOME");
        if (home && *home) {
            snprintf(home_profile, sizeof(home_profile), "%s/.config/cairn/profile", home);
            FILE *f = fopen(home_profile, "r");
            if (f) {
                fclose(f);
                profile = home_profile;
            }
        }
    }
    if (profile) {
        int rc = cli_profile_load(profile, s);
        if (rc)
            return rc;
    }
    const char *env = getenv("CAIRN_BROKERS");
    if (env && *env)
        snprintf(s->brokers, sizeof(s->brokers), "%s", env);
    if (flag_brokers)
        snprintf(s->brokers, sizeof(s->brokers), "%s", flag_brokers);
    if (flag_timeout > 0)
        s->timeout_ms = flag_timeout;
    return 0;
}

int cli_parse(int argc, char **argv, const char *usage, const char *own_short, const struct option *own_long,
              cli_flag_fn own, void *ctx, struct cli_settings *s, char **pos, int *npos, int max_pos)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->brokers, sizeof(s->brokers), "127.0.0.1:9092");
    s->timeout_ms = 10000;
    struct option longs[64];
    size_t n = 0;
    for (size_t i = 0; i < COMMON_LONG_COUNT; i++)
        longs[n++] = common_long[i];
    for (size_t i = 0; own_long && own_long[i].name && n < 63; i++)
        longs[n++] = own_long[i];
    memset(&longs[n], 0, sizeof(longs[n]));
    char shorts[64];
    snprintf(shorts, sizeof(shorts), "+b:h%s", own_short ? own_short : "");

    const char *flag_brokers = NULL, *profile = NULL;
    long long timeout = 0;
    *npos = 0;
    opterr = 0;
    optind = 1;
    /* "+" stops at the first positional; loop so flags may follow them. */
    while (optind < argc) {
        int opt = getopt_long(argc, argv, shorts, longs, NULL);
        if (opt == -1) {
            if (*npos >= max_pos)
                return cli_fail(CLI_EXIT_USAGE, "unexpected argument '%s'\n%s", argv[optind], usage);
            pos[(*npos)++] = argv[optind++];
            continue;
        }
        switch (opt) {
        case 'h':
            fputs(usage, stdout);
            return CLI_EXIT_OK;
        case 'b':
            flag_brokers = optarg;
            break;
        case OPT_PROFILE:
            profile = optarg;
            break;
        case OPT_FORMAT:
            if (!strcmp(optarg, "json"))
                s->json = true;
            else if (strcmp(optarg, "text") != 0)
                return cli_fail(CLI_EXIT_USAGE, "--format wants text or json, got '%s'", optarg);
            break;
        case OPT_TIMEOUT:
            if (cli_parse_int(optarg, 1, 3600000, &timeout) < 0)
                return cli_fail(CLI_EXIT_USAGE, "--timeout wants milliseconds (1..3600000), got '%s'", optarg);
            break;
        case '?':
        case ':':
            if (optopt && optopt < 256)
                return cli_fail(CLI_EXIT_USAGE, "bad or incomplete flag '-%c'\n%s", optopt, usage);
            return cli_fail(CLI_EXIT_USAGE, "unknown flag or missing value: '%s'\n%s", argv[optind - 1], usage);
        default: {
            int rc = own ? own(opt, optarg, ctx) : CLI_EXIT_USAGE;
            if (rc >= 0)
                return rc;
        }
        }
    }
    return resolve(s, flag_brokers, profile, timeout) ? CLI_EXIT_USAGE : -1;
}
