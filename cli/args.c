/* Flag parsing shared by every command, and the profile file. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

static int set_path(char *dst, size_t len, const char *where, const char *key, const char *val)
{
    if (strlen(val) >= len)
        return cli_fail(CLI_EXIT_USAGE, "%s: %s is too long", where, key);
    snprintf(dst, len, "%s", val);
    return 0;
}

/* Applies one librdkafka-named property. Settings cairn cannot honour
 * (other ssl.* and sasl.* keys) are refused rather than ignored:
 * connecting without them to a cluster the settings say is secured would
 * be wrong. */
int cli_setting_apply(const char *where, const char *key, const char *val, struct cli_settings *s)
{
    if (!strcmp(key, "bootstrap.servers") || !strcmp(key, "metadata.broker.list")) {
        snprintf(s->brokers, sizeof(s->brokers), "%s", val);
    } else if (!strcmp(key, "client.id")) {
        snprintf(s->client_id, sizeof(s->client_id), "%s", val);
    } else if (!strcmp(key, "request.timeout.ms") || !strcmp(key, "socket.timeout.ms")) {
        long long v;
        if (cli_parse_int(val, 1, 3600000, &v) < 0)
            return cli_fail(CLI_EXIT_USAGE, "%s: %s must be milliseconds, got '%s'", where, key, val);
        s->timeout_ms = v;
    } else if (!strcmp(key, "session.timeout.ms") || !strcmp(key, "heartbeat.interval.ms") ||
               !strcmp(key, "max.poll.interval.ms") || !strcmp(key, "auto.commit.interval.ms")) {
        long long v;
        if (cli_parse_int(val, 1, 86400000, &v) < 0)
            return cli_fail(CLI_EXIT_USAGE, "%s: %s must be milliseconds, got '%s'", where, key, val);
        int32_t *to = key[0] == 's'   ? &s->session_timeout_ms
                      : key[0] == 'h' ? &s->heartbeat_interval_ms
                      : key[0] == 'm' ? &s->max_poll_interval_ms
                                      : &s->auto_commit_interval_ms;
        *to = (int32_t)v;
    } else if (!strcmp(key, "group.instance.id")) {
        return set_path(s->group_instance_id, sizeof(s->group_instance_id), where, key, val);
    } else if (!strcmp(key, "debug")) {
        /* librdkafka's comma-separated contexts; only the group's has output here. */
        s->debug_cgrp = strstr(val, "cgrp") != NULL || strstr(val, "all") != NULL;
    } else if (!strcmp(key, "enable.idempotence")) {
        if (!strcasecmp(val, "true") || !strcmp(val, "1"))
            s->idempotence = 1;
        else if (!strcasecmp(val, "false") || !strcmp(val, "0"))
            s->idempotence = 0;
        else
            return cli_fail(CLI_EXIT_USAGE, "%s: enable.idempotence wants true or false, got '%s'", where, val);
    } else if (!strcmp(key, "delivery.timeout.ms") || !strcmp(key, "message.timeout.ms")) {
        long long v;
        if (cli_parse_int(val, 1, 86400000, &v) < 0)
            return cli_fail(CLI_EXIT_USAGE, "%s: %s must be milliseconds, got '%s'", where, key, val);
        s->delivery_timeout_ms = v;
    } else if (!strcmp(key, "security.protocol")) {
        bool ssl = !strcasecmp(val, "ssl") || !strcasecmp(val, "sasl_ssl");
        bool sasl = !strcasecmp(val, "sasl_plaintext") || !strcasecmp(val, "sasl_ssl");
        if (!ssl && !sasl && strcasecmp(val, "plaintext") != 0)
            return cli_fail(CLI_EXIT_USAGE,
                            "%s: security.protocol=%s is not supported by cairn (plaintext, ssl, sasl_plaintext or "
                            "sasl_ssl)",
                            where, val);
        s->ssl = ssl;
        s->sasl = sasl;
    } else if (!strcmp(key, "sasl.mechanism") || !strcmp(key, "sasl.mechanisms")) {
        const char *m = cli_sasl_mechanism_canonical(val);
        if (!m)
            return cli_fail(CLI_EXIT_USAGE,
                            "%s: %s=%s is not supported by cairn (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)", where, key,
                            val);
        snprintf(s->sasl_mechanism, sizeof(s->sasl_mechanism), "%s", m);
    } else if (!strcmp(key, "sasl.username")) {
        return set_path(s->sasl_username, sizeof(s->sasl_username), where, key, val);
    } else if (!strcmp(key, "sasl.password")) {
        return set_path(s->sasl_password, sizeof(s->sasl_password), where, key, val);
    } else if (!strcmp(key, "ssl.ca.location")) {
        return set_path(s->ssl_ca, sizeof(s->ssl_ca), where, key, val);
    } else if (!strcmp(key, "ssl.certificate.location")) {
        return set_path(s->ssl_cert, sizeof(s->ssl_cert), where, key, val);
    } else if (!strcmp(key, "ssl.key.location")) {
        return set_path(s->ssl_key, sizeof(s->ssl_key), where, key, val);
    } else if (!strcmp(key, "ssl.key.password")) {
        return set_path(s->ssl_key_password, sizeof(s->ssl_key_password), where, key, val);
    } else if (!strcmp(key, "ssl.endpoint.identification.algorithm")) {
        if (strcasecmp(val, "https") != 0 && strcasecmp(val, "none") != 0 && *val)
            return cli_fail(CLI_EXIT_USAGE, "%s: ssl.endpoint.identification.algorithm wants https or none, got '%s'",
                            where, val);
        s->ssl_no_host_check = strcasecmp(val, "https") != 0;
    } else if (!strncmp(key, "ssl.", 4) || !strncmp(key, "sasl.", 5)) {
        return cli_fail(CLI_EXIT_USAGE, "%s: %s is not supported by cairn", where, key);
    }
    /* Anything else belongs to other tools sharing the settings (group.id, ...). */
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
        char where[1100];
        snprintf(where, sizeof(where), "%s:%d", path, line);
        rc = cli_setting_apply(where, trim(l), trim(eq + 1), s);
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

const char *const *cli_common_flags(void)
{
    /* The long names of common_long, then the short forms getopt takes. */
    static char names[COMMON_LONG_COUNT][32];
    static const char *list[COMMON_LONG_COUNT + 4];
    size_t n = 0;
    for (size_t i = 0; i < COMMON_LONG_COUNT; i++) {
        snprintf(names[i], sizeof(names[i]), "--%s", common_long[i].name);
        list[n++] = names[i];
    }
    list[n++] = "-b";
    list[n++] = "-h";
    list[n++] = "-X";
    list[n] = NULL;
    return list;
}

/* The settings also read from the environment as CAIRN_<KEY> (upper
 * case, dots as underscores), e.g. CAIRN_SSL_CA_LOCATION. */
static const char *const env_keys[] = {
    "security.protocol",  "ssl.ca.location",    "ssl.certificate.location",
    "ssl.key.location",   "ssl.key.password",   "ssl.endpoint.identification.algorithm",
    "client.id",          "request.timeout.ms", "sasl.mechanism",
    "sasl.username",      "sasl.password",      "enable.idempotence",
    "delivery.timeout.ms"};

static int apply_env(struct cli_settings *s)
{
    for (size_t i = 0; i < sizeof(env_keys) / sizeof(env_keys[0]); i++) {
        char name[96] = "CAIRN_";
        size_t n = strlen(name);
        for (const char *k = env_keys[i]; *k && n + 1 < sizeof(name); k++)
            name[n++] = *k == '.' ? '_' : (char)toupper((unsigned char)*k);
        name[n] = '\0';
        const char *v = getenv(name);
        if (v && cli_setting_apply(name, env_keys[i], v, s) != 0)
            return CLI_EXIT_USAGE;
    }
    return 0;
}

/* -X key=value, applied last in the order given. */
#define MAX_X_FLAGS 16

/* Defaults, then the profile (--profile, else ~/.config/cairn/profile when
 * it exists), then the environment (CAIRN_BROKERS, CAIRN_<KEY>), then
 * flags (-X key=value, then the others). */
static int resolve(struct cli_settings *s, const char *flag_brokers, const char *profile, long long flag_timeout,
                   char *const *x_flags, int n_x)
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
    if (apply_env(s) != 0)
        return CLI_EXIT_USAGE;
    for (int i = 0; i < n_x; i++) {
        char kv[1100];
        snprintf(kv, sizeof(kv), "%s", x_flags[i]);
        char *eq = strchr(kv, '=');
        if (!eq)
            return cli_fail(CLI_EXIT_USAGE, "-X wants key=value, got '%s'", x_flags[i]);
        *eq = '\0';
        if (cli_setting_apply("-X", kv, eq + 1, s) != 0)
            return CLI_EXIT_USAGE;
    }
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
    /* librdkafka's defaults. */
    s->session_timeout_ms = 45000;
    s->heartbeat_interval_ms = 3000;
    s->max_poll_interval_ms = 300000;
    s->auto_commit_interval_ms = 5000;
    s->idempotence = -1;
    struct option longs[64];
    size_t n = 0;
    /* The command's own flags first: getopt_long takes the first exact
     * match, so a command may take over a common flag (consume's --format
     * also takes a format string). */
    for (size_t i = 0; own_long && own_long[i].name && n < 63 - COMMON_LONG_COUNT; i++)
        longs[n++] = own_long[i];
    for (size_t i = 0; i < COMMON_LONG_COUNT; i++)
        longs[n++] = common_long[i];
    memset(&longs[n], 0, sizeof(longs[n]));
    char shorts[64];
    snprintf(shorts, sizeof(shorts), "+b:hX:%s", own_short ? own_short : "");

    const char *flag_brokers = NULL, *profile = NULL;
    char *x_flags[MAX_X_FLAGS];
    int n_x = 0;
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
        case 'X':
            if (n_x == MAX_X_FLAGS)
                return cli_fail(CLI_EXIT_USAGE, "at most %d -X flags", MAX_X_FLAGS);
            x_flags[n_x++] = optarg;
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
    return resolve(s, flag_brokers, profile, timeout, x_flags, n_x) ? CLI_EXIT_USAGE : -1;
}
