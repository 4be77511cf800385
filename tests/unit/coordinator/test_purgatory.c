/* The delayed-operation purgatory: completion by notify, by deadline, exactly once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "coordinator/purgatory.h"
#include "util/clock.h"

struct test_op {
    struct delayed_op op;
    atomic_int *ready;      /* completes when *ready != 0 */
    atomic_int completions; /* how many times it answered */
    atomic_int expired;
    atomic_int *freed;
};

static bool test_try_complete(struct delayed_op *op, bool expired)
{
    struct test_op *t = (struct test_op *)op;
    if (!expired && atomic_load(t->ready) == 0)
        return false;
    atomic_fetch_add(&t->completions, 1);
    if (expired)
        atomic_store(&t->expired, 1);
    return true;
}

static void op_free_counted(struct delayed_op *op)
{
    struct test_op *t = (struct test_op *)op;
    atomic_fetch_add(t->freed, 1);
    /* the test inspects the counters after free: keep the memory (freed in the test) */
}

static struct test_op *new_op(atomic_int *ready, atomic_int *freed, int64_t wait_ms, uintptr_t key)
{
    struct test_op *t = calloc(1, sizeof *t);
    t->op.try_complete = test_try_complete;
    t->op.free_fn = op_free_counted;
    t->op.deadline_mono_ms = clock_mono_ms() + wait_ms;
    assert_int_equal(delayed_op_watch(&t->op, key), 0);
    t->ready = ready;
    t->freed = freed;
    return t;
}

static void wait_for(atomic_int *v, int want, int timeout_ms)
{
    for (int i = 0; i < timeout_ms && atomic_load(v) < want; i++)
        usleep(1000);
}

static void test_completes_at_once_when_ready(void **state)
{
    (void)state;
    struct purgatory *p;
    assert_int_equal(purgatory_create("t", &p), 0);
    atomic_int ready = 1, freed = 0;
    struct test_op *t = new_op(&ready, &freed, 10000, 1);
    purgatory_add(p, &t->op);
    assert_int_equal(atomic_load(&t->completions), 1);
    assert_int_equal(atomic_load(&t->expired), 0);
    assert_int_equal(purgatory_waiting(p), 0);
    assert_int_equal(atomic_load(&freed), 1);
    purgatory_destroy(p);
    free(t);
}

static void test_notify_completes_only_watchers(void **state)
{
    (void)state;
    struct purgatory *p;
    assert_int_equal(purgatory_create("t", &p), 0);
    atomic_int ready = 0, freed = 0;
    struct test_op *a = new_op(&ready, &freed, 10000, 7);
    struct test_op *b = new_op(&ready, &freed, 10000, 8);
    purgatory_add(p, &a->op);
    purgatory_add(p, &b->op);
    assert_int_equal(purgatory_waiting(p), 2);
    atomic_store(&ready, 1);
    purgatory_notify(p, 7);
    assert_int_equal(atomic_load(&a->completions), 1);
    assert_int_equal(atomic_load(&b->completions), 0);
    assert_int_equal(purgatory_waiting(p), 1);
    purgatory_notify(p, 7); /* again: a must not answer twice */
    assert_int_equal(atomic_load(&a->completions), 1);
    purgatory_notify(p, 8);
    assert_int_equal(atomic_load(&b->completions), 1);
    assert_int_equal(purgatory_waiting(p), 0);
    assert_int_equal(atomic_load(&freed), 2);
    purgatory_destroy(p);
    free(a);
    free(b);
}

static void test_deadline_expires(void **state)
{
    (void)state;
    struct purgatory *p;
    assert_int_equal(purgatory_create("t", &p), 0);
    atomic_int ready = 0, freed = 0;
    int64_t start = clock_mono_ms();
    struct test_op *t = new_op(&ready, &freed, 150, 3);
    purgatory_add(p, &t->op);
    wait_for(&t->completions, 1, 2000);
    int64_t took = clock_mono_ms() - start;
    assert_int_equal(atomic_load(&t->completions), 1);
    assert_int_equal(atomic_load(&t->expired), 1);
    assert_true(took >= 140);
    assert_true(took < 1500);
    wait_for(&freed, 1, 1000);
    assert_int_equal(atomic_load(&freed), 1);
    purgatory_destroy(p);
    free(t);
}

struct race_ctx {
    struct purgatory *p;
    atomic_int *stop;
};

static void *notifier(void *arg)
{
    struct race_ctx *rc = arg;
    while (!atomic_load(rc->stop))
        purgatory_notify(rc->p, 5);
    return NULL;
}

/* Notifies racing with deadlines: every operation answers exactly once. */
static void test_concurrent_notify_and_expiry(void **state)
{
    (void)state;
    struct purgatory *p;
    assert_int_equal(purgatory_create("t", &p), 0);
    atomic_int ready = 0, freed = 0, stop = 0;
    struct race_ctx rc = {p, &stop};
    pthread_t threads[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, notifier, &rc);
    enum { N = 400 };
    struct test_op *ops[N];
    for (int i = 0; i < N; i++) {
        ops[i] = new_op(&ready, &freed, i % 20, 5);
        purgatory_add(p, &ops[i]->op);
        if (i == N / 2)
            atomic_store(&ready, 1);
    }
    wait_for(&freed, N, 5000);
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
    purgatory_destroy(p);
    assert_int_equal(atomic_load(&freed), N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(atomic_load(&ops[i]->completions), 1);
        free(ops[i]);
    }
}

/* A fetch over hundreds of partitions watches every one of them: a notify
 * for any key, the last included, wakes it, and once it has answered no
 * watch list refers to it any more. */
static void test_many_keys_all_watched(void **state)
{
    (void)state;
    enum { KEYS = 700 };
    struct purgatory *p;
    assert_int_equal(purgatory_create("t", &p), 0);
    atomic_int ready_a = 0, ready_b = 0, freed = 0;
    struct test_op *a = new_op(&ready_a, &freed, 600000, 1);
    for (uintptr_t k = 2; k <= KEYS; k++)
        assert_int_equal(delayed_op_watch(&a->op, k), 0);
    assert_int_equal(a->op.watch_key_count, KEYS);
    struct test_op *b = new_op(&ready_b, &freed, 600000, 100000);
    for (uintptr_t k = 100001; k < 100000 + KEYS; k++)
        assert_int_equal(delayed_op_watch(&b->op, k), 0);
    purgatory_add(p, &a->op);
    purgatory_add(p, &b->op);
    assert_int_equal(purgatory_waiting(p), 2);

    /* Not ready yet: a notify tries but does not complete. */
    purgatory_notify(p, KEYS);
    assert_int_equal(atomic_load(&a->completions), 0);

    atomic_store(&ready_a, 1);
    atomic_store(&ready_b, 1);
    purgatory_notify(p, KEYS);
    assert_int_equal(atomic_load(&a->completions), 1);
    assert_int_equal(atomic_load(&b->completions), 0);
    assert_int_equal(purgatory_waiting(p), 1);
    assert_int_equal(atomic_load(&freed), 1);
    /* Every key of the answered operation is unwatched: notifying them
     * neither answers again nor touches freed key storage. */
    for (uintptr_t k = 1; k <= KEYS; k++)
        purgatory_notify(p, k);
    assert_int_equal(atomic_load(&a->completions), 1);
    assert_int_equal(atomic_load(&b->completions), 0);

    purgatory_notify(p, 100000 + KEYS - 1);
    assert_int_equal(atomic_load(&b->completions), 1);
    assert_int_equal(atomic_load(&b->expired), 0);
    assert_int_equal(purgatory_waiting(p), 0);
    assert_int_equal(atomic_load(&freed), 2);
    purgatory_destroy(p);
    free(a);
    free(b);
}

/* Key storage of an operation that never reached the purgatory is freed. */
static void test_release_keys_without_purgatory(void **state)
{
    (void)state;
    struct delayed_op op = {0};
    for (uintptr_t k = 0; k < 100; k++)
        assert_int_equal(delayed_op_watch(&op, k), 0);
    assert_int_equal(op.watch_key_count, 100);
    for (uintptr_t k = 0; k < 100; k++)
        assert_int_equal(op.watch_keys[k], k);
    delayed_op_release_keys(&op);
    assert_int_equal(op.watch_key_count, 0);
    assert_null(op.watch_keys);
}

static void test_destroy_expires_waiting(void **state)
{
    (void)state;
    struct purgatory *p;
    assert_int_equal(purgatory_create("t", &p), 0);
    atomic_int ready = 0, freed = 0;
    struct test_op *t = new_op(&ready, &freed, 600000, 9);
    purgatory_add(p, &t->op);
    purgatory_destroy(p);
    assert_int_equal(atomic_load(&t->completions), 1);
    assert_int_equal(atomic_load(&t->expired), 1);
    assert_int_equal(atomic_load(&freed), 1);
    free(t);
}

/* A stopping broker: waiting operations answer at once, and one added
 * afterwards does not wait out its deadline either. */
static void test_expire_all_answers_now_and_later(void **state)
{
    (void)state;
    struct purgatory *p;
    assert_int_equal(purgatory_create("t", &p), 0);
    atomic_int ready = 0, freed = 0;
    struct test_op *a = new_op(&ready, &freed, 600000, 11);
    struct test_op *b = new_op(&ready, &freed, 300000, 12);
    purgatory_add(p, &a->op);
    purgatory_add(p, &b->op);
    assert_int_equal(atomic_load(&a->completions), 0);
    int64_t start = clock_mono_ms();
    purgatory_expire_all(p);
    wait_for(&freed, 2, 5000);
    assert_int_equal(atomic_load(&a->expired), 1);
    assert_int_equal(atomic_load(&b->expired), 1);
    struct test_op *later = new_op(&ready, &freed, 600000, 13);
    purgatory_add(p, &later->op);
    wait_for(&freed, 3, 5000);
    assert_int_equal(atomic_load(&later->completions), 1);
    assert_int_equal(atomic_load(&later->expired), 1);
    assert_true(clock_mono_ms() - start < 5000);
    purgatory_destroy(p);
    free(a);
    free(b);
    free(later);
}

struct counting_op {
    struct delayed_op op;
    atomic_int attempts;
    atomic_int *freed;
};

static bool counting_try_complete(struct delayed_op *op, bool expired)
{
    struct counting_op *t = (struct counting_op *)op;
    atomic_fetch_add(&t->attempts, 1);
    return expired;
}

static void counting_free(struct delayed_op *op)
{
    struct counting_op *t = (struct counting_op *)op;
    atomic_fetch_add(t->freed, 1);
}

/* An operation that names one key many times (a fetch naming a partition
 * over and over), or several keys sharing a bucket, is attempted once per
 * notify: with one watch entry per copy, one append cost D attempts. */
static void test_repeated_keys_attempt_once(void **state)
{
    (void)state;
    struct purgatory *p;
    assert_int_equal(purgatory_create("t", &p), 0);
    atomic_int freed = 0;
    struct counting_op *t = calloc(1, sizeof *t);
    t->op.try_complete = counting_try_complete;
    t->op.free_fn = counting_free;
    t->op.deadline_mono_ms = clock_mono_ms() + 60000;
    t->freed = &freed;
    for (int i = 0; i < 50; i++)
        assert_int_equal(delayed_op_watch(&t->op, 7), 0);
    /* Keys 1..4096 cover every bucket: some share key 7's. */
    for (uintptr_t k = 1; k <= 4096; k++)
        assert_int_equal(delayed_op_watch(&t->op, k + 1000), 0);
    purgatory_add(p, &t->op);
    assert_int_equal(atomic_load(&t->attempts), 1);
    purgatory_notify(p, 7);
    assert_int_equal(atomic_load(&t->attempts), 2);
    for (uintptr_t k = 1; k <= 4096; k++)
        purgatory_notify(p, k + 1000);
    assert_int_equal(atomic_load(&t->attempts), 2 + 4096);
    assert_int_equal(purgatory_waiting(p), 1);
    purgatory_destroy(p);
    assert_int_equal(atomic_load(&freed), 1);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_completes_at_once_when_ready),
        cmocka_unit_test(test_notify_completes_only_watchers),
        cmocka_unit_test(test_deadline_expires),
        cmocka_unit_test(test_concurrent_notify_and_expiry),
        cmocka_unit_test(test_destroy_expires_waiting),
        cmocka_unit_test(test_expire_all_answers_now_and_later),
        cmocka_unit_test(test_many_keys_all_watched),
        cmocka_unit_test(test_release_keys_without_purgatory),
        cmocka_unit_test(test_repeated_keys_attempt_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
