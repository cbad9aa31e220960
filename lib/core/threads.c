/* SPDX-License-Identifier: MIT */
/*
 * threads.c - the runtime's own threads (the ring's consumer, control).
 * They run on stacks the runtime maps itself, so that a thread's first
 * callback can tell it is one of them by its stack pointer: the C library
 * runs its thread start-up (start_thread, __ctype_init, ...) before the
 * thread's function could say so, and once the C library's functions are
 * patched by relocation (-P) those calls would be traced as the program's.
 * Every signal but SIGTRAP is blocked in them from their first instruction.
 *
 * | field        | written by                          | read by              |
 * |--------------|-------------------------------------|----------------------|
 * | rt[].lo, .hi | creators and reapers, under rt_lock | any thread, lock-free |
 * |              | (lo published last, cleared first)  | (dft_runtime_stack)  |
 * | rt[].th      | under rt_lock                       | under rt_lock        |
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define RT_MAX 8
/* A sanitizer's thread start-up places its own state on a stack given with
 * pthread_attr_setstack (TSan needs about 900 KiB of it): such builds take
 * more. Untouched pages cost no memory. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RT_STACK (4096 * 1024)
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define RT_STACK (4096 * 1024)
#endif
#endif
#ifndef RT_STACK
#define RT_STACK (256 * 1024)
#endif

static struct {
	uintptr_t lo, hi; /* lo == 0: free */
	pthread_t th;
} rt[RT_MAX];
static pthread_mutex_t rt_lock = PTHREAD_MUTEX_INITIALIZER;

int dft_runtime_stack(uintptr_t sp)
{
	for (int i = 0; i < RT_MAX; i++) {
		uintptr_t lo = __atomic_load_n(&rt[i].lo, __ATOMIC_ACQUIRE);
		if (lo && sp >= lo && sp < __atomic_load_n(&rt[i].hi, __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

static void slot_free(int i)
{
	uintptr_t lo = rt[i].lo;
	__atomic_store_n(&rt[i].lo, 0, __ATOMIC_RELEASE);
	munmap((void *)lo, (size_t)(rt[i].hi - lo));
	rt[i].hi = 0;
}

int dft_thread_create(pthread_t *th, void *(*fn)(void *), void *arg, int detached)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *st = mmap(NULL, RT_STACK, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (st == MAP_FAILED)
		return -errno;
	mprotect(st, (size_t)pg, PROT_NONE); /* a guard page below */
	pthread_mutex_lock(&rt_lock);
	int i = 0;
	while (i < RT_MAX && rt[i].lo)
		i++;
	if (i == RT_MAX) {
		pthread_mutex_unlock(&rt_lock);
		munmap(st, RT_STACK);
		return -EAGAIN;
	}
	/* Published before the thread exists: its first call may trap. */
	rt[i].hi = (uintptr_t)st + RT_STACK;
	__atomic_store_n(&rt[i].lo, (uintptr_t)st, __ATOMIC_RELEASE);
	pthread_attr_t attr;
	sigset_t all;
	int err = pthread_attr_init(&attr);
	if (!err) {
		sigfillset(&all);	  /* SIGXFSZ too: a file size limit gives EFBIG */
		sigdelset(&all, SIGTRAP); /* never blocked: a breakpoint met blocked kills */
		pthread_attr_setsigmask_np(&attr, &all);
		pthread_attr_setstack(&attr, st, RT_STACK);
		if (detached)
			pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		err = pthread_create(th, &attr, fn, arg);
		pthread_attr_destroy(&attr);
	}
	if (err)
		slot_free(i);
	else
		rt[i].th = *th;
	pthread_mutex_unlock(&rt_lock);
	return -err;
}

void dft_thread_reap(pthread_t th)
{
	pthread_mutex_lock(&rt_lock);
	for (int i = 0; i < RT_MAX; i++)
		if (rt[i].lo && pthread_equal(rt[i].th, th))
			slot_free(i);
	pthread_mutex_unlock(&rt_lock);
}

void dft_threads_atfork_child(void)
{
	pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
	rt_lock = fresh;
	for (int i = 0; i < RT_MAX; i++)
		if (rt[i].lo)
			slot_free(i); /* their threads are the parent's */
}
