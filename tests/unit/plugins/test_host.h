/* A host for plugin unit tests: dlopen()s a built plugin, checks its
 * descriptor, and serves the cairn_host functions from memory (config
 * values set by the test, counters, a log capture, an optional fixed
 * wall clock). Include <cmocka.h> first: failures fail the current test.
 *
 * Thread-safety: configure and init/fini from the test's main thread;
 * the host functions themselves may be called from any thread. */
#ifndef CAIRN_TESTS_PLUGIN_TEST_HOST_H
#define CAIRN_TESTS_PLUGIN_TEST_HOST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cairn/plugin.h"

#define TEST_HOST_MAX_CONFIG 32
#define TEST_HOST_MAX_METRICS 16

struct cairn_metric {
    char name[64];
    bool is_gauge;
    atomic_llong value;
};

struct test_host {
    struct cairn_host host; /* host.ctx points back at this struct */
    void *library;
    const struct cairn_plugin_descriptor *descriptor;
    char *config_keys[TEST_HOST_MAX_CONFIG];
    char *config_values[TEST_HOST_MAX_CONFIG];
    int config_count;
    struct cairn_metric metrics[TEST_HOST_MAX_METRICS];
    atomic_int metric_count;
    pthread_mutex_t log_lock;
    char last_log[1024];
    int log_count;
    atomic_llong fixed_wall_ms; /* 0: the real clock */
    void *instance;             /* set by test_host_init on success */
    /* The listener a plugin passed to quota_subscribe (struct_size 0: none). */
    struct cairn_quota_listener quota_listener;
};

/* Loads <CAIRN_PLUGIN_DIR>/<name>.so and checks the descriptor's ABI,
 * size and name. */
void test_host_load(struct test_host *th, const char *name);
/* Sets a plugin config key (without the plugin.<name>. prefix). */
void test_host_set(struct test_host *th, const char *key, const char *value);
/* Forgets every key set so far. */
void test_host_clear_config(struct test_host *th);
/* Calls the plugin's init; returns its status, err holds its reason. */
int test_host_init(struct test_host *th, char *err, size_t errlen);
/* Calls fini on the running instance. */
void test_host_fini(struct test_host *th);
/* Value of a registered metric; fails the test when it does not exist. */
int64_t test_host_metric(struct test_host *th, const char *name);
/* fini (if running) and dlclose. */
void test_host_unload(struct test_host *th);
/* Declared key of the loaded plugin, or NULL. */
const struct cairn_config_key *test_host_declared(const struct test_host *th, const char *key);

#endif
