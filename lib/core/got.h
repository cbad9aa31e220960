/* SPDX-License-Identifier: MIT */
/*
 * got.h - how the libc wrappers are reached, and what they forward to
 * (got.c).
 *
 * Linked or LD_PRELOADed, the runtime's wrappers (interpose.c, trace.c)
 * interpose libc by symbol lookup. Loaded late into a running process
 * (dlopen RTLD_LOCAL by `dynftrace attach`), every object already bound
 * its references: got_hooks_install() stores the wrappers into their GOT
 * slots instead, and got_hooks_remove() puts the original values back.
 *
 * Each wrapper declares itself with DFT_WRAPPER(name) after its
 * definition: a hidden alias dft_NAME (the runtime's own function even
 * under RTLD_LOCAL, where a reference to NAME finds libc's first) and an
 * entry of the hook table, a linker section, so that this core module
 * names no wrapper of an upper layer.
 */
#ifndef DYNFTRACE_GOT_H
#define DYNFTRACE_GOT_H

#include <pthread.h>
#include <signal.h>

#include "internal.h"

typedef void (*got_fn)(void);

/* One wrapped function: its name and the runtime's function for it. */
struct got_hook {
	const char *name;
	got_fn wrapper;
};

/* An entry of the hook table (used alone by got.c's test harness). */
#define GOT_HOOK(id, sym, fn)                                                                      \
	static const struct got_hook got_hook_##id __attribute__((                                 \
	    used, section("dft_got_hooks"), aligned(sizeof(void *)))) = {sym, (got_fn)(fn)}

/* libc declares some wrapped names leaf, nothrow or nonnull; their alias,
 * the same function defined here, promises less, which GCC reports. */
#if defined(__GNUC__) && !defined(__clang__)
#define GOT_ALIAS_BEGIN                                                                            \
	_Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wmissing-attributes\"")
#define GOT_ALIAS_END _Pragma("GCC diagnostic pop")
#else
#define GOT_ALIAS_BEGIN
#define GOT_ALIAS_END
#endif

/* After the PUBLIC definition of wrapper FN. */
#define DFT_WRAPPER(fn)                                                                            \
	GOT_ALIAS_BEGIN                                                                            \
	extern __typeof__(dft_##fn) dft_##fn __attribute__((alias(#fn)));                          \
	GOT_ALIAS_END                                                                              \
	GOT_HOOK(fn, #fn, dft_##fn)

/* The wrappers' hidden aliases. A call inside the runtime that must reach
 * the wrapper in both modes uses these (signal -> sigaction, the exec
 * family -> execve/execvpe). Calls that must meet a sanitizer's interceptor
 * first (pthread_create in ring.c and ctl.c: TSan must see the thread)
 * keep the plain name. */
int dft_sigaction(int sig, const struct sigaction *act, struct sigaction *oact) HIDDEN;
sighandler_t dft_signal(int sig, sighandler_t h) HIDDEN;
int dft_sigprocmask(int how, const sigset_t *set, sigset_t *old) HIDDEN;
int dft_pthread_sigmask(int how, const sigset_t *set, sigset_t *old) HIDDEN;
int dft_sigsuspend(const sigset_t *mask) HIDDEN;
int dft_sigpending(sigset_t *set) HIDDEN;
int dft_pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *),
		       void *arg) HIDDEN;
void dft_pthread_exit(void *ret) HIDDEN __attribute__((noreturn));
void *dft_dlopen(const char *file, int mode) HIDDEN;
int dft_dlclose(void *handle) HIDDEN;
int dft_execve(const char *path, char *const argv[], char *const envp[]) HIDDEN;
int dft_execv(const char *path, char *const argv[]) HIDDEN;
int dft_execvpe(const char *file, char *const argv[], char *const envp[]) HIDDEN;
int dft_execvp(const char *file, char *const argv[]) HIDDEN;
int dft_execl(const char *path, const char *arg, ...) HIDDEN;
int dft_execlp(const char *file, const char *arg, ...) HIDDEN;
int dft_execle(const char *path, const char *arg, ...) HIDDEN;
int dft__Unwind_RaiseException(void *exc) HIDDEN;
int dft__Unwind_Resume_or_Rethrow(void *exc) HIDDEN;
void dft__Unwind_Resume(void *exc) HIDDEN;
void *dft___cxa_begin_catch(void *exc) HIDDEN;
int dft__Unwind_Backtrace(int (*fn)(void *, void *), void *arg) HIDDEN;
int dft_backtrace(void **buf, int size) HIDDEN;

/*
 * GOT hooks. All state is protected by dft_unload_lock held for writing:
 * install and remove take it (the caller must not hold it, nor run inside a
 * constructor or destructor of a wrapped dlopen/dlclose); the two object_
 * calls expect the caller to hold it, as the dlopen/dlclose wrappers do.
 *
 * got_hooks_install: hook every loaded object but the runtime, the dynamic
 *   loader and the vDSO. Returns the number of slots hooked by this call
 *   (0 when all were hooked already), or -ENOMEM when the record table
 *   cannot grow (what was hooked stays, and is recorded). Objects that are
 *   still being loaded by another thread are hooked by the next call of any
 *   of these functions. Calling it again also puts back the hooks that
 *   the loader's lazy binding overwrote (see got.c).
 * got_hooks_object_added: after a real dlopen returned: hook the objects
 *   that were not there before. No-op when not installed, or when nothing
 *   was loaded or unloaded since the last call.
 * got_hooks_object_removed: after a real dlclose returned: forget the
 *   objects that are gone (their slots are never written again). No-op
 *   when not installed, or when nothing was loaded or unloaded.
 * got_hooks_remove: every slot still holding its wrapper gets its original
 *   value back; no record remains. Returns the number of slots restored,
 *   or a negative errno of the first write that failed (the others are
 *   still restored). Threads may still be inside a wrapper (sigsuspend, a
 *   thread started through pthread_create's start routine), or call one
 *   through a slot's value a compiler kept in a register: the runtime's
 *   code must stay mapped.
 */
int got_hooks_install(void) HIDDEN;
void got_hooks_object_added(void) HIDDEN;
void got_hooks_object_removed(void) HIDDEN;
int got_hooks_remove(void) HIDDEN;

#endif
