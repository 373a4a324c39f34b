/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the lock-held assertions (rivet.h, "locks"): held, not
 * held, held by another thread (a rivet_lock tells, a mutex cannot), and
 * a lock that is off.  They only mean
 * something in a build configured with --enable-lock-check (CI's:
 * contrib/build.sh --werror); elsewhere the assertions are empty and the
 * cases are skipped.
 */
#include <signal.h>
#include <unistd.h>
#include <criterion/criterion.h>

#include "rivet.h"

#ifdef RIVET_LOCK_CHECK
#define NEEDS_CHECK() ((void)0)
#else
#define NEEDS_CHECK() cr_skip_test("built without --enable-lock-check")
#endif

/* A case that must abort: libfabric's libraries (Debian's libinfinipath,
 * through libpsm2) catch SIGABRT to print a backtrace and exit, which
 * Criterion would not take for the signal. */
static void dies_by_abort(void)
{
	signal(SIGABRT, SIG_DFL);
}

static struct rivet_lock g_lk;
static pthread_mutex_t g_m;

static void *take_lock(void *arg)
{
	rivet_lock_acquire(&g_lk);
	return arg;
}

static void *take_mutex(void *arg)
{
	pthread_mutex_lock(&g_m);
	return arg;
}

Test(lock, held_spinlock_passes)
{
	NEEDS_CHECK();
	rivet_lock_construct(&g_lk, true);
	rivet_lock_acquire(&g_lk);
	RIVET_HELD(&g_lk);
	rivet_lock_release(&g_lk);
	rivet_lock_destruct(&g_lk);
}

Test(lock, off_counts_as_held)
{
	NEEDS_CHECK();
	rivet_lock_construct(&g_lk, false);
	RIVET_HELD(&g_lk);
	rivet_lock_destruct(&g_lk);
}

Test(lock, released_spinlock_aborts, .signal = SIGABRT, .init = dies_by_abort)
{
	NEEDS_CHECK();
	rivet_lock_construct(&g_lk, true);
	rivet_lock_acquire(&g_lk);
	rivet_lock_release(&g_lk);
	RIVET_HELD(&g_lk);
}

Test(lock, spinlock_of_another_thread_aborts, .signal = SIGABRT, .init = dies_by_abort)
{
	pthread_t t;

	NEEDS_CHECK();
	rivet_lock_construct(&g_lk, true);
	pthread_create(&t, NULL, take_lock, NULL);
	pthread_join(t, NULL);	/* it keeps the lock */
	RIVET_HELD(&g_lk);
}

Test(lock, held_mutex_passes)
{
	NEEDS_CHECK();
	pthread_mutex_init(&g_m, NULL);
	pthread_mutex_lock(&g_m);
	RIVET_MUTEX_HELD(&g_m);
	pthread_mutex_unlock(&g_m);
	/* the check left the lock as it found it */
	cr_assert_eq(pthread_mutex_trylock(&g_m), 0);
	pthread_mutex_unlock(&g_m);
	pthread_mutex_destroy(&g_m);
}

Test(lock, free_mutex_aborts, .signal = SIGABRT, .init = dies_by_abort)
{
	NEEDS_CHECK();
	pthread_mutex_init(&g_m, NULL);
	RIVET_MUTEX_HELD(&g_m);
}

/* A mutex cannot say which thread holds it: one that another thread
 * holds passes (and the check neither waits nor takes it). */
Test(lock, mutex_of_another_thread_passes)
{
	pthread_t t;

	NEEDS_CHECK();
	pthread_mutex_init(&g_m, NULL);
	pthread_create(&t, NULL, take_mutex, NULL);
	pthread_join(t, NULL);	/* it keeps the lock */
	RIVET_MUTEX_HELD(&g_m);
	cr_assert_eq(pthread_mutex_trylock(&g_m), EBUSY);
}
