/* Integration test harness: runs real cairnd processes on free loopback
 * ports in temporary directories.
 *
 * Every function that can fail fails the current cmocka test (after
 * printing the tail of the broker log), so tests read as straight-line
 * scripts. Include <cmocka.h> (with its prerequisites) before this header.
 *
 * Thread-safety: a struct test_broker belongs to the test's main thread;
 * start/stop/kill/restart must be called from that thread (the broker
 * child is tied to it with PR_SET_PDEATHSIG). broker_bootstrap and
 * broker_port may be read from other threads while the broker runs. */
#ifndef CAIRN_TESTS_HARNESS_H
#define CAIRN_TESTS_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define BROKER_MAX_OVERRIDES 32

struct test_broker {
    pid_t pid; /* 0 while no process runs */
    int port;
    int starts;    /* how many times the process was started */
    bool passed;   /* set by broker_mark_passed; keeps the dir otherwise */
    char dir[512]; /* temp dir: data/ and cairnd.log */
    char data_dir[600];
    char log_path[600];
    char bootstrap[64];
    char *overrides[BROKER_MAX_OVERRIDES];
    int override_count;
};

/* Creates the temp dir, picks a free port and starts cairnd with
 * listeners/log.dirs/node.id set plus the NULL-terminated "key=value"
 * list in overrides (may be NULL; "{port}" in one stands for
 * the broker's PLAINTEXT port). Returns once the broker answers
 * ApiVersions; fails the test after 30 s. */
void broker_start(struct test_broker *b, const char *const *overrides);

/* The same on a port chosen by the caller (0: a free one), for nodes that
 * must know each other's ports before they start (a controller quorum).
 * The overrides may replace listeners and node.id. */
void broker_start_on_port(struct test_broker *b, int port, const char *const *overrides);
/* broker_start_on_port without the wait, and the wait alone: nodes of a
 * quorum serve clients only once a leader has registered them, so they
 * are spawned together and waited for afterwards. */
void broker_spawn_on_port(struct test_broker *b, int port, const char *const *overrides);
void broker_wait_ready(struct test_broker *b);

/* "127.0.0.1:<port>" */
const char *broker_bootstrap(const struct test_broker *b);
int broker_port(const struct test_broker *b);
pid_t broker_pid(const struct test_broker *b);

/* True if the process still runs (reaps it if it exited). */
bool broker_alive(struct test_broker *b);

/* SIGTERM, wait up to 10 s for a clean exit (status 0); otherwise
 * SIGKILL and fail the test. */
void broker_stop(struct test_broker *b);
/* SIGKILL and reap. */
void broker_kill9(struct test_broker *b);
/* Starts the process again with the same dir, port and overrides. */
void broker_restart(struct test_broker *b);
/* broker_restart without the wait: every node of a stopped quorum is
 * started before any can answer (broker_wait_ready on each afterwards). */
void broker_respawn(struct test_broker *b);
/* Adds one "key=value" override (a copy) for the next broker_restart. */
void broker_add_override(struct test_broker *b, const char *kv);

/* cmocka setup and teardown (per test or per group) for tests that start
 * their own broker in one slot: *state is a zeroed struct test_broker,
 * and teardown cleans it up (stops it, removes its dir if it passed). */
int broker_slot_setup(void **state);
int broker_slot_teardown(void **state);

/* Call at the end of a test body: lets broker_cleanup delete the dir. */
void broker_mark_passed(struct test_broker *b);
/* Kills a still-running process and removes the temp dir unless the test
 * did not pass or CAIRN_KEEP_TEST_DIRS=1. Safe to call twice. */
void broker_cleanup(struct test_broker *b);

/* Prints the last `lines` lines of the broker log to stderr. */
void broker_print_log_tail(const struct test_broker *b, int lines);
/* Waits up to timeout_ms for a line of the broker log holding needle;
 * fails the test with the log's tail otherwise. */
void broker_wait_log(struct test_broker *b, const char *needle, int timeout_ms);
/* True if a line of the broker log contains needle. */
bool broker_log_contains(const struct test_broker *b, const char *needle);

/* Path of the cairnd binary in use (env CAIRND, else the build's). */
const char *broker_binary(void);

/* A loopback port nobody listens on right now, or -1. */
int harness_free_port(void);

/* Milliseconds on a monotonic clock. */
long long harness_now_ms(void);

/* Greatest segment base offset in one of the broker's partition dirs
 * ("topic-0"): the active segment's, which shows how much was written
 * whatever the log cleaner did meanwhile. Fails the test when the dir
 * cannot be read. */
long long broker_active_segment_base(const struct test_broker *b, const char *partition_dir);

/* Calls fn for every whole record batch (log overhead included) stored in
 * the .log files of one of the broker's partition dirs, file by file in
 * directory order; a torn tail ends its file. Returns the batches seen. */
typedef void (*broker_batch_fn)(const uint8_t *batch, size_t len, void *ctx);
int broker_each_stored_batch(const struct test_broker *b, const char *partition_dir, broker_batch_fn fn, void *ctx);

#endif
