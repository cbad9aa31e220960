/* SPDX-License-Identifier: MIT */
/*
 * attach.c - the runtime's side of `dynftrace attach` and `detach`: a
 * process that was started without us gets the runtime loaded by a
 * debugger-like agent (cli/inject.c), and later has it taken out again.
 * The protocol and its order are in include/dynftrace/attach.h.
 *
 * Why the conversion waits. At start-up the constructor rewrites every
 * site into the canonical NOP before the program runs. A process that
 * already runs may have a thread between two of gcc's five 1-byte NOPs:
 * replacing them with one 5-byte instruction would leave it in the middle
 * of it. So the first scan (sites_init_deferred) prepares the writes and
 * dynftrace_attach_commit() does them while the agent holds every other
 * thread stopped, each moved past any run of NOPs it was in (running them
 * would have done the same) and the saved pointers of its signal frames
 * too. Single-instruction forms (`call __fentry__`) have no inside. The
 * commit may not wait for a stopped thread: no allocation, patch_lock by
 * trylock only.
 *
 * | state          | written by                          | read by          |
 * |----------------|-------------------------------------|------------------|
 * | attach_state   | the agent's calls, one at a time    | the same calls   |
 *
 * The agent makes one call at a time, so the entry points need no lock of
 * their own; what they change is protected as everywhere else.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "arch.h"
#include "ctl.h"
#include "trace.h"
#include "ring.h"
#include "got.h"
#include "../include/dynftrace/attach.h"

void dft_fatal_install(void) HIDDEN; /* interpose.c */

enum { ATT_NONE, ATT_LOADED, ATT_COMMITTED, ATT_STARTED, ATT_DETACHING, ATT_DETACHED };
static int attach_state;
static int configured; /* dynftrace_attach_config took the settings */

/*
 * What the entry points below do after their first checks is the
 * runtime's own work on the borrowed thread: the C library's functions it
 * calls (sigaction, mkdir, strlen... once -P relocated them) and its reads
 * of errno (__errno_location) are not the program's, and are not traced.
 * The bracket is dft_own_enter's api_depth (no callback runs), not the
 * recursion guard: the API refuses a thread that holds the latter as one
 * inside a callback (-EDEADLK), and detach could then not unregister the
 * tracers. The thread's errno is kept, so that the agent need not call
 * __errno_location around these calls itself.
 */
static int own_work_begin(void)
{
	dft_own_enter();
	return errno;
}
static void own_work_end(const int *saved)
{
	errno = *saved;
	dft_own_leave();
}
#define OWN_WORK int own_errno_ __attribute__((cleanup(own_work_end), unused)) = own_work_begin()

/* The agent borrowed a thread that it stopped inside our own code (a
 * callback, the API, a read side): what the entries would call could wait
 * for that very thread. It lets the thread run on and asks again. */
static int inside_runtime(void)
{
	const struct dft_thread *t = &dft_self;
	return t->recursion || t->rcu_nest || t->api_depth;
}

/* Was the runtime loaded by an attach? The agent loads it under the name
 * DYNFTRACE_ATTACH_SONAME, a link to the runtime: the loader keeps the name
 * it was given, and nothing else in a process can tell us. */
int attach_loaded(void)
{
	Dl_info di;
	if (!dladdr((void *)attach_loaded, &di) || !di.dli_fname)
		return 0;
	const char *base = strrchr(di.dli_fname, '/');
	base = base ? base + 1 : di.dli_fname;
	if (strcmp(base, DYNFTRACE_ATTACH_SONAME))
		return 0;
	attach_state = ATT_LOADED;
	return 1;
}

/* The dft_self of the thread whose thread pointer is TP: static TLS lies
 * at the same offset from every thread's pointer. */
static struct dft_thread *self_of(uint64_t tp)
{
	ptrdiff_t off = (char *)&dft_self - (char *)arch_thread_pointer();
	return (struct dft_thread *)(uintptr_t)(tp + (uint64_t)off);
}

static void verbose_set(void)
{
	const char *v = dft_getenv("DYNFTRACE_VERBOSE");
	dft_verbose = v && *v && strcmp(v, "0");
}

PUBLIC int dynftrace_attach_config(const char *config, size_t len)
{
	if (attach_state != ATT_LOADED || configured)
		return attach_state == ATT_NONE ? -EPERM : -EALREADY;
	if (inside_runtime())
		return -EAGAIN;
	OWN_WORK;
	int err = dft_config_set(config, len);
	if (err)
		return err;
	configured = 1;
	verbose_set();
	size_t n;
	err = sites_relocate_attached(&n);
	return err ? err : (int)(n > INT32_MAX ? INT32_MAX : n);
}

PUBLIC int dynftrace_attach_refused(void)
{
	if (attach_state == ATT_NONE)
		return -EPERM;
	if (inside_runtime())
		return -EAGAIN; /* the borrowed thread may hold the patch lock */
	OWN_WORK;
	size_t n = sites_relocation_refused();
	return (int)(n > INT32_MAX ? INT32_MAX : n);
}

PUBLIC int dynftrace_attach_commit(const uint64_t *tps, size_t ntps, uint64_t *ips, size_t nips)
{
	if (attach_state != ATT_LOADED)
		return attach_state == ATT_NONE ? -EPERM : -EALREADY;
	if (READ_ONCE(dft_killed))
		return -ENODEV;
	OWN_WORK;
	size_t n, moved;
	int err = sites_commit_deferred(&n, ips, nips, &moved);
	if (err == -EAGAIN)
		return err;
	for (size_t i = 0; i < ntps; i++)
		self_of(tps[i])->trap_vblocked = 1; /* the thread is stopped */
	attach_state = ATT_COMMITTED;		    /* sites that failed stay DISABLED, said once */
	return (int)sites_usable();
}

/* record -p's recorder was killed before it could detach (ring.c watches
 * it): nobody will end this recording, so tracing stops and the recording
 * ends here, and the process runs on with the runtime inert, as after a
 * detach that could not unload it. */
static void recorder_gone(pid_t recorder)
{
	char w[256];
	dft_log("its recorder (process %d) is gone: tracing stops and the recording ends; "
		"'dynftrace detach %d' takes the runtime out",
		(int)recorder, (int)getpid());
	ctl_events_write("enable", "0", w, sizeof(w));
	if (trace_set_tracing_on(0, w, sizeof(w)))
		dft_log("tracing could not be turned off: %s", w);
	ring_shutdown();
}

PUBLIC int dynftrace_attach_start(const char *config, size_t len)
{
	if (attach_state != ATT_COMMITTED)
		return attach_state < ATT_COMMITTED ? -EPERM : -EALREADY;
	if (inside_runtime())
		return -EAGAIN;
	OWN_WORK;
	sites_free_committed();
	got_hooks_install(); /* again: a lazy binding may have raced the first */
	if (!configured) {
		int err = dft_config_set(config, len);
		if (err)
			return err;
		verbose_set();
	}
	__atomic_store_n(&ring_orphan_hook, recorder_gone, __ATOMIC_RELEASE);
	trace_record_start();
	if (trace_recording())
		dft_fatal_install();
	ctl_init();
	attach_state = ATT_STARTED;
	return 0;
}

/* ---- detach ------------------------------------------------------------- */

PUBLIC int dynftrace_detach_prepare(char *why, size_t n)
{
	if (attach_state == ATT_NONE) {
		snprintf(why, n, "the runtime was not loaded by an attach");
		return -EPERM;
	}
	if (attach_state == ATT_DETACHED)
		return 0;
	/* Again after a failure, or after a finish that found a thread
	 * inside: every step below may run twice. */
	if (inside_runtime()) {
		snprintf(why, n, "the thread was stopped inside the runtime");
		return -EAGAIN;
	}
	OWN_WORK;
	attach_state = ATT_DETACHING;
	/* Control first: no request may turn anything on again. */
	int err = ctl_stop();
	if (err) {
		snprintf(why, n, "the control thread did not end: %s", strerror(-err));
		return err;
	}
	char w[256];
	ctl_events_write("enable", "0", w, sizeof(w));
	trace_detach_prepare();
	/* The program's calls reach libc directly again (a thread inside a
	 * wrapper now leaves it normally: dft_inside says when). */
	got_hooks_remove();
	err = ops_unregister_all();
	if (err) {
		snprintf(why, n, "cannot turn every site back into a NOP: %s", strerror(-err));
		return err;
	}
	err = sites_detach_prepare();
	if (err) {
		snprintf(why, n, "cannot prepare putting the relocated entries back: %s",
			 strerror(-err));
		return err;
	}
	return 0;
}

/* [lo, hi) of the runtime's own code. */
struct self_text {
	uintptr_t lo, hi;
};

static int self_cb(struct dl_phdr_info *info, size_t size UNUSED, void *data)
{
	struct self_text *st = data;
	uintptr_t me = (uintptr_t)self_cb;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (me >= lo && me < hi) {
			st->lo = lo;
			st->hi = hi;
			return 1;
		}
	}
	return 0;
}

static int thread_busy(struct dft_thread *t, void *ctx)
{
	if (!__atomic_load_n(&t->recursion, __ATOMIC_RELAXED) &&
	    !__atomic_load_n(&t->rcu_nest, __ATOMIC_RELAXED))
		return 0;
	*(pid_t *)ctx = t->tid;
	return -EBUSY;
}

PUBLIC int dynftrace_detach_finish(uint64_t *ips, size_t nips, uint64_t *tps, size_t ntps,
				   char *why, size_t n)
{
	if (attach_state != ATT_DETACHING) {
		snprintf(why, n, "detach was not prepared");
		return -EPERM;
	}
	OWN_WORK;
	/* Nothing irreversible until no thread can be in our code: its
	 * instruction pointer, a signal handler or wrapper of ours below it,
	 * or a tracer callback it runs. */
	struct self_text st = {0, 0};
	dl_iterate_phdr(self_cb, &st);
	for (size_t i = 0; i < nips; i++) {
		const char *what = ips[i] >= st.lo && ips[i] < st.hi ? "the runtime's code"
								     : sites_code_at(ips[i]);
		if (what) {
			snprintf(why, n, "a thread is in %s (at %#lx)", what,
				 (unsigned long)ips[i]);
			return -EBUSY;
		}
	}
	if (__atomic_load_n(&dft_inside, __ATOMIC_ACQUIRE)) {
		snprintf(why, n,
			 "a thread is inside one of the runtime's signal handlers or wrapped C "
			 "library calls (sigsuspend, dlopen, ...)");
		return -EBUSY;
	}
	pid_t tid = 0;
	int err = rcu_for_each_thread_stopped(thread_busy, &tid);
	if (err) {
		if (tid)
			snprintf(why, n, "thread %d is running a tracer callback", (int)tid);
		else
			snprintf(why, n, "a thread holds the runtime's thread registry");
		return -EBUSY;
	}
	/* The relocated entries go back, and the threads in their copies to
	 * the same instructions there (the agent puts IPS back). */
	if (sites_detach_restore(ips, nips)) {
		snprintf(why, n, "a thread holds the runtime's patching lock");
		return -EBUSY;
	}
	if (ring_detach_free()) {
		snprintf(why, n, "a thread holds the trace buffers' list");
		return -EBUSY;
	}
	/* Now for good: every hooked return put back (where the return
	 * address comes in a register, also in each thread's frames, link
	 * register and signal frames on the stack it runs on), our handlers
	 * and thread-exit key gone, trampolines unmapped. */
	for (size_t i = 0; i < ntps; i++) {
		uint64_t *r = &tps[i * DYNFTRACE_DETACH_THREAD_WORDS];
		trace_detach_frames(self_of(r[0]), r[1], r[2], r[3], &r[4]);
	}
	err = rcu_for_each_thread_stopped(trace_detach_thread, NULL);
	if (err) {
		snprintf(why, n, "a thread holds the runtime's thread registry");
		return -EBUSY;
	}
	for (size_t i = 0; i < ntps; i++) {
		uint64_t *r = &tps[i * DYNFTRACE_DETACH_THREAD_WORDS];
		r[0] = self_of(r[0])->trap_vblocked ? 1 : 0;
	}
	dft_signals_detach();
	rcu_detach();
	sites_detach_free();
	trace_detach_free();
	dft_config_free();
	attach_state = ATT_DETACHED;
	return 0;
}
