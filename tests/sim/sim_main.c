/* raft_sim: runs seeds of the quorum simulator.
 *   raft_sim [--seeds N] [--first S]   run seeds S..S+N-1 (default 1, 500)
 *   raft_sim --seed S [--trace]        replay one seed (RAFT_SIM_TRACE=1 also traces)
 *   raft_sim --expect-violation ...    succeed only if some seed violates safety
 *                                      (for the build with a planted bug)
 * Exit status: 0 when the outcome is the expected one. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim.h"

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s [--seeds N] [--first S] [--seed S] [--trace] [--expect-violation]\n", prog);
    return 2;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    if (!s || !*s)
        return false;
    *out = strtoull(s, &end, 10);
    return *end == '\0';
}

int main(int argc, char **argv)
{
    uint64_t first = 1, seeds = 500;
    bool trace = false, expect_violation = false;
    const char *env = getenv("RAFT_SIM_TRACE");
    if (env && *env && strcmp(env, "0") != 0)
        trace = true;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc) {
            if (!parse_u64(argv[++i], &seeds))
                return usage(argv[0]);
        } else if (strcmp(argv[i], "--first") == 0 && i + 1 < argc) {
            if (!parse_u64(argv[++i], &first))
                return usage(argv[0]);
        } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
            if (!parse_u64(argv[++i], &first))
                return usage(argv[0]);
            seeds = 1;
        } else if (strcmp(argv[i], "--trace") == 0) {
            trace = true;
        } else if (strcmp(argv[i], "--expect-violation") == 0) {
            expect_violation = true;
        } else {
            return usage(argv[0]);
        }
    }

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t ran = 0, failed = 0, unsafe = 0, max_epoch = 0, crashes = 0, messages = 0;
    int64_t sim_ms = 0, worst_recovery = 0;
    for (uint64_t seed = first; seed < first + seeds; seed++) {
        struct sim_world *w = malloc(sizeof *w);
        if (!w) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        bool ok = sim_world_init(w, seed, trace) == 0 && sim_world_run(w);
        ran++;
        sim_ms += w->now;
        crashes += w->crashes;
        messages += w->messages;
        if ((uint64_t)w->max_epoch > max_epoch)
            max_epoch = (uint64_t)w->max_epoch;
        if (ok && w->live_at - w->fault_end > worst_recovery)
            worst_recovery = w->live_at - w->fault_end;
        if (!ok) {
            failed++;
            unsafe += !w->liveness_failed;
            printf("seed %llu: VIOLATION at %lldms: %s\n", (unsigned long long)seed, (long long)w->now, w->violation);
            printf("replay: %s --seed %llu --trace\n", argv[0], (unsigned long long)seed);
        }
        bool stop = !ok && !w->liveness_failed && expect_violation;
        sim_world_free(w);
        free(w);
        if (stop)
            break;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%llu seeds from %llu: %llu violations; %.1f simulated s, %llu crashes, "
           "%llu messages, max epoch %llu, worst recovery %lldms (bound %dms); %.2fs\n",
           (unsigned long long)ran, (unsigned long long)first, (unsigned long long)failed, (double)sim_ms / 1000.0,
           (unsigned long long)crashes, (unsigned long long)messages, (unsigned long long)max_epoch,
           (long long)worst_recovery, SIM_LIVENESS_BOUND_MS, secs);
    if (expect_violation) {
        if (!unsafe)
            printf("expected a safety violation and found none: the checker is blind\n");
        return unsafe ? 0 : 1;
    }
    return failed ? 1 : 0;
}
