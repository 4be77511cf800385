/* Every ```properties block of README.md, docs/, the plugins' READMEs
 * (plugins/<name>/README.md) and sdk/, as a user copies it, through
 * `cairnd --check-config`:
 * - each block must be accepted as written ("configuration OK", exit 0).
 *   The test supplies only plugin.path (an --override naming the build's
 *   plugins and the SDK examples it compiles); files the blocks name
 *   (keytabs, sasldb, /var/lib/cairn) need not exist, as --check-config
 *   reads none of them;
 * - the same block with any one key misspelt must be refused (exit 2) with
 *   a line naming that key, so a renamed key in the docs, or in the
 *   registry, fails here;
 * - known-bad configs are refused with start-up's own line, and the check
 *   binds no port and creates no log directory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

static char work[256];
static char plugin_path[1024];

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (buf)
        buf[got] = '\0';
    return buf;
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

struct outcome {
    int exit_code;
    char *out, *err;
};

static void outcome_free(struct outcome *o)
{
    free(o->out);
    free(o->err);
}

/* cairnd with args (already quoted for the shell); stdout and stderr kept apart. */
static struct outcome cairnd(const char *args)
{
    char cmd[4096], out_path[300], err_path[300];
    snprintf(out_path, sizeof out_path, "%s/out", work);
    snprintf(err_path, sizeof err_path, "%s/err", work);
    snprintf(cmd, sizeof cmd, "'%s' %s > '%s' 2> '%s'", broker_binary(), args, out_path, err_path);
    int rc = system(cmd);
    struct outcome o = {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, slurp(out_path), slurp(err_path)};
    assert_non_null(o.out);
    assert_non_null(o.err);
    return o;
}

static struct outcome check_file(const char *path, const char *extra)
{
    char args[2048];
    snprintf(args, sizeof args, "--check-config --config '%s' --override 'plugin.path=%s' %s", path, plugin_path,
             extra ? extra : "");
    return cairnd(args);
}

/* One block of a Markdown file. */
struct block {
    char where[300]; /* file:line */
    char *text;
};

#define MAX_BLOCKS 64

static int collect(const char *path, const char *name, struct block *blocks, int n)
{
    char *md = slurp(path);
    assert_non_null(md);
    const char *p = md;
    while ((p = strstr(p, "```properties\n")) != NULL) {
        if (n == MAX_BLOCKS)
            fail_msg("%s: more than %d properties blocks in all; raise MAX_BLOCKS", name, MAX_BLOCKS);
        int line = 1;
        for (const char *c = md; c < p; c++)
            line += *c == '\n';
        p += strlen("```properties\n");
        const char *end = strstr(p, "```");
        assert_non_null(end);
        snprintf(blocks[n].where, sizeof blocks[n].where, "%s:%d", name, line);
        blocks[n].text = strndup(p, (size_t)(end - p));
        n++;
        p = end + 3;
    }
    free(md);
    return n;
}

/* The blocks of every .md file under dir (relative to the source tree),
 * subdirectories included. */
static int collect_tree(const char *dir, struct block *blocks, int n)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", CAIRN_SOURCE_DIR, dir);
    DIR *d = opendir(path);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char name[300];
        snprintf(name, sizeof name, "%s/%s", dir, e->d_name);
        snprintf(path, sizeof path, "%s/%s", CAIRN_SOURCE_DIR, name);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        size_t len = strlen(e->d_name);
        if (S_ISDIR(st.st_mode))
            n = collect_tree(name, blocks, n);
        else if (len >= 4 && strcmp(e->d_name + len - 3, ".md") == 0)
            n = collect(path, name, blocks, n);
    }
    closedir(d);
    return n;
}

/* README.md, docs/, the plugins' READMEs and the SDK's. */
static int all_blocks(struct block *blocks)
{
    int n = collect(CAIRN_SOURCE_DIR "/README.md", "README.md", blocks, 0);
    n = collect_tree("docs", blocks, n);
    n = collect_tree("plugins", blocks, n);
    return collect_tree("sdk", blocks, n);
}

static void free_blocks(struct block *blocks, int n)
{
    for (int i = 0; i < n; i++)
        free(blocks[i].text);
}

static void test_every_block_is_accepted(void **state)
{
    (void)state;
    struct block blocks[MAX_BLOCKS];
    int n = all_blocks(blocks);
    /* docs/operations.md has seven, docs/plugin-guide.md five, the plugins'
     * READMEs eleven. */
    assert_true(n >= 22);
    char path[400];
    snprintf(path, sizeof path, "%s/block.properties", work);
    for (int i = 0; i < n; i++) {
        write_file(path, blocks[i].text);
        struct outcome o = check_file(path, NULL);
        if (o.exit_code != 0 || strcmp(o.out, "configuration OK\n") != 0)
            fail_msg("%s: cairnd --check-config exited %d:\n%s%s\n--- block:\n%s", blocks[i].where, o.exit_code, o.out,
                     o.err, blocks[i].text);
        outcome_free(&o);
    }
    free_blocks(blocks, n);
}

/* The block with the key of line `target` (0-based, counting key lines)
 * misspelt by an extra letter; NULL past the last key line. */
static char *misspell(const char *text, int target, char *key, size_t keylen)
{
    size_t len = strlen(text);
    char *out = malloc(len + 2);
    assert_non_null(out);
    int seen = 0;
    bool done = false;
    size_t o = 0;
    for (const char *l = text; *l;) {
        const char *nl = strchr(l, '\n');
        size_t ll = nl ? (size_t)(nl - l + 1) : strlen(l);
        const char *eq = memchr(l, '=', ll);
        bool key_line = eq && l[0] != '#' && l[0] != '!' && l[0] != ' ';
        if (key_line && seen++ == target) {
            size_t k = (size_t)(eq - l);
            memcpy(out + o, l, k);
            o += k;
            out[o++] = 'x';
            memcpy(out + o, eq, ll - k);
            o += ll - k;
            snprintf(key, keylen, "%.*sx", (int)k, l);
            done = true;
        } else {
            memcpy(out + o, l, ll);
            o += ll;
        }
        l += ll;
    }
    out[o] = '\0';
    if (!done) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_a_misspelt_key_in_any_block_is_refused(void **state)
{
    (void)state;
    struct block blocks[MAX_BLOCKS];
    int n = all_blocks(blocks);
    char path[400];
    snprintf(path, sizeof path, "%s/misspelt.properties", work);
    int refused = 0;
    for (int i = 0; i < n; i++) {
        char key[256];
        char *text;
        for (int k = 0; (text = misspell(blocks[i].text, k, key, sizeof key)) != NULL; k++) {
            write_file(path, text);
            struct outcome o = check_file(path, NULL);
            /* The line names the misspelt key, whatever else it would break. */
            if (o.exit_code != 2 || strstr(o.out, "configuration OK") || !strstr(o.err, "cairnd: ") ||
                !strstr(o.err, key))
                fail_msg("%s: with %s misspelt, cairnd --check-config exited %d:\n%s%s", blocks[i].where, key,
                         o.exit_code, o.out, o.err);
            refused++;
            outcome_free(&o);
            free(text);
        }
    }
    print_message("%d misspelt keys refused in %d blocks\n", refused, n);
    assert_true(refused >= 60);
    free_blocks(blocks, n);
}

/* Refused with `cairnd: <message>` on stderr, exit 2, nothing on stdout. */
static void assert_refused(const char *args, const char *message)
{
    struct outcome o = cairnd(args);
    if (o.exit_code != 2 || o.out[0] || !strstr(o.err, "cairnd: ") || !strstr(o.err, message))
        fail_msg("cairnd %s: exit %d, stdout '%s', stderr '%s'; expected '%s'", args, o.exit_code, o.out, o.err,
                 message);
    outcome_free(&o);
}

static void test_known_bad_configs_are_refused(void **state)
{
    (void)state;
    assert_refused("--check-config --override num.partitionz=3",
                   "cairnd: unknown configuration key 'num.partitionz' (start-up ignores it with a warning)");
    assert_refused("--check-config --override num.partitions=abc",
                   "cairnd: invalid value 'abc' for 'num.partitions': expected an integer in [1, 2147483647]");
    assert_refused("--check-config --override listeners=PLAINTEXT://:9092,INTERNAL://:9094",
                   "listener name INTERNAL has no entry in listener.security.protocol.map");
    assert_refused("--check-config --override controller.quorum.voters=1@10.0.0.1", "for 'controller.quorum.voters'");
    /* Bootstrap servers: a broker's alone (controllers keep static voters). */
    assert_refused("--check-config --override node.id=1 --override controller.quorum.bootstrap.servers=10.0.0.1:9093",
                   "controllers need controller.quorum.voters");
    assert_refused("--check-config --override node.id=4 --override process.roles=broker "
                   "--override controller.quorum.bootstrap.servers=10.0.0.1:9093 "
                   "--override controller.quorum.voters=1@10.0.0.1:9093",
                   "set exactly one of them");
    assert_refused("--check-config --override listeners=PLAINTEXT://:9092,INTERNAL://:9094 "
                   "--override listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT "
                   "--override inter.broker.listener.name=INTERNAL "
                   "--override sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512 "
                   "--override 'listener.name.internal.scram-sha-512.sasl.jaas.config=Foo required;'",
                   "listener.name.internal.scram-sha-512.sasl.jaas.config: ");
    char args[1500];
    snprintf(args, sizeof args,
             "--check-config --override plugin.path=%s --override plugins=auth-sasl "
             "--override plugin.auth-sasl.relm=cairn",
             plugin_path);
    assert_refused(args, "cairnd: plugin 'auth-sasl': unknown config key plugin.auth-sasl.relm; it declares ");
    /* The line is start-up's own: cairnd without --check-config stops with it. */
    assert_refused("--override num.partitions=abc",
                   "cairnd: invalid value 'abc' for 'num.partitions': expected an integer in [1, 2147483647]");
    struct outcome help = cairnd("--help");
    assert_int_equal(help.exit_code, 0);
    assert_non_null(strstr(help.out, "--check-config"));
    outcome_free(&help);
}

static void test_check_binds_and_creates_nothing(void **state)
{
    (void)state;
    /* The port is taken: start-up could not bind it, the check does not try. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(fd, 1), 0);
    socklen_t alen = sizeof addr;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&addr, &alen), 0);
    char data[400], args[2000];
    snprintf(data, sizeof data, "%s/never-created", work);
    snprintf(args, sizeof args,
             "--check-config --override listeners=PLAINTEXT://127.0.0.1:%d --override 'log.dirs=%s' "
             "--override plugin.path=%s --override plugins=auth-sasl "
             "--override plugin.auth-sasl.sasldb_path=%s/no-such-sasldb",
             ntohs(addr.sin_port), data, plugin_path, work);
    struct outcome o = cairnd(args);
    if (o.exit_code != 0 || strcmp(o.out, "configuration OK\n") != 0)
        fail_msg("exit %d: %s%s", o.exit_code, o.out, o.err);
    outcome_free(&o);
    struct stat st;
    assert_int_not_equal(stat(data, &st), 0);
    close(fd);
}

/* The commands of docs/operations.md "Checking a config", run as written in
 * a directory whose server.properties is the guide's controller example;
 * each prints exactly the lines shown after it. */
static void test_operations_commands(void **state)
{
    (void)state;
    struct block blocks[MAX_BLOCKS];
    int n = collect(CAIRN_SOURCE_DIR "/docs/operations.md", "docs/operations.md", blocks, 0);
    assert_true(n >= 1);
    char path[400];
    snprintf(path, sizeof path, "%s/server.properties", work);
    write_file(path, blocks[0].text);
    free_blocks(blocks, n);

    char *md = slurp(CAIRN_SOURCE_DIR "/docs/operations.md");
    assert_non_null(md);
    const char *section = strstr(md, "\n## Checking a config\n");
    assert_non_null(section);
    const char *start = strstr(section, "```sh\n");
    assert_non_null(start);
    start += strlen("```sh\n");
    const char *end = strstr(start, "```");
    assert_non_null(end);
    char bindir[600];
    snprintf(bindir, sizeof bindir, "%s", broker_binary());
    char *slash = strrchr(bindir, '/');
    if (slash)
        *slash = '\0';
    int commands = 0;
    for (const char *c = start; c < end && strncmp(c, "$ ", 2) == 0;) {
        const char *nl = strchr(c, '\n');
        const char *next = strstr(nl, "\n$ ");
        if (!next || next > end)
            next = end - 1;
        char cmd[2048], expected[2048], got[4096] = "";
        snprintf(cmd, sizeof cmd, "cd '%s' && PATH='%s':\"$PATH\" %.*s 2>&1", work, slash ? bindir : ".",
                 (int)(nl - c - 2), c + 2);
        snprintf(expected, sizeof expected, "%.*s", (int)(next + 1 - (nl + 1)), nl + 1);
        FILE *f = popen(cmd, "r");
        assert_non_null(f);
        size_t got_len = fread(got, 1, sizeof got - 1, f);
        got[got_len] = '\0';
        pclose(f);
        if (strcmp(got, expected) != 0)
            fail_msg("%s\nprinted:\n%s\nthe docs show:\n%s", cmd, got, expected);
        commands++;
        c = next + 1;
    }
    assert_int_equal(commands, 3);
    free(md);
}

/* The SDK examples the plugin guide configures, compiled from the tree. */
static int setup(void **state)
{
    (void)state;
    snprintf(work, sizeof work, "/tmp/cairn-docprops-XXXXXX");
    if (!mkdtemp(work))
        return -1;
    const char *examples[] = {"hello_audit", "prefix_authorizer", "syslog_audit"};
    for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "'%s' -O1 -I'%s/sdk/include' -fPIC -shared -o '%s/%s.so' '%s/sdk/examples/%s/%s.c' -pthread",
                 C_COMPILER_PATH, CAIRN_SOURCE_DIR, work, examples[i], CAIRN_SOURCE_DIR, examples[i], examples[i]);
        if (system(cmd) != 0)
            return -1;
    }
    snprintf(plugin_path, sizeof plugin_path, "%s/plugins:%s", CAIRN_BINARY_DIR, work);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_block_is_accepted),
        cmocka_unit_test(test_a_misspelt_key_in_any_block_is_refused),
        cmocka_unit_test(test_known_bad_configs_are_refused),
        cmocka_unit_test(test_check_binds_and_creates_nothing),
        cmocka_unit_test(test_operations_commands),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
