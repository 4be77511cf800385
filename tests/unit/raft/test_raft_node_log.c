/* The quorum state machine's log: DescribeQuorum's replica states, entries
 * kept on disk with headers in memory, the log start behind a snapshot and
 * a follower installing one. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raft/raft.h"
#include "raft_node_support.h"

/* DescribeQuorum's views: per replica its fetch offset, last fetch and last
 * caught-up time, as Kafka's LeaderState keeps them. */
static void test_replica_states(void **state)
{
    (void)state;
    struct raft_node *node = make_node(0, NULL, NULL, 0);
    struct raft_replica_state voters[RAFT_MAX_VOTERS], observers[4];
    assert_true(raft_node_voter_states(node, voters) < 0); /* only the leader knows */
    assert_true(raft_node_observer_states(node, observers, 4) < 0);
    int64_t now = elect(node);
    int32_t epoch = raft_node_epoch(node);
    int64_t off;
    assert_int_equal(raft_node_append(node, now, "b", 1, 3, &off), RAFT_OK);
    assert_int_equal(raft_node_voter_states(node, voters), 3);
    assert_int_equal(voters[0].replica_id, 0);
    assert_int_equal(voters[0].log_end_offset, 4);
    assert_int_equal(voters[0].last_fetch_ms, now);
    assert_int_equal(voters[1].replica_id, 1);
    assert_int_equal(voters[1].log_end_offset, -1);
    assert_int_equal(voters[1].last_fetch_ms, -1);
    assert_int_equal(voters[1].last_caught_up_ms, -1);

    fetch_at(node, now + 10, 1, 4, epoch); /* at the leader's end: caught up */
    fetch_at(node, now + 20, 2, 1, epoch); /* behind */
    assert_int_equal(raft_node_voter_states(node, voters), 3);
    assert_int_equal(voters[1].log_end_offset, 4);
    assert_int_equal(voters[1].last_fetch_ms, now + 10);
    assert_int_equal(voters[1].last_caught_up_ms, now + 10);
    assert_int_equal(voters[2].log_end_offset, 1);
    assert_int_equal(voters[2].last_fetch_ms, now + 20);
    assert_int_equal(voters[2].last_caught_up_ms, -1);

    /* The leader moved on, but voter 2 reached the end the leader had at
     * its previous fetch: caught up as of that fetch. */
    assert_int_equal(raft_node_append(node, now + 25, "c", 1, 2, &off), RAFT_OK);
    fetch_at(node, now + 30, 2, 4, epoch);
    raft_node_voter_states(node, voters);
    assert_int_equal(voters[2].log_end_offset, 4);
    assert_int_equal(voters[2].last_caught_up_ms, now + 20);
    /* A fetch that diverges (inside the last batch) changes nothing. */
    fetch_at(node, now + 35, 2, 5, epoch);
    raft_node_voter_states(node, voters);
    assert_int_equal(voters[2].log_end_offset, 4);
    assert_int_equal(voters[2].last_fetch_ms, now + 30);
    assert_int_equal(raft_node_high_watermark(node), 4); /* two voters of three hold 0..3 */

    /* Observers are listed apart, and forgotten after their session. */
    fetch_at(node, now + 40, 7, 0, 0);
    assert_int_equal(raft_node_observer_states(node, observers, 4), 1);
    assert_int_equal(observers[0].replica_id, 7);
    assert_int_equal(observers[0].log_end_offset, 0);
    assert_int_equal(observers[0].last_fetch_ms, now + 40);
    assert_int_equal(raft_node_observer_states(node, observers, 0), 1); /* counted past cap */
    /* Voters keep fetching, so the leader stays; the observer falls silent. */
    int64_t later = now + 40 + RAFT_OBSERVER_SESSION_MS;
    fetch_at(node, later, 1, 6, epoch);
    fetch_at(node, later, 2, 6, epoch);
    assert_int_equal(raft_node_role(node), RAFT_LEADER);
    assert_int_equal(raft_node_observer_states(node, observers, 4), 0);
    raft_node_voter_states(node, voters);
    assert_int_equal(voters[1].last_caught_up_ms, later);
    raft_node_destroy(node);
}

/* entries_on_disk: the core keeps headers only, restored or appended, and
 * its APPEND output still carries the bytes for the store. */
static void test_entries_on_disk_keeps_headers(void **state)
{
    (void)state;
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = 0;
    cfg.n_voters = 1;
    cfg.voters[0] = 0;
    cfg.entries_on_disk = true;
    struct raft_entry restored = {.offset = 0, .epoch = 1, .count = 2, .len = 5, .data = NULL};
    struct raft_node *node;
    assert_int_equal(raft_node_create(&node, &cfg, NULL, &restored, 1, 0), RAFT_OK);
    const struct raft_entry *e = raft_node_entry(node, 1);
    assert_non_null(e);
    assert_null(e->data);
    assert_int_equal(e->len, 5);
    struct outs outs;
    for (int64_t now = 0; now < 5000 && raft_node_role(node) != RAFT_LEADER; now += 10) {
        raft_node_tick(node, now);
        drain(node, &outs);
        const struct raft_output *persist = find_type(&outs, RAFT_OUT_PERSIST_QS);
        uint64_t version = persist ? persist->qs_version : 0;
        outs_free(&outs);
        if (version)
            raft_node_qs_persisted(node, now, version);
        drain(node, &outs);
        outs_free(&outs);
    }
    assert_int_equal(raft_node_role(node), RAFT_LEADER);
    int64_t offset = -1;
    assert_int_equal(raft_node_append(node, 5000, "hello", 5, 1, &offset), RAFT_OK);
    drain(node, &outs);
    const struct raft_output *append = find_type(&outs, RAFT_OUT_APPEND);
    assert_non_null(append);
    assert_int_equal(append->entry.offset, offset);
    assert_memory_equal(append->entry.data, "hello", 5);
    outs_free(&outs);
    e = raft_node_entry(node, offset);
    assert_non_null(e);
    assert_null(e->data);
    assert_int_equal(e->len, 5);
    raft_node_destroy(node);
}

/* KIP-630 at the leader: the log start moves only to a committed entry
 * boundary with its epoch, and a fetch below it (or at it with another
 * epoch) is answered with the snapshot's id instead of records. */
static void test_log_start_answers_snapshot(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 1, 1};
    struct raft_quorum_state qs = {.leader_epoch = 1, .voted_id = RAFT_NO_ID, .leader_id = RAFT_NO_ID};
    struct raft_node *node = make_node(0, &qs, epochs, 3);
    int64_t now = elect(node);
    int32_t epoch = raft_node_epoch(node);
    struct outs outs;
    raft_node_flushed(node, now, 4);
    struct raft_msg m = fetch_req(1, epoch, 4, epoch);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    outs_free(&outs);
    assert_int_equal(raft_node_high_watermark(node), 4);
    assert_int_equal(raft_node_advance_log_start(node, 4, 1), RAFT_ERR_INVALID);     /* entry 3 is of epoch 2 */
    assert_int_equal(raft_node_advance_log_start(node, 5, epoch), RAFT_ERR_INVALID); /* past the HW */
    assert_int_equal(raft_node_advance_log_start(node, 3, 1), RAFT_OK);
    assert_int_equal(raft_node_log_start(node), 3);
    assert_null(raft_node_entry(node, 2));
    assert_non_null(raft_node_entry(node, 3));

    struct {
        int64_t offset;
        int32_t last_epoch;
        bool snapshot;
    } cases[] = {{0, 0, true}, {1, 1, true}, {3, 0, true}, {3, 1, false}, {4, epoch, false}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        m = fetch_req(2, epoch, cases[i].offset, cases[i].last_epoch);
        raft_node_receive(node, now, &m);
        drain(node, &outs);
        const struct raft_output *resp = find_send(&outs, RAFT_MSG_FETCH_RESP, 2);
        assert_non_null(resp);
        const struct raft_fetch_resp *fr = &resp->msg.u.fetch_resp;
        assert_int_equal(fr->error_code, RAFT_OK);
        assert_int_equal(fr->diverging_end_offset, -1);
        assert_int_equal(fr->snapshot_end_offset, cases[i].snapshot ? 3 : -1);
        assert_int_equal(fr->snapshot_epoch, cases[i].snapshot ? 1 : -1);
        assert_int_equal(fr->n_records, cases[i].snapshot || cases[i].offset == 4 ? 0 : 1);
        assert_int_equal(fr->high_watermark, 4);
        outs_free(&outs);
    }

    /* An empty log past its start still checks epochs against the snapshot's. */
    assert_int_equal(raft_node_advance_log_start(node, 4, epoch), RAFT_OK);
    assert_int_equal(raft_node_end_offset(node), 4);
    assert_null(raft_node_entry(node, 3));
    m = fetch_req(2, epoch, 4, epoch);
    raft_node_receive(node, now, &m);
    drain(node, &outs);
    assert_int_equal(find_send(&outs, RAFT_MSG_FETCH_RESP, 2)->msg.u.fetch_resp.snapshot_end_offset, -1);
    outs_free(&outs);
    raft_node_destroy(node);
}

/* KIP-630 at a follower: a SnapshotId answer asks the caller to download
 * it and stops fetching until raft_node_snapshot_done; the download's
 * progress keeps the leader's silence from starting an election; once
 * installed, the log starts at the snapshot's end and fetching goes on. */
static void test_follower_installs_snapshot(void **state)
{
    (void)state;
    int32_t epochs[] = {1, 1};
    struct raft_quorum_state qs = {.leader_epoch = 3, .voted_id = RAFT_NO_ID, .leader_id = 2};
    struct raft_node *node = make_node(0, &qs, epochs, 2);
    struct outs outs;
    raft_node_tick(node, 1);
    drain(node, &outs);
    const struct raft_output *req = find_send(&outs, RAFT_MSG_FETCH_REQ, 2);
    assert_non_null(req);
    struct raft_msg m = {.type = RAFT_MSG_FETCH_RESP, .src = 2, .dst = 0, .correlation_id = req->msg.correlation_id};
    m.u.fetch_resp = (struct raft_fetch_resp){.high_watermark = 12,
                                              .diverging_epoch = -1,
                                              .diverging_end_offset = -1,
                                              .current_leader_id = 2,
                                              .current_leader_epoch = 3,
                                              .fetch_offset = 2,
                                              .snapshot_end_offset = 10,
                                              .snapshot_epoch = 2};
    outs_free(&outs);
    raft_node_receive(node, 2, &m);
    drain(node, &outs);
    const struct raft_output *want = find_type(&outs, RAFT_OUT_FETCH_SNAPSHOT);
    assert_non_null(want);
    assert_int_equal(want->offset, 10);
    assert_int_equal(want->epoch, 2);
    assert_int_equal(want->leader_id, 2);
    outs_free(&outs);

    for (int64_t now = 500; now <= 6000; now += 500) {
        raft_node_snapshot_progress(node, now);
        raft_node_tick(node, now);
        drain(node, &outs);
        assert_null(find_send(&outs, RAFT_MSG_FETCH_REQ, -1));
        assert_int_equal(raft_node_role(node), RAFT_FOLLOWER);
        outs_free(&outs);
    }
    assert_int_equal(raft_node_log_bytes(node), 2);
    raft_node_snapshot_done(node, 6001, true, 10, 2);
    drain(node, &outs);
    assert_int_equal(raft_node_log_bytes(node), 0);
    assert_int_equal(raft_node_log_start(node), 10);
    assert_int_equal(raft_node_end_offset(node), 10);
    assert_int_equal(raft_node_high_watermark(node), 10);
    assert_non_null(find_type(&outs, RAFT_OUT_HIGH_WATERMARK));
    req = find_send(&outs, RAFT_MSG_FETCH_REQ, 2);
    assert_non_null(req);
    assert_int_equal(req->msg.u.fetch_req.fetch_offset, 10);
    assert_int_equal(req->msg.u.fetch_req.last_fetched_epoch, 2);
    outs_free(&outs);
    raft_node_destroy(node);

    /* A restart from a cleaned log: entries from the configured start. */
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = 0;
    cfg.n_voters = 1;
    cfg.log_start_offset = 5;
    cfg.log_start_epoch = 1;
    struct raft_entry e = {.offset = 5, .epoch = 1, .count = 2, .len = 1, .data = (uint8_t *)"x"};
    assert_int_equal(raft_node_create(&node, &cfg, NULL, &e, 1, 0), RAFT_OK);
    assert_int_equal(raft_node_end_offset(node), 7);
    assert_int_equal(raft_node_high_watermark(node), 5);
    raft_node_destroy(node);
    e.offset = 0;
    assert_int_equal(raft_node_create(&node, &cfg, NULL, &e, 1, 0), RAFT_ERR_INVALID);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_replica_states),
        cmocka_unit_test(test_entries_on_disk_keeps_headers),
        cmocka_unit_test(test_log_start_answers_snapshot),
        cmocka_unit_test(test_follower_installs_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
