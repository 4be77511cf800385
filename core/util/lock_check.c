/* Queries behind LOCK_ASSERT_* (see lock_check.h). */
#include "util/lock_check.h"

#include <sys/syscall.h>
#include <unistd.h>

#ifdef __GLIBC__
static int my_tid(void)
{
    return (int)syscall(SYS_gettid);
}
#endif

#ifndef __GLIBC__
/* Without an owner to compare: held by somebody when it cannot be taken. */
static bool mutex_taken(pthread_mutex_t *m)
{
    if (pthread_mutex_trylock(m) != 0)
        return true;
    pthread_mutex_unlock(m);
    return false;
}
#endif

/* Held by somebody (a reader, or a writer) when it cannot be taken. */
static bool rwlock_taken(pthread_rwlock_t *l)
{
    if (pthread_rwlock_trywrlock(l) != 0)
        return true;
    pthread_rwlock_unlock(l);
    return false;
}

bool lock_check_mutex_held(pthread_mutex_t *m)
{
#ifdef __GLIBC__
    return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == my_tid();
#else
    return mutex_taken(m);
#endif
}

bool lock_check_rwlock_write_held(pthread_rwlock_t *l)
{
#ifdef __GLIBC__
    return __atomic_load_n(&l->__data.__cur_writer, __ATOMIC_RELAXED) == my_tid();
#else
    return rwlock_taken(l);
#endif
}

bool lock_check_rwlock_held(pthread_rwlock_t *l)
{
    return lock_check_rwlock_write_held(l) || rwlock_taken(l);
}
