/* SPDX-License-Identifier: MIT */
/*
 * hooks.h - what the core (sites, ops, RCU) tells the layers above it,
 * without naming them: the kernel's notifier idea, one slot per event.
 *
 * A layer registers with core_hooks_set() at start-up, before the events
 * it wants can reach it (the tracers from trace_init, which runs before
 * any of their ops is registered). Each slot is written once, before the
 * thread that writes it starts anything that could call it, and read with
 * acquire; an empty slot means nobody listens.
 *
 * | slot           | called by                   | context                  |
 * |----------------|-----------------------------|--------------------------|
 * | object_added   | sites.c, after an object's  | patch_lock held          |
 * |                | sites joined site_tab       |                          |
 * | thread_exit    | rcu.c, a registered thread  | its TLS destructor; no   |
 * |                | exiting                     | callbacks run any more   |
 * | graph_enter    | ops.c, the graph shortcut's | traced thread, inside    |
 * |                | generic entry               | the RCU read side        |
 * | fatal_flush,   | interpose.c, a fatal signal | its handler: async-      |
 * | fatal_unhook   | of the program's             | signal-safe only         |
 * | exec_readers,  | interpose.c, the exec       | the thread calling exec  |
 * | before_exec,   | wrappers                    |                          |
 * | exec_failed    |                             |                          |
 */
#ifndef DYNFTRACE_HOOKS_H
#define DYNFTRACE_HOOKS_H

#include <limits.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct dft_object;

/* The call an exec wrapper makes: FN (the C library's function it forwards
 * to, which may be a traced site), from PARENT (the wrapper's caller), with
 * the arguments ARGS (path or file, argv, envp). */
struct core_exec_call {
	uintptr_t fn, parent;
	unsigned long args[3];
};

struct core_hooks {
	void (*object_added)(struct dft_object *o);
	void (*thread_exit)(void);
	/* Site ID entered, its return address at SLOT; HOOK is where it must
	 * return through. 1: traced (a shadow entry was pushed), 0: not. */
	int (*graph_enter)(uint32_t id, uintptr_t *slot, uintptr_t hook);
	/* The image dies of SIG (a signal handler: async-signal-safe only):
	 * save what the layers above hold; and put the dying thread's
	 * hooked return addresses back. */
	int (*fatal_flush)(int sig);
	void (*fatal_unhook)(void);
	/* An exec is about to replace the image: the live readers (control's
	 * trace_pipe) get what they have not taken yet, first. */
	void (*exec_readers)(void);
	/* An exec is about to replace the image (CALL: what the wrapper is
	 * about to call); it failed with RET and the image stays. */
	void (*before_exec)(const struct core_exec_call *call);
	void (*exec_failed)(const struct core_exec_call *call, long ret);
};

/* The start-up entries (hooks.c): DFT_START(fn) places FN in the section
 * the core runs once, in placement order, from dft_ensure_init(). */
typedef void (*dft_start_fn)(void);
#define DFT_START(fn)                                                                              \
	static const dft_start_fn dft_start_##fn                                                   \
	    __attribute__((section("dft_start"), used, aligned(sizeof(void *)))) = fn
/* Set on the thread running the start-up (its own API calls meanwhile
 * must not wait for themselves). */
extern __thread int dft_init_running HIDDEN;

/*
 * The runtime's own threads and fork: a fork must not copy the process
 * while one of them is still starting (a sanitizer's thread start-up holds
 * its allocator's lock, which the child would then never see released).
 * The creator sets *PENDING before pthread_create (and clears it with
 * dft_pending_clear if that fails), the thread calls
 * dft_thread_started(PENDING) first, and the fork's prepare handler waits
 * on the word (a futex) with dft_await_started, at most a second.
 * dft_thread_started also keeps the thread out of every callback for life
 * (api_depth): what the runtime's threads call in other objects (libc's
 * functions, once patched by relocation) is not the program's to trace.
 */
static inline void dft_pending_clear(int *pending)
{
	__atomic_store_n(pending, 0, __ATOMIC_RELEASE);
	syscall(SYS_futex, pending, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static inline void dft_thread_started(int *pending)
{
	dft_self.api_depth++; /* for life: see above */
	dft_pending_clear(pending);
}

static inline void dft_await_started(int *pending)
{
	struct timespec now, end;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec++; /* a thread that never gets to run must not hang fork */
	while (__atomic_load_n(pending, __ATOMIC_ACQUIRE)) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		long long ns =
		    (end.tv_sec - now.tv_sec) * 1000000000ll + (end.tv_nsec - now.tv_nsec);
		if (ns <= 0)
			return;
		struct timespec left = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
		syscall(SYS_futex, pending, FUTEX_WAIT_PRIVATE, 1, &left, NULL, 0);
	}
}

/* Install every non-NULL slot of H. */
void core_hooks_set(const struct core_hooks *h) HIDDEN;
extern struct core_hooks core_hooks HIDDEN;

#define CORE_HOOK(name) __atomic_load_n(&core_hooks.name, __ATOMIC_ACQUIRE)

#endif
