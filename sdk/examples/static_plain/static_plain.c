/* static_plain: SASL/PLAIN (RFC 4616) checked against a user file read at
 * start-up.
 *
 *   sasl.enabled.mechanisms=PLAIN
 *   plugins=static_plain
 *   plugin.static_plain.users.file=/etc/cairn/plain-users
 *
 * The file holds one "user:password" a line; blank lines and lines
 * starting with '#' are skipped. See README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cairn/plugin.h>

#define MAX_USERS 1024
#define MAX_FIELD 256

/* What Kafka's PLAIN server answers to a wrong name or password, for any
 * of the two, so a client cannot tell which users exist. */
#define BAD_CREDENTIALS "Authentication failed: Invalid username or password"

struct user {
    char name[MAX_FIELD];
    char password[MAX_FIELD];
};

/* Immutable after init: sasl_step reads it from many io threads at once. */
struct static_plain {
    const struct cairn_host *host;
    struct user *users;
    int user_count;
};

static const struct cairn_config_key key_file = {sizeof key_file, "users.file", CAIRN_CONFIG_STRING, NULL,
                                                 "File of user:password lines (required)."};
static const struct cairn_config_key *const config_keys[] = {&key_file};

/* Reads path into p->users; err names the line that is wrong. */
static int load_users(struct static_plain *p, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "users.file: cannot open '%s'", path);
        return CAIRN_ERROR;
    }
    p->users = calloc(MAX_USERS, sizeof *p->users);
    if (!p->users) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    char line[2 * MAX_FIELD + 8];
    int rc = CAIRN_OK, line_no = 0;
    while (rc == CAIRN_OK && fgets(line, sizeof line, f)) {
        line_no++;
        size_t n = strcspn(line, "\r\n");
        if (line[n] == '\0' && !feof(f)) {
            snprintf(err, errlen, "users.file: line %d is too long", line_no);
            rc = CAIRN_ERROR;
            break;
        }
        line[n] = '\0';
        if (n == 0 || line[0] == '#')
            continue;
        char *colon = strchr(line, ':');
        size_t name_len = colon ? (size_t)(colon - line) : 0;
        if (!colon || name_len == 0 || name_len >= MAX_FIELD || strlen(colon + 1) >= MAX_FIELD) {
            snprintf(err, errlen, "users.file: line %d is not user:password", line_no);
            rc = CAIRN_ERROR;
        } else if (p->user_count == MAX_USERS) {
            snprintf(err, errlen, "users.file: more than %d users", MAX_USERS);
            rc = CAIRN_ERROR;
        } else {
            struct user *u = &p->users[p->user_count++];
            memcpy(u->name, line, name_len);
            snprintf(u->password, sizeof u->password, "%s", colon + 1);
        }
    }
    fclose(f);
    /* Passwords stay only in p->users; the line buffer is wiped. */
    memset(line, 0, sizeof line);
    return rc;
}

static void static_plain_fini(void *instance)
{
    struct static_plain *p = instance;
    if (p->users)
        memset(p->users, 0, MAX_USERS * sizeof *p->users);
    free(p->users);
    free(p);
}

static int static_plain_init(const struct cairn_host *host, void **instance, char *err, size_t errlen)
{
    struct static_plain *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return CAIRN_ERROR;
    }
    p->host = host;
    const char *path = NULL;
    if (host->config_string(host->ctx, "users.file", &path, err, errlen) != CAIRN_OK ||
        load_users(p, path, err, errlen) != CAIRN_OK) {
        static_plain_fini(p);
        return CAIRN_ERROR;
    }
    host->log(host->ctx, CAIRN_LOG_INFO, "%d user(s) from %s", p->user_count, path);
    *instance = p;
    return CAIRN_OK;
}

/* PLAIN has one client message and needs no per-exchange state. */
static int static_plain_start(void *instance, const char *mechanism, const struct cairn_request_info *connection,
                              void **session, char *err, size_t errlen)
{
    (void)instance;
    (void)mechanism;
    (void)connection;
    (void)err;
    (void)errlen;
    *session = NULL;
    return CAIRN_OK;
}

/* Compares all of both strings whatever they hold, so the time taken
 * does not tell how much of a guessed password was right. */
static int equal_in_constant_time(const char *a, size_t a_len, const char *b, size_t b_len)
{
    unsigned char diff = a_len != b_len;
    for (size_t i = 0; i < MAX_FIELD; i++) {
        unsigned char x = i < a_len ? (unsigned char)a[i] : 0;
        unsigned char y = i < b_len ? (unsigned char)b[i] : 0;
        diff |= x ^ y;
    }
    return diff == 0;
}

/* message = [authzid] NUL authcid NUL passwd (RFC 4616 section 2). */
static int static_plain_step(void *instance, void *session, const uint8_t *in, size_t in_len,
                             struct cairn_bytes_out *out, struct cairn_principal_out *principal, char *err,
                             size_t errlen)
{
    struct static_plain *p = instance;
    (void)session;
    out->data = NULL;
    out->len = 0;
    const char *msg = (const char *)in;
    const char *nul1 = memchr(msg, '\0', in_len);
    const char *nul2 = nul1 ? memchr(nul1 + 1, '\0', in_len - (size_t)(nul1 + 1 - msg)) : NULL;
    if (!nul2 || memchr(nul2 + 1, '\0', in_len - (size_t)(nul2 + 1 - msg))) {
        snprintf(err, errlen, "Authentication failed: Invalid SASL/PLAIN message");
        return CAIRN_SASL_FAILED;
    }
    const char *authzid = msg, *name = nul1 + 1, *password = nul2 + 1;
    size_t authzid_len = (size_t)(nul1 - msg), name_len = (size_t)(nul2 - name);
    size_t password_len = in_len - (size_t)(password - msg);
    if (name_len == 0 || name_len >= MAX_FIELD || password_len >= MAX_FIELD) {
        snprintf(err, errlen, "%s", BAD_CREDENTIALS);
        return CAIRN_SASL_FAILED;
    }
    /* Acting as another user is not offered, as in Kafka. */
    if (authzid_len > 0 && (authzid_len != name_len || memcmp(authzid, name, name_len) != 0)) {
        snprintf(err, errlen,
                 "Authentication failed: Client requested an authorization id that is different from "
                 "username");
        return CAIRN_SASL_FAILED;
    }
    for (int i = 0; i < p->user_count; i++) {
        const struct user *u = &p->users[i];
        if (strlen(u->name) != name_len || memcmp(u->name, name, name_len) != 0)
            continue;
        if (!equal_in_constant_time(u->password, strlen(u->password), password, password_len))
            break;
        snprintf(principal->type, sizeof principal->type, "User");
        snprintf(principal->name, sizeof principal->name, "%s", u->name);
        principal->session_lifetime_ms = 0;
        return CAIRN_SASL_DONE;
    }
    p->host->log(p->host->ctx, CAIRN_LOG_INFO, "PLAIN login refused for '%.*s'", (int)name_len, name);
    /* The audit event of the refusal names the user it claimed to be. */
    snprintf(principal->type, sizeof principal->type, "User");
    snprintf(principal->name, sizeof principal->name, "%.*s", (int)name_len, name);
    snprintf(err, errlen, "%s", BAD_CREDENTIALS);
    return CAIRN_SASL_FAILED;
}

static void static_plain_end(void *instance, void *session)
{
    (void)instance;
    (void)session;
}

static const char *const mechanisms[] = {"PLAIN", NULL};

static const struct cairn_authn_vtable authn_table = {
    .struct_size = sizeof authn_table,
    .sasl_mechanisms = mechanisms,
    .sasl_start = static_plain_start,
    .sasl_step = static_plain_step,
    .sasl_end = static_plain_end,
};

static const struct cairn_plugin_descriptor descriptor = {
    .struct_size = sizeof descriptor,
    .abi_major = CAIRN_PLUGIN_ABI_MAJOR,
    .abi_minor = CAIRN_PLUGIN_ABI_MINOR,
    .name = "static_plain",
    .version = "1.0.0",
    .description = "SASL/PLAIN against a static user file.",
    .capabilities = CAIRN_CAP_AUTHENTICATION,
    .config_keys = config_keys,
    .config_key_count = sizeof config_keys / sizeof config_keys[0],
    .init = static_plain_init,
    .fini = static_plain_fini,
    .authentication = &authn_table,
};

CAIRN_PLUGIN_DEFINE(descriptor)
