/* What unit tests of the internal topics (group log, transaction log) need
 * underneath them: a temp dir holding a metadata store, which checks topic
 * configs as the broker does, and a log manager without its background
 * thread, so the test decides when anything runs. Reopening closes and opens
 * both over the same dir, as a broker restart would. Failures to open end the
 * test through cmocka's fail_msg. */
#ifndef CAIRN_TESTS_UNIT_FIXTURE_H
#define CAIRN_TESTS_UNIT_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "log/log_manager.h"
#include "metadata/metadata_store.h"

/* The cluster id every store in the fixture is created with. */
#define UNIT_FIXTURE_CLUSTER_ID "q1Sh-9_ISia_zwGINzRvyQ"

/* Owned by the test's thread; nothing in it is shared. Layers a test builds
 * on top (group log, coordinators) must be closed before the stores. */
struct unit_fixture {
    char dir[96];
    struct metadata_endpoint endpoint; /* node 1's PLAINTEXT listener */
    struct metadata_store *metadata;   /* NULL while closed */
    struct log_manager *logs;          /* NULL while closed */
};

/* Makes a fresh /tmp/<prefix>-XXXXXX dir; opens nothing. 0, or -1 when the
 * dir cannot be made. */
int unit_fixture_init(struct unit_fixture *f, const char *prefix);

/* Opens the metadata store (node 1) and a log manager over the fixture's
 * dir. */
void unit_fixture_open(struct unit_fixture *f);

/* The same, with the partition logs kept in log_dir instead. */
void unit_fixture_open_logs_in(struct unit_fixture *f, const char *log_dir);

/* Closes whatever is open (flushing nothing further); safe when closed. */
void unit_fixture_close(struct unit_fixture *f);

/* Close then open over the same dir: what a restarted broker finds. */
void unit_fixture_reopen(struct unit_fixture *f);

/* True while the stores are open. */
bool unit_fixture_is_open(const struct unit_fixture *f);

/* Closes and removes the dir with everything in it. 0, or -1 when some
 * entry could not be removed. */
int unit_fixture_destroy(struct unit_fixture *f);

/* For cmocka setups: allocates a zeroed test fixture of `size` bytes whose
 * first member is a struct unit_fixture, initialises that member and stores
 * the fixture in *state. 0, or -1 (nothing left allocated). */
int unit_fixture_setup(void **state, size_t size, const char *prefix);

/* For cmocka teardowns, after the test closed its own layers: destroys the
 * fixture's first member and frees the fixture. 0, or -1 as
 * unit_fixture_destroy. */
int unit_fixture_teardown(void *fixture);

#endif
