/* Lock contracts checked in debug builds. A function named *_locked states
 * that its caller holds a lock; LOCK_ASSERT_HELD(&lock) at its top turns the
 * statement into a check (as SQLite asserts sqlite3BtreeHoldsMutex). With
 * NDEBUG (the RelWithDebInfo release build) the macros compile to nothing;
 * the Debug and ASan builds check.
 *
 * The queries are always built, so tests can call them in any build. With
 * glibc they name the owning thread exactly (glibc records the owner of a
 * mutex and the writer of a rwlock); elsewhere, and for readers of a rwlock,
 * they can only tell that some thread holds the lock, which still catches a
 * caller that forgot it whenever nobody else holds it. */
#ifndef CAIRN_UTIL_LOCK_CHECK_H
#define CAIRN_UTIL_LOCK_CHECK_H

#include <assert.h>
#include <pthread.h>
#include <stdbool.h>

/* True when the calling thread holds m. */
bool lock_check_mutex_held(pthread_mutex_t *m);
/* True when the calling thread holds l for writing. */
bool lock_check_rwlock_write_held(pthread_rwlock_t *l);
/* True when l is held in either mode (by the calling thread when it is the
 * writer; readers cannot be told apart). */
bool lock_check_rwlock_held(pthread_rwlock_t *l);

#ifdef NDEBUG
#define LOCK_ASSERT_HELD(m) ((void)0)
#define LOCK_ASSERT_WRITE_HELD(l) ((void)0)
#define LOCK_ASSERT_READ_OR_WRITE_HELD(l) ((void)0)
#else
#define LOCK_ASSERT_HELD(m) assert(lock_check_mutex_held(m))
#define LOCK_ASSERT_WRITE_HELD(l) assert(lock_check_rwlock_write_held(l))
#define LOCK_ASSERT_READ_OR_WRITE_HELD(l) assert(lock_check_rwlock_held(l))
#endif

#endif
