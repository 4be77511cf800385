/* Listener security protocols at start-up: an SSL or SASL_SSL listener
 * without a keystore, or a listener the map does not name, is refused with
 * one line naming the listener and the cause, and never opened. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "raw_kafka.h"

/* Runs cairnd with listeners=<name>://127.0.0.1:<port> (plus one more
 * override when extra is not NULL) in a fresh data dir until it exits; a
 * broker still running after 20 s is killed. Returns the exit code (137
 * when killed) and the combined output in out. */
static int run_cairnd(const char *listener_name, const char *extra, int port, char *out, size_t outlen)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "d=$(mktemp -d /tmp/cairn-listener-security-XXXXXX) || exit 99; "
             "timeout -s KILL 20 '%s' --override 'listeners=%s://127.0.0.1:%d' --override \"log.dirs=$d/data\" "
             "%s%s%s 2>&1; rc=$?; rm -rf \"$d\"; exit $rc",
             broker_binary(), listener_name, port, extra ? "--override '" : "", extra ? extra : "", extra ? "'" : "");
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, outlen - 1, p);
    out[n] = '\0';
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int lines_containing(const char *text, const char *needle)
{
    int n = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit && (size_t)(hit - line) < len)
            n++;
        if (!end)
            break;
        line = end + 1;
    }
    return n;
}

static void expect_refused(const char *listener_name, const char *extra, const char *message)
{
    char output[8192];
    int port = harness_free_port();
    assert_true(port > 0);
    int rc = run_cairnd(listener_name, extra, port, output, sizeof output);
    if (rc == 0 || rc == 137 || lines_containing(output, message) != 1)
        fail_msg("exit %d; expected one line with '%s'; output:\n%s", rc, message, output);
    int fd = raw_connect(port, 500);
    if (fd >= 0)
        close(fd);
    assert_true(fd < 0);
}

static void test_ssl_listener_without_keystore_is_refused(void **state)
{
    (void)state;
    expect_refused("SSL", NULL, "listener SSL: an SSL listener needs ssl.keystore.location");
}

static void test_sasl_ssl_listener_without_keystore_is_refused(void **state)
{
    (void)state;
    expect_refused("CLIENT", "listener.security.protocol.map=CLIENT:SASL_SSL",
                   "listener CLIENT: an SSL listener needs ssl.keystore.location");
}

static void test_listener_missing_from_map_is_refused(void **state)
{
    (void)state;
    expect_refused("INTERNAL", NULL, "listener name INTERNAL has no entry in listener.security.protocol.map");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ssl_listener_without_keystore_is_refused),
        cmocka_unit_test(test_sasl_ssl_listener_without_keystore_is_refused),
        cmocka_unit_test(test_listener_missing_from_map_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
