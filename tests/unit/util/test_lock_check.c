/* lock_check: the queries behind LOCK_ASSERT_* tell a held lock from a free
 * one and from one another thread holds, so an assert on them fires when a
 * *_locked function is called without its lock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdbool.h>

#include <cmocka.h>

#include "util/lock_check.h"

static void test_mutex(void **state)
{
    (void)state;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    assert_false(lock_check_mutex_held(&m));
    pthread_mutex_lock(&m);
    assert_true(lock_check_mutex_held(&m));
    LOCK_ASSERT_HELD(&m); /* holds: does not fire */
    pthread_mutex_unlock(&m);
    assert_false(lock_check_mutex_held(&m));
    /* The query leaves the lock as it found it. */
    assert_int_equal(pthread_mutex_trylock(&m), 0);
    pthread_mutex_unlock(&m);
}

static void test_rwlock(void **state)
{
    (void)state;
    pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
    assert_false(lock_check_rwlock_held(&l));
    assert_false(lock_check_rwlock_write_held(&l));
    pthread_rwlock_rdlock(&l);
    assert_true(lock_check_rwlock_held(&l));
    assert_false(lock_check_rwlock_write_held(&l));
    LOCK_ASSERT_READ_OR_WRITE_HELD(&l);
    pthread_rwlock_unlock(&l);
    pthread_rwlock_wrlock(&l);
    assert_true(lock_check_rwlock_held(&l));
    assert_true(lock_check_rwlock_write_held(&l));
    LOCK_ASSERT_WRITE_HELD(&l);
    pthread_rwlock_unlock(&l);
    assert_false(lock_check_rwlock_held(&l));
    assert_int_equal(pthread_rwlock_trywrlock(&l), 0);
    pthread_rwlock_unlock(&l);
}

struct holder {
    pthread_mutex_t m;
    pthread_rwlock_t l;
    pthread_mutex_t gate;
    pthread_cond_t cond;
    int step; /* 1: the other thread holds both; 2: it may let go */
};

static void *hold_both(void *arg)
{
    struct holder *h = arg;
    pthread_mutex_lock(&h->m);
    pthread_rwlock_wrlock(&h->l);
    pthread_mutex_lock(&h->gate);
    h->step = 1;
    pthread_cond_broadcast(&h->cond);
    while (h->step != 2)
        pthread_cond_wait(&h->cond, &h->gate);
    pthread_mutex_unlock(&h->gate);
    pthread_rwlock_unlock(&h->l);
    pthread_mutex_unlock(&h->m);
    return NULL;
}

static void test_held_by_another_thread(void **state)
{
    (void)state;
    struct holder h = {.m = PTHREAD_MUTEX_INITIALIZER,
                       .l = PTHREAD_RWLOCK_INITIALIZER,
                       .gate = PTHREAD_MUTEX_INITIALIZER,
                       .cond = PTHREAD_COND_INITIALIZER};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, hold_both, &h), 0);
    pthread_mutex_lock(&h.gate);
    while (h.step != 1)
        pthread_cond_wait(&h.cond, &h.gate);
#ifdef __GLIBC__
    /* glibc names the owner: another thread's lock is not ours. */
    assert_false(lock_check_mutex_held(&h.m));
    assert_false(lock_check_rwlock_write_held(&h.l));
#endif
    assert_true(lock_check_rwlock_held(&h.l));
    h.step = 2;
    pthread_cond_broadcast(&h.cond);
    pthread_mutex_unlock(&h.gate);
    pthread_join(t, NULL);
    assert_false(lock_check_mutex_held(&h.m));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mutex),
        cmocka_unit_test(test_rwlock),
        cmocka_unit_test(test_held_by_another_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
