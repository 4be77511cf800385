/* Certificates and log waits of the TLS cluster tests; see tls_cluster.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "tls_cluster.h"

int tls_certs_make(const char *name, char *dir, size_t dirlen)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, dirlen, "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(dir))
        return -1;
    char cmd[1600];
    snprintf(cmd, sizeof cmd, "sh '%s/tests/integration/tls/make_certs.sh' '%s'", CAIRN_SOURCE_DIR, dir);
    return system(cmd) == 0 ? 0 : -1;
}

int tls_certs_remove(const char *dir)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

void tls_certs_write(const char *dir, const char *target, const char *const *sources)
{
    char tmp_path[700], path[700];
    snprintf(tmp_path, sizeof tmp_path, "%s/.%s.new", dir, target);
    snprintf(path, sizeof path, "%s/%s", dir, target);
    FILE *out = fopen(tmp_path, "w");
    if (!out)
        fail_msg("cannot write %s", tmp_path);
    for (int i = 0; sources[i]; i++) {
        char src[700];
        snprintf(src, sizeof src, "%s/%s", dir, sources[i]);
        FILE *in = fopen(src, "r");
        if (!in)
            fail_msg("cannot read %s", src);
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, in)) > 0)
            assert_int_equal(fwrite(buf, 1, n, out), n);
        fclose(in);
    }
    assert_int_equal(fclose(out), 0);
    assert_int_equal(rename(tmp_path, path), 0);
}

int broker_log_count(const struct test_broker *b, const char *needle)
{
    FILE *f = fopen(b->log_path, "r");
    if (!f)
        return 0;
    char line[4096];
    int count = 0;
    while (fgets(line, sizeof line, f))
        count += strstr(line, needle) != NULL;
    fclose(f);
    return count;
}

void broker_wait_log_count(struct test_broker *b, const char *needle, int count, int timeout_ms)
{
    long long deadline = harness_now_ms() + timeout_ms;
    while (broker_log_count(b, needle) < count) {
        if (harness_now_ms() > deadline) {
            broker_print_log_tail(b, 40);
            fail_msg("%d line(s) with '%s' in %s within %d ms, want %d", broker_log_count(b, needle), needle,
                     b->log_path, timeout_ms, count);
        }
        usleep(200 * 1000);
    }
}
