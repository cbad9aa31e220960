/* SPDX-License-Identifier: MIT */
/* internal.h - definitions shared by the runtime's modules (never installed). */
#ifndef DYNFTRACE_INTERNAL_H
#define DYNFTRACE_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define HIDDEN		 __attribute__((visibility("hidden")))
#define UNUSED		 __attribute__((unused)) /* a parameter a shared signature imposes */
#define PUBLIC		 __attribute__((visibility("default")))
#define likely(x)	 __builtin_expect(!!(x), 1)
#define unlikely(x)	 __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a)	 (sizeof(a) / sizeof((a)[0]))
#define READ_ONCE(x)	 __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define WRITE_ONCE(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define barrier()	 __atomic_signal_fence(__ATOMIC_SEQ_CST) /* compiler only */

/*
 * Per-thread state, in static TLS (initial-exec: no allocation, usable from
 * the trampoline path and from signal handlers).
 *
 * | field          | written by                 | read by                     |
 * |----------------|----------------------------|-----------------------------|
 * | recursion      | owner thread               | owner thread                |
 * | api_depth      | owner (patch_lock/unlock)  | owner (dispatch)            |
 * | rcu_nest       | owner thread               | owner thread                |
 * | rcu_ctr        | owner (atomic store)       | rcu_synchronize (atomic)    |
 * | state          | owner; registry lock held  | owner; registry lock holder |
 * | next, prev     | registry lock holder       | registry lock holder        |
 * | trap_*         | owner (its signal wrappers and handler) | owner          |
 */
struct dft_thread {
	/* Owner thread only (rcu_ctr also read by rcu_synchronize). The
	 * light per-ops body (tramp.S) tests the first four as two
	 * quadwords: keep them in this order. */
	unsigned int recursion;
	unsigned int rcu_nest;
	unsigned int api_depth; /* patch_lock nesting: no callbacks meanwhile */
	int state;		/* THREAD_NEW, THREAD_REGISTERED, THREAD_EXITING */
	unsigned long rcu_ctr;	/* 0: outside read side; else gp counter at entry */
	pid_t tid;
	struct dft_thread *next, *prev;
	/* SIGTRAP virtualisation, see interpose.c */
	int trap_vblocked; /* program believes SIGTRAP is blocked */
	int trap_pending;  /* a foreign SIGTRAP arrived while virtually blocked */
	siginfo_t trap_info;
};
enum { THREAD_NEW = 0, THREAD_REGISTERED = 1, THREAD_EXITING = 2 };

extern __thread struct dft_thread dft_self HIDDEN;

/* threads.c: the runtime's own threads, on stacks of its own (every
 * signal but SIGTRAP blocked); DETACHED or joinable, then reaped (stack
 * unmapped) once joined or gone. dft_runtime_stack: is SP on one of those
 * stacks? The fork child drops the parent's. */
int dft_thread_create(pthread_t *th, void *(*fn)(void *), void *arg, int detached) HIDDEN;
void dft_thread_reap(pthread_t th) HIDDEN;
int dft_runtime_stack(uintptr_t sp) HIDDEN;
void dft_threads_atfork_child(void) HIDDEN;

/* The runtime's own work on a program's thread (start-up, destructors,
 * fork handlers, its wrappers' bookkeeping): nothing it calls in other
 * objects (the C library's functions, once patched by relocation) is the
 * program's to trace, as for the runtime's own threads (api_depth). */
static inline void dft_own_enter(void)
{
	dft_self.api_depth++;
}
static inline void dft_own_leave(void)
{
	dft_self.api_depth--;
}

/*
 * log.c - messages on the program's stderr, "dynftrace[PID]: ...", bounded
 * per call site (docs/ARCHITECTURE.md, "Messages"). Usable from any thread,
 * traced code and signal handlers (atomics, no lock, no malloc).
 *   dft_log    the user must know or act: always shown, once per call site
 *              (its repeats only with DYNFTRACE_VERBOSE, rate-limited)
 *   dft_debug  information: only with DYNFTRACE_VERBOSE, at most
 *              DFT_LOG_BURST lines per call site every DFT_LOG_WINDOW_S s,
 *              the next line shown counting those that were not
 */
#define DFT_LOG_BURST 5
#ifndef DFT_LOG_WINDOW_S
#define DFT_LOG_WINDOW_S 10 /* a test of log.c alone builds it with 1 */
#endif
struct dft_logsite {
	int said;	  /* dft_log: the first line went out (atomic exchange) */
	unsigned skipped; /* lines not shown since the last one (atomic) */
	uint64_t rate;	  /* window number << 32 | lines shown in it (CAS) */
};
void dft_log_site(struct dft_logsite *site, int always, const char *fmt, ...) HIDDEN
    __attribute__((format(printf, 3, 4)));
#define dft_log(...)                                                                               \
	do {                                                                                       \
		static struct dft_logsite dft_site_;                                               \
		dft_log_site(&dft_site_, 1, __VA_ARGS__);                                          \
	} while (0)
#define dft_debug(...)                                                                             \
	do {                                                                                       \
		static struct dft_logsite dft_site_;                                               \
		if (READ_ONCE(dft_verbose))                                                        \
			dft_log_site(&dft_site_, 0, __VA_ARGS__);                                  \
	} while (0)
extern int dft_verbose HIDDEN;
/* Stop all tracing for good after an inconsistency (ftrace_kill). */
void dft_kill(const char *fmt, ...) HIDDEN __attribute__((format(printf, 1, 2)));
extern int dft_killed HIDDEN; /* read with READ_ONCE */
extern char dft_kill_reason[160] HIDDEN;

/* rcu.c - read side usable from any traced context, grace periods by membarrier. */
void rcu_register_self(void) HIDDEN;
int rcu_synchronize(void) HIDDEN;
/* Detach, every other thread stopped: call FN for every registered thread;
 * -EAGAIN if a stopped thread holds the registry lock (never waits). */
int rcu_for_each_thread_stopped(int (*fn)(struct dft_thread *t, void *ctx), void *ctx) HIDDEN;
/* Detach: no thread-exit callback into the runtime any more. */
void rcu_detach(void) HIDDEN;
void rcu_atfork_child(void) HIDDEN;
extern unsigned long rcu_grace_periods HIDDEN;
extern unsigned long rcu_gp_ctr HIDDEN;

static inline void rcu_read_lock(void)
{
	struct dft_thread *t = &dft_self;
	/* Release (a plain mov on x86): a writer that reads this snapshot
	 * also sees the end of this thread's previous read sections, which
	 * tells TSan what membarrier guarantees. */
	if (t->rcu_nest++ == 0)
		__atomic_store_n(&t->rcu_ctr, __atomic_load_n(&rcu_gp_ctr, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
	barrier();
}

static inline void rcu_read_unlock(void)
{
	struct dft_thread *t = &dft_self;
	barrier();
	if (--t->rcu_nest == 0)
		__atomic_store_n(&t->rcu_ctr, 0, __ATOMIC_RELEASE);
}

/* membarrier wrappers (sync.c in arch) */

/* got.c: the function wrapper NAME forwards to: the next definition after
 * the runtime (dlsym RTLD_NEXT), else the global one if it is not the
 * runtime's own; NULL when there is none. Takes the loader's lock. */
void *dft_real(const char *name) HIDDEN;

/* interpose.c */
/* Install the SIGTRAP handler, which asks HANDLE first whether a trap is
 * the patch engine's (1: handled); 0 or -errno. */
int dft_trap_handler_install(int (*handle)(siginfo_t *si, void *uc)) HIDDEN;
/* Forward a SIGTRAP that is not ours to what the program set up. */
void dft_trap_forward(int sig, siginfo_t *si, void *uc) HIDDEN;
void dft_signals_init(void) HIDDEN;
/* Detach: the program's own SIGTRAP and fatal-signal dispositions back. */
void dft_signals_detach(void) HIDDEN;
/* Threads inside our signal handlers or blocking wrappers (atomic). */
extern unsigned long dft_inside HIDDEN;

/* interpose.c: the unload barrier (see there; defined in got.c). Readers:
 * pthread_rwlock_rdlock. */
extern pthread_rwlock_t dft_unload_lock HIDDEN;
int dft_unload_fork_prepare(void) HIDDEN;
void dft_unload_fork_done(int held) HIDDEN;
/* Was the runtime loaded with the program (LD_PRELOAD, or the program's
 * DT_NEEDED), so that the loader never unloads it? Known from start-up. */
int dft_loaded_at_start(void) HIDDEN;
void dft_loaded_at_start_init(void) HIDDEN;

/* config.c: the runtime's settings: the environment, or what an attach
 * passed instead (see there). */
const char *dft_getenv(const char *name) HIDDEN;
int dft_config_set(const char *block, size_t len) HIDDEN;
int dft_config_attached(void) HIDDEN;
void dft_config_free(void) HIDDEN;

/* attach.c: was the runtime loaded into a running process? */
int attach_loaded(void) HIDDEN;

/* hooks.c: runs the start-up once (idempotent); every entry point that may
 * run before the constructor (API calls from other constructors, dlopen)
 * calls it. */
void dft_ensure_init(void) HIDDEN;

#include "glob.h"
/* ops.c: unregister every registered ops (a detach): 0 or -errno. */
int ops_unregister_all(void) HIDDEN;
/* 0 for what fnmatch would take literally though a class was meant: an
 * unclosed '['; or a regular expression that does not compile. */
int dft_glob_valid(const char *glob) HIDDEN;
/* The same, 0 or -EINVAL with WHY (if not NULL) naming the pattern. */
int dft_pattern_check(const char *glob, char *why, size_t whylen) HIDDEN;

/* ops.c, at init before sites_init: hands the site table its entries and
 * hooks, reads DYNFTRACE_ROUTES. */
void ops_init(void) HIDDEN;

/* trace.c: built-in tracers and recording (configured by environment). */
void trace_init(void) HIDDEN;
void trace_record_start(void) HIDDEN;
void trace_atfork_child(void) HIDDEN;
struct core_exec_call;
/* flush: the image is about to go (CALL: the exec wrapper's call) */
void trace_before_exec(const struct core_exec_call *call) HIDDEN;
/* The thread dies of a signal: put its real return addresses back, so that
 * the core's backtrace shows them. Async-signal-safe. */
void trace_fatal_unhook(void) HIDDEN;
void trace_exec_failed(const struct core_exec_call *call, long ret) HIDDEN; /* ... it stays */

/* sites.c */
int sites_init(void) HIDDEN;
int sites_rescan(void) HIDDEN; /* new objects after dlopen, gone after dlclose */
/* An attach: the first scan prepares the conversion of the objects found,
 * which run already; the commit writes it with every other thread stopped
 * (sites.c). */
int sites_init_deferred(void) HIDDEN;
/* Once the configuration came: the entries to relocate (DYNFTRACE_PATCH)
 * made and their jumps prepared, *NOUT of them. */
int sites_relocate_attached(size_t *nout) HIDDEN;
size_t sites_relocation_refused(void) HIDDEN;
/* IPS: the stopped threads' instruction pointers and those saved in their
 * signal frames; each inside bytes a prepared entry's jump replaces is
 * moved to its copy in the block (*MOVED of them) before the writes. */
int sites_commit_deferred(size_t *converted, uint64_t *ips, size_t nips, size_t *moved) HIDDEN;
void sites_free_committed(void) HIDDEN;
size_t sites_usable(void) HIDDEN; /* sites that may be patched */
/* Detach: what of ours IP is in (a trampoline, a thunk, the preserving
 * trampoline of the blocks), or NULL (a relocated entry's copy is not: the
 * thread is moved back); the relocated entries' original bytes prepared
 * (the process running), then written back with every other thread
 * stopped, the IPS in copies moved back; then, with no thread in any of
 * it, everything unmapped. */
const char *sites_code_at(uintptr_t ip) HIDDEN;
int sites_detach_prepare(void) HIDDEN;
int sites_detach_restore(uint64_t *ips, size_t nips) HIDDEN;
void sites_detach_free(void) HIDDEN;
void dft_atfork_install(void) HIDDEN;

#endif
