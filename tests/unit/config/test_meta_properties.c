#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/meta_properties.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct temp_dirs {
    char root[64];
    char a[96];
    char b[96];
};

static int setup(void **state)
{
    struct temp_dirs *t = calloc(1, sizeof *t);
    snprintf(t->root, sizeof t->root, "/tmp/cairn-meta-XXXXXX");
    if (!mkdtemp(t->root))
        return -1;
    snprintf(t->a, sizeof t->a, "%s/a", t->root);
    snprintf(t->b, sizeof t->b, "%s/nested/b", t->root);
    *state = t;
    return 0;
}

static int teardown(void **state)
{
    struct temp_dirs *t = *state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->root);
    int rc = system(cmd);
    free(t);
    return rc == 0 ? 0 : -1;
}

static void write_file(const char *dir, const char *text)
{
    char path[160];
    snprintf(path, sizeof path, "%s/meta.properties", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_uuid_round_trip(void **state)
{
    (void)state;
    uint8_t zero[16] = {0}, decoded[16];
    char text[UUID_BASE64URL_LEN + 1];
    uuid_to_base64url(zero, text);
    assert_string_equal(text, "AAAAAAAAAAAAAAAAAAAAAA");
    uint8_t ff[16];
    memset(ff, 0xff, sizeof ff);
    uuid_to_base64url(ff, text);
    assert_string_equal(text, "_____________________w");
    /* Bytes 0x00..0x0f, checked against base64url of the same bytes. */
    uint8_t seq[16];
    for (int i = 0; i < 16; i++)
        seq[i] = (uint8_t)i;
    uuid_to_base64url(seq, text);
    assert_string_equal(text, "AAECAwQFBgcICQoLDA0ODw");
    assert_int_equal(uuid_from_base64url(text, decoded), 0);
    assert_memory_equal(decoded, seq, 16);
    for (int round = 0; round < 100; round++) {
        uint8_t id[16];
        assert_int_equal(uuid_random(id), 0);
        assert_int_equal(id[6] >> 4, 4);
        uuid_to_base64url(id, text);
        assert_int_equal(strlen(text), 22);
        assert_true(text[0] != '-');
        assert_int_equal(uuid_from_base64url(text, decoded), 0);
        assert_memory_equal(decoded, id, 16);
    }
    assert_int_equal(uuid_from_base64url("AAAAAAAAAAAAAAAAAAAAA", decoded), -1);   /* 21 chars */
    assert_int_equal(uuid_from_base64url("AAAAAAAAAAAAAAAAAAAAAAA", decoded), -1); /* 23 chars */
    assert_int_equal(uuid_from_base64url("AAAAAAAAAAAAAAAAAAAA+A", decoded), -1);  /* not url-safe */
    assert_int_equal(uuid_from_base64url("AAAAAAAAAAAAAAAAAAAAAB", decoded), -1);  /* stray low bits */
}

static void test_first_start_creates_then_reload_keeps(void **state)
{
    struct temp_dirs *t = *state;
    const char *dirs[] = {t->a, t->b};
    char cluster[UUID_BASE64URL_LEN + 1], again[UUID_BASE64URL_LEN + 1], err[512];
    assert_int_equal(meta_properties_ensure(dirs, 2, 3, NULL, cluster, err, sizeof err), 0);
    uint8_t raw[16];
    assert_int_equal(uuid_from_base64url(cluster, raw), 0);

    struct meta_properties a, b;
    assert_int_equal(meta_properties_read(t->a, &a, err, sizeof err), 0);
    assert_int_equal(meta_properties_read(t->b, &b, err, sizeof err), 0);
    assert_int_equal(a.version, 1);
    assert_int_equal(a.node_id, 3);
    assert_string_equal(a.cluster_id, cluster);
    assert_string_equal(b.cluster_id, cluster);
    assert_int_equal(strlen(a.directory_id), 22);
    assert_string_not_equal(a.directory_id, b.directory_id);

    char tmp[160];
    snprintf(tmp, sizeof tmp, "%s/meta.properties.tmp", t->a);
    assert_int_not_equal(access(tmp, F_OK), 0);

    assert_int_equal(meta_properties_ensure(dirs, 2, 3, cluster, again, err, sizeof err), 0);
    assert_string_equal(again, cluster);
    struct meta_properties a2;
    assert_int_equal(meta_properties_read(t->a, &a2, err, sizeof err), 0);
    assert_string_equal(a2.directory_id, a.directory_id);
}

static void test_node_id_mismatch_stops(void **state)
{
    struct temp_dirs *t = *state;
    const char *dirs[] = {t->a};
    char cluster[UUID_BASE64URL_LEN + 1], err[512];
    assert_int_equal(meta_properties_ensure(dirs, 1, 1, NULL, cluster, err, sizeof err), 0);
    assert_int_equal(meta_properties_ensure(dirs, 1, 2, NULL, cluster, err, sizeof err), -1);
    assert_non_null(strstr(err, "node.id 1"));
    assert_non_null(strstr(err, "node.id 2"));
}

static void test_cluster_id_mismatch_between_dirs_stops(void **state)
{
    struct temp_dirs *t = *state;
    const char *only_a[] = {t->a}, *only_b[] = {t->b}, *both[] = {t->a, t->b};
    char c1[UUID_BASE64URL_LEN + 1], c2[UUID_BASE64URL_LEN + 1], err[512];
    assert_int_equal(meta_properties_ensure(only_a, 1, 1, NULL, c1, err, sizeof err), 0);
    assert_int_equal(meta_properties_ensure(only_b, 1, 1, NULL, c2, err, sizeof err), 0);
    assert_string_not_equal(c1, c2);
    assert_int_equal(meta_properties_ensure(both, 2, 1, NULL, c1, err, sizeof err), -1);
    assert_non_null(strstr(err, "cluster.id"));
    assert_non_null(strstr(err, t->b));
}

static void test_configured_cluster_id_used_and_checked(void **state)
{
    struct temp_dirs *t = *state;
    const char *dirs[] = {t->a};
    char cluster[UUID_BASE64URL_LEN + 1], err[512];
    assert_int_equal(meta_properties_ensure(dirs, 1, 1, "AAECAwQFBgcICQoLDA0ODw", cluster, err, sizeof err), 0);
    assert_string_equal(cluster, "AAECAwQFBgcICQoLDA0ODw");
    assert_int_equal(meta_properties_ensure(dirs, 1, 1, "_____________________w", cluster, err, sizeof err), -1);
    assert_non_null(strstr(err, "cluster.id"));
}

static void test_kafka_written_file_is_read_and_directory_id_added(void **state)
{
    struct temp_dirs *t = *state;
    assert_int_equal(mkdir(t->a, 0755), 0);
    write_file(t->a, "#\n#Thu Jan 01 00:00:00 UTC 2024\nnode.id=1\nversion=1\ncluster.id=AAECAwQFBgcICQoLDA0ODw\n");
    const char *dirs[] = {t->a};
    char cluster[UUID_BASE64URL_LEN + 1], err[512];
    assert_int_equal(meta_properties_ensure(dirs, 1, 1, NULL, cluster, err, sizeof err), 0);
    assert_string_equal(cluster, "AAECAwQFBgcICQoLDA0ODw");
    struct meta_properties m;
    assert_int_equal(meta_properties_read(t->a, &m, err, sizeof err), 0);
    assert_int_equal(strlen(m.directory_id), 22);
}

static void test_malformed_files_rejected(void **state)
{
    struct temp_dirs *t = *state;
    struct meta_properties m;
    char err[512];
    assert_int_equal(meta_properties_read(t->a, &m, err, sizeof err), 1);
    assert_int_equal(mkdir(t->a, 0755), 0);
    write_file(t->a, "version=0\nbroker.id=1\ncluster.id=AAECAwQFBgcICQoLDA0ODw\n");
    assert_int_equal(meta_properties_read(t->a, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "version"));
    write_file(t->a, "version=1\nnode.id=x\ncluster.id=AAECAwQFBgcICQoLDA0ODw\n");
    assert_int_equal(meta_properties_read(t->a, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "node.id"));
    write_file(t->a, "version=1\nnode.id=1\ncluster.id=short\n");
    assert_int_equal(meta_properties_read(t->a, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "cluster.id"));
    const char *dirs[] = {t->a};
    char cluster[UUID_BASE64URL_LEN + 1];
    assert_int_equal(meta_properties_ensure(dirs, 1, 1, NULL, cluster, err, sizeof err), -1);
    const char *dup[] = {t->b, t->b};
    assert_int_equal(meta_properties_ensure(dup, 2, 1, NULL, cluster, err, sizeof err), -1);
    assert_non_null(strstr(err, "twice"));
}

static void test_copied_directory_detected(void **state)
{
    struct temp_dirs *t = *state;
    const char *only_a[] = {t->a}, *both[] = {t->a, t->b};
    char cluster[UUID_BASE64URL_LEN + 1], err[512], text[256];
    assert_int_equal(meta_properties_ensure(only_a, 1, 1, NULL, cluster, err, sizeof err), 0);
    struct meta_properties m;
    assert_int_equal(meta_properties_read(t->a, &m, err, sizeof err), 0);
    char nested[96];
    snprintf(nested, sizeof nested, "%s/nested", t->root);
    assert_int_equal(mkdir(nested, 0755), 0);
    assert_int_equal(mkdir(t->b, 0755), 0);
    snprintf(text, sizeof text, "version=1\nnode.id=1\ncluster.id=%s\ndirectory.id=%s\n", m.cluster_id, m.directory_id);
    write_file(t->b, text);
    assert_int_equal(meta_properties_ensure(both, 2, 1, NULL, cluster, err, sizeof err), -1);
    assert_non_null(strstr(err, "directory.id"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uuid_round_trip),
        cmocka_unit_test_setup_teardown(test_first_start_creates_then_reload_keeps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_node_id_mismatch_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cluster_id_mismatch_between_dirs_stops, setup, teardown),
        cmocka_unit_test_setup_teardown(test_configured_cluster_id_used_and_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kafka_written_file_is_read_and_directory_id_added, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_files_rejected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_copied_directory_detected, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
