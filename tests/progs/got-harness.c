/* SPDX-License-Identifier: MIT */
/*
 * got-harness.c - lib/core/got.c alone, in a shared library that the GOT tests
 * (got-prog.c, got-cxx.cc) dlopen with RTLD_LOCAL into programs not linked
 * with it, as `dynftrace attach` loads the runtime. Its wrappers count
 * their calls and forward to dft_real(), got.c's: what the runtime's own
 * wrappers forward to. The dlopen/dlclose wrappers do what interpose.c's
 * do for the GOT hooks (dft_unload_lock, then object_added/removed).
 *
 * API (the only exported symbols): gh_install, gh_remove (got.c's return
 * values), gh_count(name), gh_wrapper(name), gh_real(name).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "internal.h"
#include "got.h"

enum {
	K_SIGPROCMASK,
	K_PTHREAD_SIGMASK,
	K_SIGNAL,
	K_SIGACTION,
	K_SIGPENDING,
	K_DLOPEN,
	K_DLCLOSE,
	K_RAISE,
	K_BEGIN_CATCH,
	K_N
};
static const char *const names[K_N] = {
    "sigprocmask",	 "pthread_sigmask", "signal",  "sigaction",
    "sigpending",	 "dlopen",	    "dlclose", "_Unwind_RaiseException",
    "__cxa_begin_catch",
};
static unsigned long counts[K_N];
static void *reals[K_N];

/* Count a call of K and return the function it forwards to. */
static void *enter(int k)
{
	__atomic_fetch_add(&counts[k], 1, __ATOMIC_RELAXED);
	void *r = __atomic_load_n(&reals[k], __ATOMIC_ACQUIRE);
	if (!r) {
		r = dft_real(names[k]);
		__atomic_store_n(&reals[k], r, __ATOMIC_RELEASE);
	}
	return r;
}

typedef int (*mask_fn)(int, const sigset_t *, sigset_t *);

static int h_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	return ((mask_fn)enter(K_SIGPROCMASK))(how, set, old);
}
GOT_HOOK(sigprocmask, "sigprocmask", h_sigprocmask);

static int h_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return ((mask_fn)enter(K_PTHREAD_SIGMASK))(how, set, old);
}
GOT_HOOK(pthread_sigmask, "pthread_sigmask", h_pthread_sigmask);

static sighandler_t h_signal(int sig, sighandler_t h)
{
	return ((sighandler_t(*)(int, sighandler_t))enter(K_SIGNAL))(sig, h);
}
GOT_HOOK(signal, "signal", h_signal);

static int h_sigaction(int sig, const struct sigaction *a, struct sigaction *o)
{
	typedef int (*fn)(int, const struct sigaction *, struct sigaction *);
	return ((fn)enter(K_SIGACTION))(sig, a, o);
}
GOT_HOOK(sigaction, "sigaction", h_sigaction);

static int h_sigpending(sigset_t *set)
{
	return ((int (*)(sigset_t *))enter(K_SIGPENDING))(set);
}
GOT_HOOK(sigpending, "sigpending", h_sigpending);

/* As interpose.c: dft_unload_lock across the load and the hooking, taken
 * once by nested calls (a constructor's dlopen). */
static __thread int depth;

static void *h_dlopen(const char *file, int mode)
{
	void *(*real)(const char *, int) = (void *(*)(const char *, int))enter(K_DLOPEN);
	int outer = depth++ == 0;
	if (outer)
		pthread_rwlock_wrlock(&dft_unload_lock);
	void *h = real(file, mode);
	if (h && file)
		got_hooks_object_added();
	if (outer)
		pthread_rwlock_unlock(&dft_unload_lock);
	depth--;
	return h;
}
GOT_HOOK(dlopen, "dlopen", h_dlopen);

static int h_dlclose(void *handle)
{
	int (*real)(void *) = (int (*)(void *))enter(K_DLCLOSE);
	int outer = depth++ == 0;
	if (outer)
		pthread_rwlock_wrlock(&dft_unload_lock);
	int r = real(handle);
	if (r == 0)
		got_hooks_object_removed();
	if (outer)
		pthread_rwlock_unlock(&dft_unload_lock);
	depth--;
	return r;
}
GOT_HOOK(dlclose, "dlclose", h_dlclose);

/* The unwinder's entries: libgcc_s and libstdc++ are not dependencies of
 * this library, so dft_real finds them through its global fallback. */
static int h_raise(void *exc)
{
	return ((int (*)(void *))enter(K_RAISE))(exc);
}
GOT_HOOK(raise, "_Unwind_RaiseException", h_raise);

static void *h_begin_catch(void *exc)
{
	return ((void *(*)(void *))enter(K_BEGIN_CATCH))(exc);
}
GOT_HOOK(begin_catch, "__cxa_begin_catch", h_begin_catch);

static const got_fn wrappers[K_N] = {
    (got_fn)h_sigprocmask, (got_fn)h_pthread_sigmask, (got_fn)h_signal,
    (got_fn)h_sigaction,   (got_fn)h_sigpending,      (got_fn)h_dlopen,
    (got_fn)h_dlclose,	   (got_fn)h_raise,	      (got_fn)h_begin_catch,
};

static int find(const char *name)
{
	for (int k = 0; k < K_N; k++)
		if (!strcmp(names[k], name))
			return k;
	return -1;
}

PUBLIC int gh_install(void)
{
	return got_hooks_install();
}

PUBLIC int gh_remove(void)
{
	return got_hooks_remove();
}

PUBLIC unsigned long gh_count(const char *name)
{
	int k = find(name);
	return k < 0 ? 0 : __atomic_load_n(&counts[k], __ATOMIC_RELAXED);
}

PUBLIC void *gh_wrapper(const char *name)
{
	int k = find(name);
	return k < 0 ? NULL : (void *)wrappers[k];
}

PUBLIC void *gh_real(const char *name)
{
	return dft_real(name);
}
