/* cairn user create | list | delete: SCRAM credentials over
 * AlterUserScramCredentials and DescribeUserScramCredentials. As with
 * kafka-configs.sh the password never leaves the client: it sends a random
 * salt and SaltedPassword = Hi(password, salt, iterations) (RFC 5802,
 * PBKDF2 with the mechanism's HMAC). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/rand.h>

#include "cli.h"
#include "sasl/scram.h"

static const char user_usage[] =
    "usage: cairn user create NAME [--mechanism M] [--iterations N] [--password P]\n"
    "       cairn user delete NAME [--mechanism M]\n"
    "       cairn user list [NAME...] [--format json]\n"
    "  --mechanism   SCRAM-SHA-256 (default) or SCRAM-SHA-512\n"
    "  --iterations  PBKDF2 iterations, 4096..16384 (default 4096)\n"
    "  --password    else the first line of standard input is the password\n"
    "common flags: -b/--brokers, --profile, -X key=value, --format, --timeout MS, -h/--help (see cairn --help)\n";

/* Kafka's ScramMechanism type values. */
enum { MECH_SHA256 = 1, MECH_SHA512 = 2 };
enum { SALT_LEN = 32, USER_NAMES_MAX = 32 };

static const char *mech_name(int8_t m)
{
    return m == MECH_SHA256 ? "SCRAM-SHA-256" : m == MECH_SHA512 ? "SCRAM-SHA-512" : "UNKNOWN";
}

/* Flags and the computed credential; main thread. */
struct user_args {
    int8_t mechanism;
    long long iterations;
    const char *password;
    const char *name;
    uint8_t salt[SALT_LEN];
    uint8_t salted[64];
    int salted_len;
};

enum { OPT_MECHANISM = 3000, OPT_ITERATIONS, OPT_PASSWORD };

static const struct option user_long[] = {
    {"mechanism", required_argument, NULL, OPT_MECHANISM},
    {"iterations", required_argument, NULL, OPT_ITERATIONS},
    {"password", required_argument, NULL, OPT_PASSWORD},
    {NULL, 0, NULL, 0},
};

static int user_flag(int opt, const char *arg, void *ctx)
{
    struct user_args *u = ctx;
    switch (opt) {
    case OPT_MECHANISM:
        if (!strcasecmp(arg, "SCRAM-SHA-256"))
            u->mechanism = MECH_SHA256;
        else if (!strcasecmp(arg, "SCRAM-SHA-512"))
            u->mechanism = MECH_SHA512;
        else
            return cli_fail(CLI_EXIT_USAGE, "--mechanism wants SCRAM-SHA-256 or SCRAM-SHA-512, got '%s'", arg);
        return -1;
    case OPT_ITERATIONS:
        /* The broker checks Kafka's bounds too; this catches them before the work. */
        if (cli_parse_int(arg, 4096, 16384, &u->iterations) < 0)
            return cli_fail(CLI_EXIT_USAGE, "--iterations wants 4096..16384, got '%s'", arg);
        return -1;
    case OPT_PASSWORD:
        u->password = arg;
        return -1;
    }
    return CLI_EXIT_USAGE;
}

/* core/sasl's derivation: the broker's check and this one cannot drift. */
int cli_scram_salted_password(int8_t mechanism, const char *password, const uint8_t *salt, int salt_len, int iterations,
                              uint8_t *out)
{
    if (salt_len < 0 ||
        scram_salted_password(mechanism, password, strlen(password), salt, (size_t)salt_len, iterations, out) != 0)
        return -1;
    return (int)scram_key_len(mechanism);
}

/* Salt and SaltedPassword for the upsertion. Returns 0 or an exit code. */
static int salt_password(struct user_args *u)
{
    if (RAND_bytes(u->salt, SALT_LEN) != 1)
        return cli_fail(CLI_EXIT_USAGE, "no random bytes for the salt");
    u->salted_len = cli_scram_salted_password(u->mechanism, u->password, u->salt, SALT_LEN, (int)u->iterations,
                                              u->salted);
    if (u->salted_len < 0)
        return cli_fail(CLI_EXIT_USAGE, "PBKDF2 failed");
    return 0;
}

static int build_alter(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    const struct user_args *u = ctx;
    struct alter_user_scram_credentials_request *m = req;
    if (u->password) {
        m->upsertions = kafka_arena_alloc(arena, sizeof(*m->upsertions));
        if (!m->upsertions)
            return -1;
        alter_user_scram_credentials_request_scram_credential_upsertion_init(m->upsertions);
        m->upsertions->name = kafka_str_from_cstr(u->name);
        m->upsertions->mechanism = u->mechanism;
        m->upsertions->iterations = (int32_t)u->iterations;
        m->upsertions->salt = (struct kafka_bytes){u->salt, SALT_LEN};
        m->upsertions->salted_password = (struct kafka_bytes){u->salted, u->salted_len};
        m->upsertions_count = 1;
    } else {
        m->deletions = kafka_arena_alloc(arena, sizeof(*m->deletions));
        if (!m->deletions)
            return -1;
        alter_user_scram_credentials_request_scram_credential_deletion_init(m->deletions);
        m->deletions->name = kafka_str_from_cstr(u->name);
        m->deletions->mechanism = u->mechanism;
        m->deletions_count = 1;
    }
    return 0;
}

static bool user_alter_moved(const void *response)
{
    const struct alter_user_scram_credentials_response *m = response;
    for (int32_t i = 0; i < m->results_count; i++)
        if (m->results[i].error_code == KAFKA_ERR_NOT_CONTROLLER)
            return true;
    return false;
}

/* create (u->password set) or delete (not). */
static int user_alter(struct cli_conn *c, struct user_args *u)
{
    struct cli_reply r;
    int rc = cli_call_controller(c, KAFKA_API_KEY_ALTER_USER_SCRAM_CREDENTIALS, build_alter, u, user_alter_moved, &r);
    if (rc)
        return rc;
    const struct alter_user_scram_credentials_response *m = r.response;
    const char *verb = u->password ? "create" : "delete";
    if (m->results_count < 1) {
        rc = cli_fail(CLI_EXIT_KAFKA, "the broker gave no result for user '%s'", u->name);
    } else if (m->results[0].error_code != KAFKA_ERR_NONE) {
        char what[600];
        snprintf(what, sizeof(what), "cannot %s %s credential of user '%s'", verb, mech_name(u->mechanism), u->name);
        rc = cli_kafka_fail(m->results[0].error_code, m->results[0].error_message, what,
                            m->results[0].error_code == KAFKA_ERR_RESOURCE_NOT_FOUND ? "see `cairn user list`" : NULL);
    } else if (u->password) {
        printf("created %s credential of user '%s' (%lld iterations)\n", mech_name(u->mechanism), u->name,
               u->iterations);
    } else {
        printf("deleted %s credential of user '%s'\n", mech_name(u->mechanism), u->name);
    }
    cli_reply_free(&r);
    return rc;
}

struct user_names {
    char **names;
    int n;
};

static int build_describe(void *req, int16_t version, struct kafka_arena *arena, void *ctx)
{
    (void)version;
    const struct user_names *un = ctx;
    struct describe_user_scram_credentials_request *m = req;
    if (un->n == 0)
        return 0; /* no users: every user */
    m->users = kafka_arena_alloc(arena, sizeof(*m->users) * (size_t)un->n);
    if (!m->users)
        return -1;
    for (int i = 0; i < un->n; i++) {
        describe_user_scram_credentials_request_user_name_init(&m->users[i]);
        m->users[i].name = kafka_str_from_cstr(un->names[i]);
    }
    m->users_count = un->n;
    return 0;
}

static int user_list(struct cli_conn *c, struct user_names *un, bool json)
{
    struct cli_reply r;
    int rc = cli_call(c, c->controller_id, KAFKA_API_KEY_DESCRIBE_USER_SCRAM_CREDENTIALS, build_describe, un, &r);
    if (rc)
        return rc;
    const struct describe_user_scram_credentials_response *m = r.response;
    if (m->error_code != KAFKA_ERR_NONE) {
        rc = cli_kafka_fail(m->error_code, m->error_message, "cannot list users", NULL);
        cli_reply_free(&r);
        return rc;
    }
    static const char *const headers[] = {"USER", "MECHANISM", "ITERATIONS"};
    json_t *arr = json ? json_array() : NULL;
    struct cli_table *t = json ? NULL : cli_table_new(3, headers);
    for (int32_t i = 0; i < m->results_count; i++) {
        const struct describe_user_scram_credentials_response_describe_user_scram_credentials_result
            *u = &m->results[i];
        if (u->error_code != KAFKA_ERR_NONE) {
            char what[600];
            snprintf(what, sizeof(what), "cannot describe user '%s'", cli_str(u->user));
            rc = cli_kafka_fail(u->error_code, u->error_message, what, NULL);
            continue;
        }
        json_t *creds = json ? json_array() : NULL;
        for (int32_t k = 0; k < u->credential_infos_count; k++) {
            const struct describe_user_scram_credentials_response_credential_info *ci = &u->credential_infos[k];
            if (json) {
                json_array_append_new(creds, json_pack("{s:s, s:i}", "mechanism", mech_name(ci->mechanism),
                                                       "iterations", (int)ci->iterations));
            } else {
                char it[16];
                snprintf(it, sizeof(it), "%d", (int)ci->iterations);
                cli_table_add(t, cli_str(u->user), mech_name(ci->mechanism), it);
            }
        }
        if (json)
            json_array_append_new(arr, json_pack("{s:s, s:o}", "user", cli_str(u->user), "credentials", creds));
    }
    cli_reply_free(&r);
    if (json)
        cli_json_print(arr);
    else
        cli_table_print(t);
    return rc;
}

/* The first line of standard input, without its line end. */
static int read_password(char *buf, size_t len)
{
    if (!fgets(buf, (int)len, stdin))
        return cli_fail(CLI_EXIT_USAGE, "no password: give --password or a line on standard input");
    buf[strcspn(buf, "\r\n")] = '\0';
    if (!buf[0])
        return cli_fail(CLI_EXIT_USAGE, "the password must not be empty");
    return 0;
}

int cli_user_main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        fputs(user_usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    const char *sub = argv[1];
    bool list = !strcmp(sub, "list");
    if (!list && strcmp(sub, "create") && strcmp(sub, "delete"))
        return cli_fail(CLI_EXIT_USAGE, "unknown subcommand 'user %s'\n%s", sub, user_usage);
    struct user_args u = {.mechanism = MECH_SHA256, .iterations = 4096};
    struct cli_settings s;
    char *pos[USER_NAMES_MAX];
    int npos;
    int rc = cli_parse(argc - 1, argv + 1, user_usage, "", user_long, user_flag, &u, &s, pos, &npos,
                       list ? USER_NAMES_MAX : 1);
    if (rc >= 0)
        return rc;
    char password[1024];
    if (!list) {
        if (npos != 1)
            return cli_fail(CLI_EXIT_USAGE, "user %s wants a user name\n%s", sub, user_usage);
        u.name = pos[0];
        if (!strcmp(sub, "delete")) {
            u.password = NULL;
        } else if (!u.password) {
            if ((rc = read_password(password, sizeof(password))) != 0)
                return rc;
            u.password = password;
        } else if (!u.password[0]) {
            return cli_fail(CLI_EXIT_USAGE, "the password must not be empty");
        }
        if (u.password && (rc = salt_password(&u)) != 0)
            return rc;
    }
    struct cli_conn c;
    rc = cli_connect(&c, &s);
    if (rc)
        return rc;
    struct user_names un = {pos, npos};
    rc = list ? user_list(&c, &un, s.json) : user_alter(&c, &u);
    cli_close(&c);
    OPENSSL_cleanse(password, sizeof(password));
    return rc;
}
