/* The simulated world: an event heap over simulated milliseconds, the
 * network, the disks, crashes and restarts, the fault schedule and the
 * client that appends to whoever leads. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

uint64_t sim_rand(struct sim_rng *r)
{
    /* splitmix64 */
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t sim_below(struct sim_rng *r, uint64_t bound)
{
    return bound ? sim_rand(r) % bound : 0;
}

void sim_trace(const struct sim_world *w, const char *fmt, ...)
{
    if (!w->trace)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("[%7lld] ", (long long)w->now);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

int64_t sim_local_time(const struct sim_world *w, int node)
{
    const struct sim_node *sn = &w->nodes[node];
    return w->now + w->now * sn->drift_ppm / 1000000 + sn->clock_offset;
}

/* ---- event heap, ordered by (time, seq) so runs are deterministic ---- */

static bool ev_before(const struct sim_event *a, const struct sim_event *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void heap_swap(struct sim_world *w, size_t i, size_t j)
{
    struct sim_event t = w->heap[i];
    w->heap[i] = w->heap[j];
    w->heap[j] = t;
}

static bool schedule(struct sim_world *w, struct sim_event *ev)
{
    if (w->heap_len == w->heap_cap) {
        size_t cap = w->heap_cap ? w->heap_cap * 2 : 256;
        struct sim_event *grown = realloc(w->heap, cap * sizeof *grown);
        if (!grown) {
            sim_violation(w, "simulator out of memory");
            raft_msg_clear(&ev->msg);
            return false;
        }
        w->heap = grown;
        w->heap_cap = cap;
    }
    ev->seq = w->next_seq++;
    size_t i = w->heap_len++;
    w->heap[i] = *ev;
    while (i > 0 && ev_before(&w->heap[i], &w->heap[(i - 1) / 2])) {
        heap_swap(w, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return true;
}

static struct sim_event heap_pop(struct sim_world *w)
{
    struct sim_event top = w->heap[0];
    w->heap[0] = w->heap[--w->heap_len];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < w->heap_len && ev_before(&w->heap[l], &w->heap[m]))
            m = l;
        if (r < w->heap_len && ev_before(&w->heap[r], &w->heap[m]))
            m = r;
        if (m == i)
            break;
        heap_swap(w, i, m);
        i = m;
    }
    return top;
}

/* ---- disks ---- */

static int64_t disk_latency(struct sim_world *w, struct sim_disk *d)
{
    return d->slow ? 50 + (int64_t)sim_below(&w->rng, 450) : 1 + (int64_t)sim_below(&w->rng, 4);
}

static int64_t disk_completion(struct sim_world *w, struct sim_disk *d)
{
    int64_t t = w->now + disk_latency(w, d);
    if (t < d->busy_until)
        t = d->busy_until;
    d->busy_until = t;
    return t;
}

int64_t sim_disk_end(const struct sim_disk *d)
{
    return d->len ? d->entries[d->len - 1].offset + d->entries[d->len - 1].count : 0;
}

static void disk_write(struct sim_world *w, int node, const struct raft_entry *e)
{
    struct sim_disk *d = &w->nodes[node].disk;
    if (e->offset != sim_disk_end(d) || e->count < 1) {
        sim_violation(w, "node %d wrote offset %lld (%d records) at disk end %lld", node, (long long)e->offset,
                      e->count, (long long)sim_disk_end(d));
        return;
    }
    if (d->len == d->cap) {
        int64_t cap = d->cap ? d->cap * 2 : 64;
        struct raft_entry *grown = realloc(d->entries, (size_t)cap * sizeof *grown);
        if (!grown) {
            sim_violation(w, "simulator out of memory");
            return;
        }
        d->entries = grown;
        d->cap = cap;
    }
    struct raft_entry *slot = &d->entries[d->len];
    *slot = *e;
    slot->data = malloc(e->len ? e->len : 1);
    if (!slot->data) {
        sim_violation(w, "simulator out of memory");
        return;
    }
    memcpy(slot->data, e->data, e->len);
    d->len++;
}

/* Drops every entry not wholly below offset: a torn batch is lost whole. */
static void disk_cut(struct sim_disk *d, int64_t offset)
{
    while (d->len > 0 && d->entries[d->len - 1].offset + d->entries[d->len - 1].count > offset)
        free(d->entries[--d->len].data);
    if (d->durable_end > sim_disk_end(d))
        d->durable_end = sim_disk_end(d);
}

/* How many entries end at or below the durable end. */
static int64_t disk_durable_entries(const struct sim_disk *d)
{
    int64_t n = d->len;
    while (n > 0 && d->entries[n - 1].offset + d->entries[n - 1].count > d->durable_end)
        n--;
    return n;
}

static void disk_truncate(struct sim_world *w, int node, int64_t offset)
{
    /* A truncation is durable at once here; an fsync queued before it
     * covers at most what survived it. */
    disk_cut(&w->nodes[node].disk, offset);
    for (size_t i = 0; i < w->heap_len; i++)
        if (w->heap[i].type == SIM_EV_FSYNC && w->heap[i].node == node && w->heap[i].offset > offset)
            w->heap[i].offset = offset;
}

/* ---- network ---- */

static void net_send(struct sim_world *w, struct raft_msg *msg)
{
    int from = msg->src, to = msg->dst;
    w->messages++;
    if (to < 0 || to >= w->n_nodes || w->blocked[from][to] || sim_below(&w->rng, 100) < w->loss_pct) {
        raft_msg_clear(msg);
        return;
    }
    int copies = sim_below(&w->rng, 100) < w->dup_pct ? 2 : 1;
    for (int c = 0; c < copies; c++) {
        struct sim_event ev = {
            .time = w->now + 1 + (int64_t)sim_below(&w->rng, (uint64_t)w->max_delay_ms),
            .type = SIM_EV_DELIVER,
            .node = to,
        };
        if (c == 0)
            ev.msg = *msg;
        else if (raft_msg_copy(&ev.msg, msg) != RAFT_OK)
            break;
        schedule(w, &ev);
    }
}

/* ---- nodes ---- */

/* Crash timing: during the faults some new leaders die within a few
 * message delays of their election, having written their LeaderChange
 * entry (and perhaps client entries) but replicated little of it. Such
 * short reigns leave logs whose last epochs differ, where a leader that
 * commits entries of an older epoch by counting replicas goes wrong. */
static void plan_leader_crash(struct sim_world *w, int node)
{
    if (w->now >= w->fault_end || sim_below(&w->rng, 100) >= w->leader_crash_pct)
        return;
    struct sim_event ev = {.time = w->now + 1 + (int64_t)sim_below(&w->rng, (uint64_t)(6 * w->max_delay_ms)),
                           .type = SIM_EV_CRASH,
                           .node = node,
                           .incarnation = w->nodes[node].incarnation};
    schedule(w, &ev);
}

static void drain(struct sim_world *w, int node)
{
    struct sim_node *sn = &w->nodes[node];
    struct raft_output o;
    bool wrote = false;
    while (sn->raft && raft_node_poll(sn->raft, &o)) {
        switch (o.type) {
        case RAFT_OUT_SEND:
            net_send(w, &o.msg);
            o.msg.type = 0; /* ownership went to the network */
            break;
        case RAFT_OUT_APPEND:
            disk_write(w, node, &o.entry);
            wrote = true;
            break;
        case RAFT_OUT_TRUNCATE:
            sim_trace(w, "n%d truncate to %lld", node, (long long)o.offset);
            sim_check_truncate(w, node, o.offset);
            disk_truncate(w, node, o.offset);
            break;
        case RAFT_OUT_PERSIST_QS: {
            struct sim_event ev = {.time = disk_completion(w, &sn->disk),
                                   .type = SIM_EV_QS_DONE,
                                   .node = node,
                                   .incarnation = sn->incarnation,
                                   .version = o.qs_version,
                                   .qs = o.qs};
            schedule(w, &ev);
            break;
        }
        case RAFT_OUT_HIGH_WATERMARK:
            sim_check_hw(w, node, o.offset);
            break;
        case RAFT_OUT_ROLE:
            sim_trace(w, "n%d %s epoch %d leader %d", node, raft_role_name(o.role), o.epoch, o.leader_id);
            sim_check_role(w, node, o.role, o.epoch);
            if (o.role == RAFT_LEADER)
                plan_leader_crash(w, node);
            break;
        case RAFT_OUT_FETCH_SNAPSHOT:
            /* No simulated node moves its log start, so no leader may name a snapshot. */
            sim_violation(w, "n%d asked to download snapshot %lld-%d though no log was cleaned", node,
                          (long long)o.offset, o.epoch);
            break;
        }
        raft_output_clear(&o);
    }
    if (sn->raft && raft_node_failed(sn->raft))
        sim_violation(w, "node %d failed (out of memory)", node);
    if (wrote) {
        struct sim_event ev = {.time = disk_completion(w, &sn->disk),
                               .type = SIM_EV_FSYNC,
                               .node = node,
                               .incarnation = sn->incarnation,
                               .offset = sim_disk_end(&sn->disk)};
        schedule(w, &ev);
    }
}

static struct raft_config node_config(const struct sim_world *w, int node)
{
    struct raft_config cfg;
    raft_config_defaults(&cfg);
    cfg.node_id = node;
    cfg.n_voters = w->n_voters;
    for (int i = 0; i < w->n_voters; i++)
        cfg.voters[i] = i;
    cfg.election_timeout_ms = w->election_timeout_ms;
    cfg.fetch_timeout_ms = 2 * w->election_timeout_ms;
    cfg.election_backoff_max_ms = w->election_timeout_ms;
    cfg.fetch_max_records = w->fetch_max_records;
    cfg.seed = w->seed * 1000003ULL + (uint64_t)node * 7919ULL + w->nodes[node].incarnation;
    return cfg;
}

static void start_node(struct sim_world *w, int node)
{
    struct sim_node *sn = &w->nodes[node];
    struct raft_config cfg = node_config(w, node);
    int rc = raft_node_create(&sn->raft, &cfg, sn->disk.has_qs ? &sn->disk.qs : NULL, sn->disk.entries,
                              disk_durable_entries(&sn->disk), sim_local_time(w, node));
    if (rc != RAFT_OK) {
        sim_violation(w, "node %d failed to start: %d", node, rc);
        return;
    }
    sn->checked_upto = 0;
    sim_trace(w, "n%d start: epoch %d, log end %lld", node, raft_node_epoch(sn->raft),
              (long long)raft_node_end_offset(sn->raft));
    drain(w, node);
}

static void crash_node(struct sim_world *w, int node)
{
    struct sim_node *sn = &w->nodes[node];
    if (!sn->raft)
        return;
    raft_node_destroy(sn->raft);
    sn->raft = NULL;
    sn->incarnation++;
    disk_cut(&sn->disk, sn->disk.durable_end); /* the unsynced tail is lost */
    sn->disk.busy_until = 0;
    w->crashes++;
    sim_trace(w, "n%d crash: log end %lld, epoch %d survive", node, (long long)sn->disk.durable_end,
              sn->disk.has_qs ? sn->disk.qs.leader_epoch : 0);
    struct sim_event ev = {.time = w->now + 50 + (int64_t)sim_below(&w->rng, 3000),
                           .type = SIM_EV_RESTART,
                           .node = node,
                           .incarnation = sn->incarnation};
    schedule(w, &ev);
}

static int current_leader(const struct sim_world *w)
{
    int best = -1;
    for (int i = 0; i < w->n_nodes; i++) {
        const struct raft_node *r = w->nodes[i].raft;
        if (r && raft_node_role(r) == RAFT_LEADER &&
            (best < 0 || raft_node_epoch(r) > raft_node_epoch(w->nodes[best].raft)))
            best = i;
    }
    return best;
}

static void client_append(struct sim_world *w)
{
    int leader = current_leader(w);
    if (leader >= 0) {
        uint8_t body[SIM_CLIENT_ENTRY_LEN] = {'C'};
        uint64_t seq = w->client_seq++;
        memcpy(body + 1, &seq, sizeof seq);
        /* Batches of 1 to 8 records, which must commit whole. */
        int32_t count = 1 + (int32_t)sim_below(&w->rng, 8);
        int64_t offset;
        if (raft_node_append(w->nodes[leader].raft, sim_local_time(w, leader), body, sizeof body, count, &offset) ==
            RAFT_OK)
            sim_trace(w, "client entry %llu at n%d offsets %lld..%lld", (unsigned long long)seq, leader,
                      (long long)offset, (long long)(offset + count - 1));
        drain(w, leader);
    }
    struct sim_event ev = {.time = w->now + 20 + (int64_t)sim_below(&w->rng, 40), .type = SIM_EV_CLIENT};
    schedule(w, &ev);
}

/* ---- faults ---- */

static void heal(struct sim_world *w)
{
    memset(w->blocked, 0, sizeof w->blocked);
    w->loss_pct = 0;
    w->healed = true;
    w->heal_seq = w->client_seq;
    sim_trace(w, "faults heal");
    for (int i = 0; i < w->n_nodes; i++) {
        w->nodes[i].disk.slow = false;
        if (!w->nodes[i].raft) {
            w->nodes[i].incarnation++; /* cancels the pending restart */
            start_node(w, i);
        }
    }
}

static void inject_fault(struct sim_world *w)
{
    if (w->now >= w->fault_end) {
        heal(w);
        return;
    }
    int a = (int)sim_below(&w->rng, (uint64_t)w->n_nodes);
    int b = (int)sim_below(&w->rng, (uint64_t)w->n_nodes);
    switch (sim_below(&w->rng, 9)) {
    case 0:
    case 1:
        crash_node(w, a);
        break;
    case 2: { /* symmetric partition into two random sides */
        uint64_t side = sim_rand(&w->rng);
        for (int i = 0; i < w->n_nodes; i++)
            for (int j = 0; j < w->n_nodes; j++)
                w->blocked[i][j] = ((side >> i) & 1) != ((side >> j) & 1);
        sim_trace(w, "partition %llx", (unsigned long long)(side & 0xfff));
        break;
    }
    case 3:
        w->blocked[a][b] = true;
        sim_trace(w, "one-way block n%d -> n%d", a, b);
        break;
    case 4:
        memset(w->blocked, 0, sizeof w->blocked);
        sim_trace(w, "network heals");
        break;
    case 5:
        w->nodes[a].disk.slow = !w->nodes[a].disk.slow;
        sim_trace(w, "n%d disk %s", a, w->nodes[a].disk.slow ? "slow" : "fast");
        break;
    case 6:
        w->loss_pct = (uint32_t)sim_below(&w->rng, 30);
        sim_trace(w, "loss %u%%", w->loss_pct);
        break;
    case 7: /* the leader, to force elections over logs that differ */
        if (current_leader(w) >= 0)
            crash_node(w, current_leader(w));
        break;
    case 8: { /* the leader alone, keeping the entries it has not replicated */
        int leader = current_leader(w);
        if (leader < 0)
            break;
        for (int i = 0; i < w->n_nodes; i++)
            w->blocked[leader][i] = w->blocked[i][leader] = i != leader;
        sim_trace(w, "n%d isolated", leader);
        break;
    }
    }
    struct sim_event ev = {.time = w->now + 100 + (int64_t)sim_below(&w->rng, 400), .type = SIM_EV_FAULT};
    if (ev.time > w->fault_end)
        ev.time = w->fault_end;
    schedule(w, &ev);
}

/* ---- the run ---- */

int sim_world_init(struct sim_world *w, uint64_t seed, bool trace)
{
    memset(w, 0, sizeof *w);
    w->seed = seed;
    w->trace = trace;
    w->rng.s = seed;
    w->live_at = -1;
    w->n_voters = sim_below(&w->rng, 2) ? 5 : 3;
    w->n_nodes = w->n_voters + (int)sim_below(&w->rng, 3);
    w->dup_pct = (uint32_t)sim_below(&w->rng, 10);
    w->loss_pct = (uint32_t)sim_below(&w->rng, 15);
    w->max_delay_ms = 1 + (int64_t)sim_below(&w->rng, 40);
    /* A quarter of the seeds run Kafka's timeouts; the rest timeouts as short as a
     * few message delays, where elections race and collide. Below a round
     * trip no election can finish, so the liveness bound could not hold. */
    w->election_timeout_ms = sim_below(&w->rng, 4) == 0 ? 1000
                                                        : 2 * w->max_delay_ms + 10 + (int64_t)sim_below(&w->rng, 300);
    w->fault_end = 2000 + (int64_t)sim_below(&w->rng, 18000);
    w->leader_crash_pct = (uint32_t)sim_below(&w->rng, 81);
    w->fetch_max_records = sim_below(&w->rng, 4) == 0 ? 16 : 1 + (int32_t)sim_below(&w->rng, 3);
    for (int i = 0; i < w->n_nodes; i++) {
        /* Clocks run up to 5% fast or slow and start anywhere. */
        w->nodes[i].drift_ppm = (int64_t)sim_below(&w->rng, 100001) - 50000;
        w->nodes[i].clock_offset = (int64_t)sim_below(&w->rng, 1000000);
    }
    sim_trace(w,
              "seed %llu: %d voters, %d observers, loss %u%%, dup %u%%, delay <= %lldms, "
              "election timeout %lldms, faults until %lldms",
              (unsigned long long)seed, w->n_voters, w->n_nodes - w->n_voters, w->loss_pct, w->dup_pct,
              (long long)w->max_delay_ms, (long long)w->election_timeout_ms, (long long)w->fault_end);
    for (int i = 0; i < w->n_nodes; i++)
        start_node(w, i);
    struct sim_event fault = {.time = 100 + (int64_t)sim_below(&w->rng, 400), .type = SIM_EV_FAULT};
    struct sim_event client = {.time = 10, .type = SIM_EV_CLIENT};
    schedule(w, &fault);
    schedule(w, &client);
    return w->violation[0] ? -1 : 0;
}

void sim_world_free(struct sim_world *w)
{
    for (int i = 0; i < w->n_nodes; i++) {
        raft_node_destroy(w->nodes[i].raft);
        disk_cut(&w->nodes[i].disk, 0);
        free(w->nodes[i].disk.entries);
    }
    for (size_t i = 0; i < w->heap_len; i++)
        raft_msg_clear(&w->heap[i].msg);
    free(w->heap);
    sim_check_free(w);
}

static const char *msg_name(enum raft_msg_type t)
{
    static const char *names[] = {"?",        "Vote",         "VoteResp", "BeginEpoch", "BeginEpochResp",
                                  "EndEpoch", "EndEpochResp", "Fetch",    "FetchResp"};
    return t <= RAFT_MSG_FETCH_RESP ? names[t] : "?";
}

static void handle(struct sim_world *w, struct sim_event *ev)
{
    struct sim_node *sn = &w->nodes[ev->node];
    switch (ev->type) {
    case SIM_EV_DELIVER:
        if (sn->raft) {
            if (w->trace && ev->msg.type != RAFT_MSG_FETCH_REQ && ev->msg.type != RAFT_MSG_FETCH_RESP)
                sim_trace(w, "n%d <- n%d %s", ev->node, ev->msg.src, msg_name(ev->msg.type));
            raft_node_receive(sn->raft, sim_local_time(w, ev->node), &ev->msg);
            drain(w, ev->node);
        } else if (ev->msg.type == RAFT_MSG_FETCH_REQ) {
            /* A crashed node refuses the connection: the sender hears of
             * it a moment later (the shell hands the core a failed Fetch). */
            struct sim_event refused = {.time = w->now + 1 + (int64_t)sim_below(&w->rng, 5),
                                        .type = SIM_EV_REFUSED,
                                        .node = ev->msg.src,
                                        .msg = ev->msg};
            ev->msg = (struct raft_msg){0}; /* a Fetch request owns nothing; now the new event's */
            schedule(w, &refused);
        }
        raft_msg_clear(&ev->msg);
        break;
    case SIM_EV_REFUSED:
        if (sn->raft) {
            sim_trace(w, "n%d: fetch to n%d refused", ev->node, ev->msg.dst);
            raft_node_request_failed(sn->raft, sim_local_time(w, ev->node), &ev->msg);
            drain(w, ev->node);
        }
        raft_msg_clear(&ev->msg);
        break;
    case SIM_EV_FSYNC:
        if (sn->raft && ev->incarnation == sn->incarnation) {
            int64_t end = sim_disk_end(&sn->disk);
            if (ev->offset > sn->disk.durable_end)
                sn->disk.durable_end = ev->offset < end ? ev->offset : end;
            raft_node_flushed(sn->raft, sim_local_time(w, ev->node), ev->offset);
            drain(w, ev->node);
        }
        break;
    case SIM_EV_QS_DONE:
        if (sn->raft && ev->incarnation == sn->incarnation) {
            sn->disk.qs = ev->qs;
            sn->disk.has_qs = true;
            raft_node_qs_persisted(sn->raft, sim_local_time(w, ev->node), ev->version);
            drain(w, ev->node);
        }
        break;
    case SIM_EV_RESTART:
        if (!sn->raft && ev->incarnation == sn->incarnation)
            start_node(w, ev->node);
        break;
    case SIM_EV_FAULT:
        inject_fault(w);
        break;
    case SIM_EV_CLIENT:
        client_append(w);
        break;
    case SIM_EV_CRASH:
        if (sn->raft && ev->incarnation == sn->incarnation && w->now < w->fault_end) {
            sim_trace(w, "n%d planned crash", ev->node);
            crash_node(w, ev->node);
        }
        break;
    }
}

bool sim_world_run(struct sim_world *w)
{
    int64_t next_tick = 0;
    int64_t deadline = w->fault_end + SIM_LIVENESS_BOUND_MS;
    while (!w->violation[0]) {
        if (w->live_at >= 0 && w->now >= w->live_at + 500)
            break; /* live again, and a little more to check it stays safe */
        if (w->now > deadline) {
            w->liveness_failed = true;
            sim_violation(w,
                          "no leader committed a new entry within %dms after the faults "
                          "healed at %lldms",
                          SIM_LIVENESS_BOUND_MS, (long long)w->fault_end);
            break;
        }
        if (w->heap_len && w->heap[0].time <= next_tick) {
            struct sim_event ev = heap_pop(w);
            w->now = ev.time;
            handle(w, &ev);
            continue;
        }
        w->now = next_tick;
        for (int i = 0; i < w->n_nodes && !w->violation[0]; i++) {
            if (w->nodes[i].raft) {
                raft_node_tick(w->nodes[i].raft, sim_local_time(w, i));
                drain(w, i);
            }
        }
        next_tick += SIM_TICK_MS;
    }
    return !w->violation[0];
}
