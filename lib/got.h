/* SPDX-License-Identifier: MIT */
/*
 * got.h - the libc wrappers' hidden aliases and their table.
 *
 * Each wrapper (interpose.c, trace.c) declares itself with
 * DFT_WRAPPER(name) after its definition: a hidden alias dft_NAME, the
 * runtime's own function even when it is loaded with dlopen(RTLD_LOCAL),
 * where a reference to NAME finds libc's first, and an entry of the hook
 * table, a linker section (dft_got_hooks), listing every wrapper by name
 * without a module having to name them.
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
void *dft___cxa_begin_catch(void *exc) HIDDEN;

#endif
