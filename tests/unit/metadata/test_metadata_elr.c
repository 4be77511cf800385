/* Eligible Leader Replicas (KIP-966) at the controller: the ELR one
 * partition gets as its ISR shrinks below min.insync.replicas and grows
 * back, clean elections from it when the ISR is empty, unclean ones
 * preferring LastKnownElr, and the store doing the same through fencing,
 * AlterPartition, broker registration and reassignment cancellation with the
 * feature eligible.leader.replicas.version finalized (and not, when off). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "metadata/metadata_alter_partition.h"
#include "metadata/metadata_builder.h"
#include "metadata/metadata_reassign.h"
#include "metadata/metadata_records.h"
#include "metadata/metadata_election.h"
#include "metadata/metadata_store.h"
#include "metadata_store_fixture.h"
#include "protocol/generated/errors.h"

/* ---- one partition ---- */

struct live_set {
    unsigned mask; /* bit i: broker i is live */
};

static bool live(void *ctx, int32_t id)
{
    const struct live_set *l = ctx;
    return id >= 0 && id < 32 && (l->mask & (1u << id));
}

static void assert_ids(const int32_t *got, int32_t n, const int32_t *want, int32_t wn)
{
    assert_int_equal(n, wn);
    for (int32_t i = 0; i < n; i++)
        assert_int_equal(got[i], want[i]);
}

static int32_t replicas123[] = {1, 2, 3};

static struct metadata_partition partition(int32_t *isr, int32_t ic, int32_t *elr, int32_t ec, int32_t leader)
{
    return (struct metadata_partition){.present = true,
                                       .leader = leader,
                                       .replicas = replicas123,
                                       .replica_count = 3,
                                       .isr = isr,
                                       .isr_count = ic,
                                       .elr = elr,
                                       .elr_count = ec};
}

static const struct metadata_elr_policy min2 = {.enabled = true, .min_isr = 2, .unclean_restart_id = -1};

/* ISR {1,2} at min 2 loses 2: the ISR is {1}, below the minimum, and 2
 * (which has everything up to the high watermark) is kept in the ELR. */
static void test_shrink_below_min_keeps_elr(void **state)
{
    (void)state;
    int32_t isr[] = {1, 2}, buf[64];
    struct metadata_partition p = partition(isr, 2, NULL, 0, 1);
    struct live_set l = {(1u << 1) | (1u << 3)};
    struct metadata_partition_change c;
    assert_true(metadata_elect_partition_elr(&p, 2, live, &l, false, &min2, &c, buf));
    assert_int_equal(c.leader, -2);
    assert_ids(c.isr, c.isr_count, (int32_t[]){1}, 1);
    assert_non_null(c.elr);
    assert_ids(c.elr, c.elr_count, (int32_t[]){2}, 1);
    assert_null(c.last_known_elr);
    /* At min 1 the ISR {1} is enough: no ELR. */
    struct metadata_elr_policy min1 = {.enabled = true, .min_isr = 1, .unclean_restart_id = -1};
    assert_true(metadata_elect_partition_elr(&p, 2, live, &l, false, &min1, &c, buf));
    assert_null(c.elr);
}

/* The leader, last ISR member, is fenced: the ISR empties (with ELR the
 * last member is not kept) and the live ELR member 2 leads, alone in the
 * ISR; 1 joins the ELR. */
static void test_leader_loss_elects_from_elr(void **state)
{
    (void)state;
    int32_t isr[] = {1}, elr[] = {2}, buf[64];
    struct metadata_partition p = partition(isr, 1, elr, 1, 1);
    struct live_set l = {(1u << 2)};
    struct metadata_partition_change c;
    assert_true(metadata_elect_partition_elr(&p, 1, live, &l, false, &min2, &c, buf));
    assert_int_equal(c.leader, 2);
    assert_ids(c.isr, c.isr_count, (int32_t[]){2}, 1);
    assert_ids(c.elr, c.elr_count, (int32_t[]){1}, 1);
    /* Without ELR the same partition keeps 1 in the ISR and goes offline,
     * and the ELR it carries is cleared. */
    assert_true(metadata_elect_partition_elr(&p, 1, live, &l, false, NULL, &c, buf));
    assert_int_equal(c.leader, -1);
    assert_null(c.isr);
    assert_non_null(c.elr);
    assert_int_equal(c.elr_count, 0);
}

/* A fenced ELR member is not elected: the partition is offline with an
 * empty ISR until it comes back, then it leads. */
static void test_fenced_elr_member_not_elected(void **state)
{
    (void)state;
    int32_t isr[] = {1}, elr[] = {2}, buf[64];
    struct metadata_partition p = partition(isr, 1, elr, 1, 1);
    struct live_set none = {0};
    struct metadata_partition_change c;
    assert_true(metadata_elect_partition_elr(&p, 1, live, &none, false, &min2, &c, buf));
    assert_int_equal(c.leader, -1);
    assert_non_null(c.isr);
    assert_int_equal(c.isr_count, 0);
    assert_ids(c.elr, c.elr_count, (int32_t[]){2, 1}, 2);
    /* The state that left: ISR {}, ELR {2,1}; 2 unfenced leads. */
    int32_t elr_after[] = {2, 1};
    struct metadata_partition offline = partition(NULL, 0, elr_after, 2, -1);
    assert_false(metadata_elect_partition_elr(&offline, -1, live, &none, false, &min2, &c, buf));
    struct live_set with2 = {(1u << 2)};
    assert_true(metadata_elect_partition_elr(&offline, -1, live, &with2, false, &min2, &c, buf));
    assert_int_equal(c.leader, 2);
    assert_ids(c.isr, c.isr_count, (int32_t[]){2}, 1);
    assert_ids(c.elr, c.elr_count, (int32_t[]){1}, 1);
    /* A live replica outside ISR and ELR (3) is no clean choice. */
    struct live_set only3 = {(1u << 3)};
    assert_false(metadata_elect_partition_elr(&offline, -1, live, &only3, false, &min2, &c, buf));
    /* Unclean election takes it, clearing both lists. */
    assert_true(metadata_elect_partition_elr(&offline, -1, live, &only3, true, &min2, &c, buf));
    assert_int_equal(c.leader, 3);
    assert_ids(c.isr, c.isr_count, (int32_t[]){3}, 1);
    assert_non_null(c.elr);
    assert_int_equal(c.elr_count, 0);
}

/* The ISR growing back: still below the minimum, a member joining it
 * leaves the ELR; at the minimum the ELR and LastKnownElr empty. */
static void test_isr_growth_clears_elr(void **state)
{
    (void)state;
    int32_t isr[] = {1}, elr[] = {2, 3}, lke[] = {3}, out[16], out_lke[16];
    struct metadata_partition p = partition(isr, 1, elr, 2, 1);
    p.last_known_elr = lke;
    p.last_known_elr_count = 1;
    int32_t n = -1, ln = -1;
    struct metadata_elr_policy min3 = {.enabled = true, .min_isr = 3, .unclean_restart_id = -1};
    metadata_elr_target(&p, p.replicas, 3, (int32_t[]){1, 2}, 2, &min3, out, &n, out_lke, &ln);
    assert_ids(out, n, (int32_t[]){3}, 1);
    assert_int_equal(ln, 0); /* 3 is in the ELR again */
    metadata_elr_target(&p, p.replicas, 3, (int32_t[]){1, 2}, 2, &min2, out, &n, out_lke, &ln);
    assert_int_equal(n, 0);
    assert_int_equal(ln, 0);
}

/* A broker back from an unclean shutdown leaves the ELR for LastKnownElr. */
static void test_unclean_restart_leaves_elr(void **state)
{
    (void)state;
    int32_t elr[] = {2, 1}, buf[64];
    struct metadata_partition p = partition(NULL, 0, elr, 2, -1);
    struct metadata_elr_policy policy = {.enabled = true, .min_isr = 2, .unclean_restart_id = 2};
    struct live_set with2 = {(1u << 2)};
    struct metadata_partition_change c;
    assert_true(metadata_elect_partition_elr(&p, -1, live, &with2, false, &policy, &c, buf));
    assert_int_equal(c.leader, -2); /* still offline: 2 may have lost records */
    assert_ids(c.elr, c.elr_count, (int32_t[]){1}, 1);
    assert_ids(c.last_known_elr, c.last_known_elr_count, (int32_t[]){2}, 1);
}

/* ISR and ELR empty, 3 in LastKnownElr (back from an unclean shutdown),
 * 1 never in sync: an unclean election takes 3, though 1 comes first in
 * replica order (KIP-966's recovery from the last known ELR); without
 * unclean election the partition stays offline. */
static void test_unclean_election_prefers_last_known_elr(void **state)
{
    (void)state;
    int32_t lke[] = {3}, buf[64];
    struct metadata_partition p = partition(NULL, 0, NULL, 0, -1);
    p.last_known_elr = lke;
    p.last_known_elr_count = 1;
    struct live_set with1and3 = {(1u << 1) | (1u << 3)};
    struct metadata_partition_change c;
    assert_false(metadata_elect_partition_elr(&p, -1, live, &with1and3, false, &min2, &c, buf));
    assert_true(metadata_elect_partition_elr(&p, -1, live, &with1and3, true, &min2, &c, buf));
    assert_int_equal(c.leader, 3);
    assert_ids(c.isr, c.isr_count, (int32_t[]){3}, 1);
    assert_non_null(c.last_known_elr);
    assert_int_equal(c.last_known_elr_count, 0);
    /* 3 fenced: any live replica, as before. */
    struct live_set only1 = {(1u << 1)};
    assert_true(metadata_elect_partition_elr(&p, -1, live, &only1, true, &min2, &c, buf));
    assert_int_equal(c.leader, 1);
    /* A live ELR member is a clean choice and comes before LastKnownElr. */
    int32_t elr[] = {2};
    p.elr = elr;
    p.elr_count = 1;
    struct live_set all = {(1u << 1) | (1u << 2) | (1u << 3)};
    assert_true(metadata_elect_partition_elr(&p, -1, live, &all, true, &min2, &c, buf));
    assert_int_equal(c.leader, 2);
    /* Without ELR, LastKnownElr means nothing: replica order. */
    p.elr = NULL;
    p.elr_count = 0;
    assert_true(metadata_elect_partition_elr(&p, -1, live, &with1and3, true, NULL, &c, buf));
    assert_int_equal(c.leader, 1);
}

/* ---- through the store ---- */

static int setup_with(void **state, bool elr)
{
    struct fixture *f = fixture_new("/tmp/cairn-elr-XXXXXX");
    if (!f)
        return -1;
    f->opts.eligible_leader_replicas_enable = elr;
    open_store(f);
    char err[256] = "";
    for (int32_t id = 2; id <= 3; id++) {
        struct metadata_endpoint ep = {"PLAINTEXT", "localhost", (uint16_t)(9090 + id), 0};
        int64_t epoch = -1;
        if (metadata_register_broker(f->store, id, &ep, 1, NULL, NULL, false, &epoch, err, sizeof err) !=
            KAFKA_ERR_NONE)
            fail_msg("register %d: %s", (int)id, err);
    }
    *state = f;
    return 0;
}

static int setup_on(void **state)
{
    return setup_with(state, true);
}

static int setup_off(void **state)
{
    return setup_with(state, false);
}

static int teardown(void **state)
{
    return fixture_free(*state);
}

static const struct metadata_partition *part_of(const struct metadata_image *img, const char *topic)
{
    const struct metadata_topic *t = metadata_image_topic_by_name(img, topic, strlen(topic));
    assert_non_null(t);
    const struct metadata_partition *p = metadata_topic_partition(t, 0);
    assert_non_null(p);
    return p;
}

static int64_t broker_epoch(struct metadata_store *store, int32_t id)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    int64_t e = metadata_image_broker(img, id)->epoch;
    metadata_image_release(img);
    return e;
}

static void set_fenced(struct metadata_store *store, int32_t id, bool fenced)
{
    char err[256] = "";
    assert_int_equal(metadata_set_broker_fenced(store, id, broker_epoch(store, id), fenced, err, sizeof err),
                     KAFKA_ERR_NONE);
}

/* Topic "e": replicas {1,2,3}, leader 1, min.insync.replicas=2. */
static void create_topic(struct metadata_store *store)
{
    char err[256] = "";
    int32_t r0[] = {1, 2, 3};
    struct metadata_replica_assignment a = {0, r0, 3};
    struct metadata_config_kv kv = {METADATA_MIN_ISR_KEY, "2"};
    assert_int_equal(metadata_create_topic(store, "e", -1, -1, &a, 1, &kv, 1, false, NULL, err, sizeof err),
                     KAFKA_ERR_NONE);
}

/* The leader's AlterPartition setting the ISR of "e" to isr. */
static void alter_isr(struct metadata_store *store, const int32_t *isr, int32_t n)
{
    const struct metadata_image *img = metadata_image_acquire(store);
    const struct metadata_topic *t = metadata_image_topic_by_name(img, "e", 1);
    const struct metadata_partition *p = part_of(img, "e");
    struct metadata_isr_member members[5];
    for (int32_t i = 0; i < n; i++)
        members[i] = (struct metadata_isr_member){isr[i], -1};
    struct metadata_isr_change c = {.topic_id = t->topic_id,
                                    .partition_index = 0,
                                    .leader_epoch = p->leader_epoch,
                                    .partition_epoch = p->partition_epoch,
                                    .isr = members,
                                    .isr_count = n};
    int32_t leader = p->leader;
    metadata_image_release(img);
    char err[256] = "";
    assert_int_equal(metadata_alter_partition(store, leader, broker_epoch(store, leader), 3, &c, 1, err, sizeof err),
                     KAFKA_ERR_NONE);
    assert_int_equal(c.error_code, KAFKA_ERR_NONE);
}

/* A snapshot's records of img (metadata_image_to_records) rebuild it, ELR,
 * LastKnownElr and the feature level included. */
static void assert_snapshot_rebuilds(const struct metadata_image *img)
{
    struct metadata_record_list records;
    assert_int_equal(metadata_record_list_init(&records), 0);
    assert_int_equal(metadata_image_to_records(img, &records), 0);
    struct metadata_builder *b = metadata_builder_new(NULL);
    assert_non_null(b);
    char err[256] = "";
    size_t start = 0;
    for (int32_t i = 0; i < records.count; i++) {
        enum metadata_apply_result r = metadata_record_apply(b, records.w.buf + start, records.ends[i] - start, i, err,
                                                             sizeof err);
        if (r != METADATA_APPLY_OK)
            fail_msg("snapshot record %d: %s", (int)i, err);
        start = records.ends[i];
    }
    assert_int_equal(metadata_builder_set_cluster(b, img->cluster_id, img->controller_id, err, sizeof err), 0);
    struct metadata_image *rebuilt = metadata_builder_finish(b, img->last_offset);
    assert_non_null(rebuilt);
    assert_true(metadata_image_equal(img, rebuilt));
    metadata_image_release(rebuilt);
    metadata_record_list_free(&records);
}

/* The story: the ISR shrinks to the leader alone, the leader dies,
 * the ELR member returns and leads, the ISR grows back and the ELR clears;
 * a reopen replays the same state. */
static void test_store_elects_returning_elr_member(void **state)
{
    struct fixture *f = *state;
    create_topic(f->store);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_int_equal(img->elr_version, 1);
    metadata_image_release(img);
    alter_isr(f->store, (int32_t[]){1, 2}, 2); /* 3 lags: at the minimum, no ELR */
    img = metadata_image_acquire(f->store);
    assert_int_equal(part_of(img, "e")->elr_count, 0);
    metadata_image_release(img);
    set_fenced(f->store, 3, true);
    set_fenced(f->store, 2, true); /* ISR {1}: 2 kept in the ELR */
    img = metadata_image_acquire(f->store);
    const struct metadata_partition *p = part_of(img, "e");
    assert_ids(p->isr, p->isr_count, (int32_t[]){1}, 1);
    assert_ids(p->elr, p->elr_count, (int32_t[]){2}, 1);
    metadata_image_release(img);
    set_fenced(f->store, 1, true); /* the leader dies: offline, ISR empty */
    img = metadata_image_acquire(f->store);
    p = part_of(img, "e");
    assert_int_equal(p->leader, -1);
    assert_int_equal(p->isr_count, 0);
    assert_ids(p->elr, p->elr_count, (int32_t[]){2, 1}, 2);
    metadata_image_release(img);
    set_fenced(f->store, 3, false); /* not eligible: still offline */
    img = metadata_image_acquire(f->store);
    assert_int_equal(part_of(img, "e")->leader, -1);
    metadata_image_release(img);
    set_fenced(f->store, 2, false); /* the ELR member returns: it leads */
    img = metadata_image_acquire(f->store);
    p = part_of(img, "e");
    assert_int_equal(p->leader, 2);
    assert_ids(p->isr, p->isr_count, (int32_t[]){2}, 1);
    assert_ids(p->elr, p->elr_count, (int32_t[]){1}, 1);
    metadata_image_release(img);
    alter_isr(f->store, (int32_t[]){2, 3}, 2); /* back at the minimum */
    img = metadata_image_acquire(f->store);
    p = part_of(img, "e");
    assert_ids(p->isr, p->isr_count, (int32_t[]){2, 3}, 2);
    assert_int_equal(p->elr_count, 0);
    assert_int_equal(p->last_known_elr_count, 0);
    metadata_image_release(img);

    alter_isr(f->store, (int32_t[]){2}, 1); /* below again: 3 in the ELR */
    metadata_store_close(f->store);
    f->store = NULL;
    open_store(f);
    img = metadata_image_acquire(f->store);
    p = part_of(img, "e");
    assert_int_equal(img->elr_version, 1);
    assert_ids(p->isr, p->isr_count, (int32_t[]){2}, 1);
    assert_ids(p->elr, p->elr_count, (int32_t[]){3}, 1);
    assert_snapshot_rebuilds(img);
    metadata_image_release(img);
}

/* With the feature off the same story leaves the partition offline, with
 * no ELR, as before KIP-966. */
static void test_store_off_stays_offline(void **state)
{
    struct fixture *f = *state;
    create_topic(f->store);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    assert_int_equal(img->elr_version, 0);
    metadata_image_release(img);
    alter_isr(f->store, (int32_t[]){1, 2}, 2);
    set_fenced(f->store, 3, true);
    set_fenced(f->store, 2, true);
    set_fenced(f->store, 1, true);
    set_fenced(f->store, 2, false);
    img = metadata_image_acquire(f->store);
    const struct metadata_partition *p = part_of(img, "e");
    assert_int_equal(p->leader, -1);
    assert_ids(p->isr, p->isr_count, (int32_t[]){1}, 1);
    assert_int_equal(p->elr_count, 0);
    metadata_image_release(img);
}

/* A fenced ELR member registering again as a new process without proof of
 * a clean shutdown leaves the ELR for LastKnownElr and does not lead. */
static void test_store_unclean_restart_leaves_elr(void **state)
{
    struct fixture *f = *state;
    create_topic(f->store);
    set_fenced(f->store, 3, true);
    set_fenced(f->store, 2, true);
    set_fenced(f->store, 1, true); /* ISR {}, ELR {2,1} */
    struct metadata_endpoint ep = {"PLAINTEXT", "localhost", 9092, 0};
    struct metadata_incarnation inc = {.previous_epoch = -1};
    memset(inc.id.bytes, 0x5a, sizeof inc.id.bytes);
    int64_t epoch = -1;
    char err[256] = "";
    assert_int_equal(metadata_register_broker(f->store, 2, &ep, 1, NULL, &inc, false, &epoch, err, sizeof err),
                     KAFKA_ERR_NONE);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    const struct metadata_partition *p = part_of(img, "e");
    assert_false(metadata_image_broker(img, 2)->fenced);
    assert_int_equal(p->leader, -1);
    assert_ids(p->elr, p->elr_count, (int32_t[]){1}, 1);
    assert_ids(p->last_known_elr, p->last_known_elr_count, (int32_t[]){2}, 1);
    assert_snapshot_rebuilds(img);
    metadata_image_release(img);
}

static void register_broker(struct metadata_store *store, int32_t id)
{
    struct metadata_endpoint ep = {"PLAINTEXT", "localhost", (uint16_t)(9090 + id), 0};
    int64_t epoch = -1;
    char err[256] = "";
    if (metadata_register_broker(store, id, &ep, 1, NULL, NULL, false, &epoch, err, sizeof err) != KAFKA_ERR_NONE)
        fail_msg("register %d: %s", (int)id, err);
}

static void reassign(struct metadata_store *store, const int32_t *replicas, int32_t n)
{
    struct metadata_reassignment it = {
        .topic = "e", .topic_len = 1, .partition_index = 0, .replicas = replicas, .replica_count = n};
    char err[256] = "";
    assert_int_equal(metadata_alter_reassignments(store, &it, 1, err, sizeof err), KAFKA_ERR_NONE);
    assert_int_equal(it.error_code, KAFKA_ERR_NONE);
}

/* A reassignment of {1,2,3} to {1,4,5} under way, 4 in sync, then the ISR
 * shrinks to {1}: the ELR is {2,3,4}. Cancelling restores {1,2,3}; 4, no
 * longer a replica, leaves the ELR in the cancellation's record (as it
 * leaves the ISR), and so does a LastKnownElr member. */
static void test_store_cancelled_reassignment_filters_elr(void **state)
{
    struct fixture *f = *state;
    register_broker(f->store, 4);
    register_broker(f->store, 5);
    create_topic(f->store);
    reassign(f->store, (int32_t[]){1, 4, 5}, 3);
    alter_isr(f->store, (int32_t[]){1, 2, 3, 4}, 4);
    alter_isr(f->store, (int32_t[]){1}, 1);
    const struct metadata_image *img = metadata_image_acquire(f->store);
    const struct metadata_partition *p = part_of(img, "e");
    assert_int_equal(p->replica_count, 5);
    assert_int_equal(p->elr_count, 3);
    metadata_image_release(img);
    reassign(f->store, NULL, 0); /* cancel */
    img = metadata_image_acquire(f->store);
    p = part_of(img, "e");
    assert_ids(p->replicas, p->replica_count, (int32_t[]){1, 2, 3}, 3);
    assert_ids(p->isr, p->isr_count, (int32_t[]){1}, 1);
    assert_int_equal(p->adding_count, 0);
    assert_int_equal(p->elr_count, 2);
    for (int32_t i = 0; i < p->elr_count; i++)
        assert_true(p->elr[i] == 2 || p->elr[i] == 3);
    metadata_image_release(img);

    /* LastKnownElr too: during a new reassignment to {1,4,5}, 4 joins the
     * ISR (at the minimum: the lists clear), the ISR shrinks to {1} (ELR
     * {4}), and 4 restarts uncleanly, moving to LastKnownElr; the
     * cancellation drops it. */
    reassign(f->store, (int32_t[]){1, 4, 5}, 3);
    alter_isr(f->store, (int32_t[]){1, 4}, 2);
    alter_isr(f->store, (int32_t[]){1}, 1);
    set_fenced(f->store, 4, true);
    struct metadata_endpoint ep = {"PLAINTEXT", "localhost", 9094, 0};
    struct metadata_incarnation inc = {.previous_epoch = -1};
    memset(inc.id.bytes, 0x4b, sizeof inc.id.bytes);
    int64_t epoch = -1;
    char err[256] = "";
    assert_int_equal(metadata_register_broker(f->store, 4, &ep, 1, NULL, &inc, false, &epoch, err, sizeof err),
                     KAFKA_ERR_NONE);
    img = metadata_image_acquire(f->store);
    p = part_of(img, "e");
    assert_int_equal(p->elr_count, 0);
    assert_ids(p->last_known_elr, p->last_known_elr_count, (int32_t[]){4}, 1);
    metadata_image_release(img);
    reassign(f->store, NULL, 0);
    img = metadata_image_acquire(f->store);
    p = part_of(img, "e");
    assert_ids(p->replicas, p->replica_count, (int32_t[]){1, 2, 3}, 3);
    assert_int_equal(p->last_known_elr_count, 0);
    assert_int_equal(p->elr_count, 0);
    assert_snapshot_rebuilds(img);
    metadata_image_release(img);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shrink_below_min_keeps_elr),
        cmocka_unit_test(test_leader_loss_elects_from_elr),
        cmocka_unit_test(test_fenced_elr_member_not_elected),
        cmocka_unit_test(test_isr_growth_clears_elr),
        cmocka_unit_test(test_unclean_restart_leaves_elr),
        cmocka_unit_test(test_unclean_election_prefers_last_known_elr),
        cmocka_unit_test_setup_teardown(test_store_elects_returning_elr_member, setup_on, teardown),
        cmocka_unit_test_setup_teardown(test_store_off_stays_offline, setup_off, teardown),
        cmocka_unit_test_setup_teardown(test_store_unclean_restart_leaves_elr, setup_on, teardown),
        cmocka_unit_test_setup_teardown(test_store_cancelled_reassignment_filters_elr, setup_on, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
