/* SPDX-License-Identifier: MIT */
/*
 * interpose.c - the libc entry points the runtime wraps, and why.
 *
 * SIGTRAP. The patch engine's breakpoints raise SIGTRAP in whatever thread
 * meets a site mid-batch. The kernel kills a thread that blocks a
 * synchronous SIGTRAP, and worker threads commonly block every signal. So
 * while the runtime is loaded SIGTRAP is never really blocked: the mask
 * functions below strip it and remember, per thread, that the program *wants*
 * it blocked (trap_vblocked). A foreign SIGTRAP (kill, raise) that arrives
 * while it is virtually blocked is held (trap_pending) and re-sent with its
 * siginfo when the program unblocks it, so the program sees what it would
 * have seen. New threads inherit the virtual bit (pthread_create), and a
 * mask given with pthread_attr_setsigmask_np loses SIGTRAP as the thread
 * starts. The program's own SIGTRAP handler is kept aside and called for
 * every trap that is not ours; SIG_DFL and SIG_IGN behave as without us.
 *
 * Fatal signals. While recording, a signal that kills the process would
 * lose what the trace buffers hold: where the program's disposition of a
 * fatal signal is SIG_DFL, ours flushes them, then the signal kills the
 * process as it would have. The program's handlers always win, and
 * sigaction tells the program what it set. See "fatal signals" below.
 *
 * dlopen/dlclose. A loaded object's sites must become NOPs before another
 * thread can run its code (gcc's five 1-byte NOPs cannot be patched live),
 * and an unloaded object's sites must leave the tables. See sites.c.
 *
 * Limits (documented in ARCHITECTURE.md): raw rt_sigprocmask/rt_sigaction
 * syscalls, setcontext/swapcontext and sigwait on SIGTRAP bypass this.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <alloca.h>

#include "internal.h"
#include "arch.h"
#include "hooks.h"
#include "got.h"
#include "patch.h"

/* The patch engine's trap handler (dft_trap_handler_install). */
static int (*trap_handle)(siginfo_t *si, void *uc);

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef int (*sigmask_fn)(int, const sigset_t *, sigset_t *);

static sigaction_fn real_sigaction_p;
static sigmask_fn real_pthread_sigmask_p, real_sigprocmask_p;

static int real_sigaction(int sig, const struct sigaction *a, struct sigaction *o)
{
	if (!real_sigaction_p)
		real_sigaction_p = (sigaction_fn)dft_real("sigaction");
	if (!real_sigaction_p) {
		errno = ENOSYS;
		return -1;
	}
	return real_sigaction_p(sig, a, o);
}

static int real_pthread_sigmask(int how, const sigset_t *s, sigset_t *o)
{
	if (!real_pthread_sigmask_p)
		real_pthread_sigmask_p = (sigmask_fn)dft_real("pthread_sigmask");
	return real_pthread_sigmask_p ? real_pthread_sigmask_p(how, s, o) : ENOSYS;
}

/*
 * The program's SIGTRAP disposition, double-buffered: the handler reads
 * prog_trap[prog_trap_cur]; a writer fills the other slot and flips. Writers
 * serialise on trap_lock.
 */
static struct sigaction prog_trap[2];
static int prog_trap_cur;
static int trap_installed;
static pthread_mutex_t trap_lock = PTHREAD_MUTEX_INITIALIZER;
/* Signals whose program-given sa_mask contained SIGTRAP (for oldact). */
static unsigned char mask_had_trap[_NSIG];

/* Threads running the runtime's code on a path no other state shows: our
 * signal handlers and the wrappers that call out and may block. A detach
 * unloads the runtime only when it is 0 (with every thread stopped). */
HIDDEN unsigned long dft_inside;

/* errno's offset from the thread pointer (the C library's errno lives in
 * its static TLS, at the same offset in every thread), set before the
 * handler is installed. The handler reaches errno this way, never through
 * __errno_location: that may be a relocated entry (-P) whose site holds
 * the very breakpoint being handled, and the handler would trap again
 * before handling anything. Nothing it calls before handling one of our
 * breakpoints may be a function of the C library. */
static intptr_t errno_off;

static void trap_entry(int sig, siginfo_t *si, void *uc)
{
	int *err = (int *)(arch_thread_pointer() + (uintptr_t)errno_off);
	int saved = *err;
	__atomic_add_fetch(&dft_inside, 1, __ATOMIC_RELAXED);
	int (*h)(siginfo_t *, void *) = __atomic_load_n(&trap_handle, __ATOMIC_ACQUIRE);
	if (!h || !h(si, uc))
		dft_trap_forward(sig, si, uc);
	__atomic_sub_fetch(&dft_inside, 1, __ATOMIC_RELAXED);
	*err = saved;
}

static void die_by_trap(void)
{
	{
		int (*flush)(int) = CORE_HOOK(fatal_flush); /* recording: keep the trace */
		if (flush)
			flush(SIGTRAP);
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	real_sigaction(SIGTRAP, &dfl, NULL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGTRAP);
	real_pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), SIGTRAP);
	_exit(128 + SIGTRAP); /* not reached */
}

void dft_trap_forward(int sig, siginfo_t *si, void *uc)
{
	struct dft_thread *t = &dft_self;
	const struct sigaction *pa = &prog_trap[__atomic_load_n(&prog_trap_cur, __ATOMIC_ACQUIRE)];
	int sync = si->si_code == SI_KERNEL || si->si_code > 0;

	if (t->trap_vblocked) {
		if (sync)
			die_by_trap(); /* the kernel kills a thread blocking a trap */
		t->trap_info = *si;
		t->trap_pending = 1;
		return;
	}
	if (pa->sa_handler == SIG_IGN) {
		if (sync)
			die_by_trap(); /* an ignored trap is forced to default */
		return;
	}
	if (pa->sa_handler == SIG_DFL)
		die_by_trap();

	/* Run the program's handler as the kernel would have: its sa_mask
	 * blocked, SIGTRAP (virtually) blocked unless SA_NODEFER. The kernel
	 * restores the mask from our frame when we return. */
	struct sigaction act = *pa;
	sigset_t m = act.sa_mask;
	sigdelset(&m, SIGTRAP);
	real_pthread_sigmask(SIG_BLOCK, &m, NULL);
	int vb = t->trap_vblocked;
	if (!(act.sa_flags & SA_NODEFER))
		t->trap_vblocked = 1;
	if (act.sa_flags & SA_RESETHAND) {
		pthread_mutex_lock(&trap_lock);
		int next = !prog_trap_cur;
		memset(&prog_trap[next], 0, sizeof(prog_trap[next]));
		prog_trap[next].sa_handler = SIG_DFL;
		__atomic_store_n(&prog_trap_cur, next, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&trap_lock);
	}
	if (act.sa_flags & SA_SIGINFO)
		act.sa_sigaction(sig, si, uc);
	else
		act.sa_handler(sig);
	t->trap_vblocked = vb;
}

/* Install our SIGTRAP handler, keeping the program's as prog_trap. */
int dft_trap_handler_install(int (*handle)(siginfo_t *si, void *uc))
{
	errno_off = (intptr_t)((uintptr_t)&errno - arch_thread_pointer());
	__atomic_store_n(&trap_handle, handle, __ATOMIC_RELEASE);
	pthread_mutex_lock(&trap_lock);
	struct sigaction ours, old;
	memset(&ours, 0, sizeof(ours));
	ours.sa_sigaction = trap_entry;
	ours.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
	sigemptyset(&ours.sa_mask);
	int err = 0;
	if (real_sigaction(SIGTRAP, NULL, &old) != 0) {
		err = -errno;
	} else if (old.sa_sigaction != trap_entry) {
		/* First install, or somebody replaced us with a raw syscall:
		 * what is there now is the program's. */
		if (trap_installed)
			dft_debug("SIGTRAP handler was replaced behind our back; chaining it");
		int next = !prog_trap_cur;
		prog_trap[next] = old;
		__atomic_store_n(&prog_trap_cur, next, __ATOMIC_RELEASE);
		if (real_sigaction(SIGTRAP, &ours, NULL) != 0)
			err = -errno;
		else
			trap_installed = 1;
	}
	pthread_mutex_unlock(&trap_lock);
	return err;
}

/* Re-send a held SIGTRAP once the program unblocks it. */
static void deliver_pending(void)
{
	struct dft_thread *t = &dft_self;
	if (!t->trap_vblocked && t->trap_pending) {
		t->trap_pending = 0;
		siginfo_t si = t->trap_info;
		syscall(SYS_rt_tgsigqueueinfo, getpid(), syscall(SYS_gettid), SIGTRAP, &si);
	}
}

/* Apply HOW/SET to the virtual SIGTRAP bit; return the SET to really use. */
static const sigset_t *filter_mask(int how, const sigset_t *set, sigset_t *copy, int *vb_out)
{
	struct dft_thread *t = &dft_self;
	*vb_out = t->trap_vblocked;
	if (!set)
		return NULL;
	int has = sigismember(set, SIGTRAP) == 1;
	if (how == SIG_BLOCK && has)
		t->trap_vblocked = 1;
	else if (how == SIG_UNBLOCK && has)
		t->trap_vblocked = 0;
	else if (how == SIG_SETMASK)
		t->trap_vblocked = has;
	*copy = *set;
	sigdelset(copy, SIGTRAP);
	return copy;
}

PUBLIC int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	int vb;
	if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
		return EINVAL;
	const sigset_t *s = filter_mask(how, set, &copy, &vb);
	int r = real_pthread_sigmask(how, s, old);
	if (r != 0) {
		dft_self.trap_vblocked = vb;
		return r;
	}
	if (old && vb)
		sigaddset(old, SIGTRAP);
	deliver_pending();
	return 0;
}
DFT_WRAPPER(pthread_sigmask);

PUBLIC int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	int vb;
	if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK) {
		errno = EINVAL;
		return -1;
	}
	if (!real_sigprocmask_p)
		real_sigprocmask_p = (sigmask_fn)dft_real("sigprocmask");
	const sigset_t *s = filter_mask(how, set, &copy, &vb);
	int r = real_sigprocmask_p(how, s, old);
	if (r != 0) {
		dft_self.trap_vblocked = vb;
		return r;
	}
	if (old && vb)
		sigaddset(old, SIGTRAP);
	deliver_pending();
	return 0;
}
DFT_WRAPPER(sigprocmask);

PUBLIC int sigsuspend(const sigset_t *mask)
{
	static int (*real)(const sigset_t *);
	if (!real)
		real = (int (*)(const sigset_t *))dft_real("sigsuspend");
	sigset_t copy = *mask;
	sigdelset(&copy, SIGTRAP);
	__atomic_add_fetch(&dft_inside, 1, __ATOMIC_RELAXED);
	int r = real(&copy);
	__atomic_sub_fetch(&dft_inside, 1, __ATOMIC_RELAXED);
	return r;
}
DFT_WRAPPER(sigsuspend);

PUBLIC int sigpending(sigset_t *set)
{
	static int (*real)(sigset_t *);
	if (!real)
		real = (int (*)(sigset_t *))dft_real("sigpending");
	int r = real(set);
	if (r == 0 && dft_self.trap_pending)
		sigaddset(set, SIGTRAP);
	return r;
}
DFT_WRAPPER(sigpending);

/* ---- fatal signals: flush the trace before dying ---------------------- */

/*
 * While recording (dft_fatal_install, from the constructor), the kernel's
 * disposition of each signal below whose disposition is SIG_DFL is our
 * handler, fatal_entry; what sigaction tells the program is what the
 * program set (fatal_prog[sig]), never our handler. When the program
 * installs a handler or SIG_IGN, that goes to the kernel as is: the
 * program's handler runs, we do not chain or flush. When it sets SIG_DFL
 * again, our handler goes back. The kernel's disposition is the truth: a
 * handler there that is not ours (set by a raw syscall or libc-internal
 * code, e.g. sigset()) is the program's and is reported as such.
 *
 * fatal_entry: ring_emergency_flush() (ring.c: async-signal-safe; exactly
 * one thread flushes, a second dying thread waits for it), then SIG_DFL,
 * the same siginfo queued again to this thread (rt_tgsigqueueinfo), and
 * return. The signal is blocked in the handler, so the kernel delivers it
 * on the way out, with SIG_DFL, from the interrupted context: the process
 * dies of the same signal, with the same siginfo and the registers of
 * the faulting instruction in its core, as without us. The handler blocks
 * every signal but SIGTRAP and runs on the alternate stack if the thread
 * has one.
 *
 * Differences that remain: a signal that the kernel forces (a fault while
 * the thread blocks it, a stack overflow without an alternate stack)
 * bypasses every handler, so nothing is flushed; a stopped process keeps
 * a SIGTERM pending until SIGCONT instead of dying at once; handlers
 * reset by SA_RESETHAND, or through sigset()/sysv_signal() (not wrapped),
 * put SIG_DFL back without our handler.
 *
 * | field          | written by                                 | read by           |
 * |----------------|--------------------------------------------|-------------------|
 * | fatal_prog[]   | fatal_lock holder                          | fatal_lock holder |
 * | fatal_act      | dft_fatal_install, before fatal_armed      | after fatal_armed |
 * |                |                                            | (and fatal_lock)  |
 * | fatal_armed    | dft_fatal_install (release, fatal_lock     | sigaction (acquire)|
 * |                | held), once                                |                   |
 * | fatal_lock_tid | lockers (CAS 0 -> tid; store 0)            | lockers           |
 */
static const int fatal_sigs[] = {
    SIGSEGV, SIGBUS,  SIGFPE,  SIGILL,	SIGABRT, SIGSYS,    SIGTERM, SIGINT,  SIGHUP,
    SIGQUIT, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
};
static struct sigaction fatal_prog[_NSIG];
static struct sigaction fatal_act;
static int fatal_armed;
static pid_t fatal_lock_tid;

static int fatal_sig(int sig)
{
	for (size_t i = 0; i < ARRAY_SIZE(fatal_sigs); i++)
		if (fatal_sigs[i] == sig)
			return 1;
	return 0;
}

/* sigaction is async-signal-safe: a handler of the thread holding the lock
 * may call it, and goes on without the lock (returns 0) rather than wait
 * for itself. */
static int fatal_lock(void)
{
	pid_t me = (pid_t)syscall(SYS_gettid), z = 0;
	if (__atomic_load_n(&fatal_lock_tid, __ATOMIC_RELAXED) == me)
		return 0;
	while (!__atomic_compare_exchange_n(&fatal_lock_tid, &z, me, 0, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		z = 0;
		sched_yield();
	}
	return 1;
}

static void fatal_unlock(int locked)
{
	if (locked)
		__atomic_store_n(&fatal_lock_tid, 0, __ATOMIC_RELEASE);
}

static void fatal_entry(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	dft_own_enter(); /* for good: the process is dying */
	int (*flush)(int) = CORE_HOOK(fatal_flush);
	void (*unhook)(void) = CORE_HOOK(fatal_unhook);
	if (flush)
		flush(sig);
	if (unhook)
		unhook();
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	real_sigaction(sig, &dfl, NULL);
	siginfo_t info = *si;
	pid_t pid = getpid(), tid = (pid_t)syscall(SYS_gettid);
	if (syscall(SYS_rt_tgsigqueueinfo, pid, tid, sig, &info) != 0)
		syscall(SYS_tgkill, pid, tid, sig);
	errno = saved;
}

static int fatal_is_ours(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) && a->sa_sigaction == fatal_entry;
}

/* Recording starts: our handler wherever the disposition is SIG_DFL (not
 * where the program, or its parent through exec, set SIG_IGN or a handler). */
void dft_fatal_install(void)
{
	memset(&fatal_act, 0, sizeof(fatal_act));
	fatal_act.sa_sigaction = fatal_entry;
	fatal_act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&fatal_act.sa_mask);
	sigdelset(&fatal_act.sa_mask, SIGTRAP); /* a blocked trap would kill */
	int locked = fatal_lock();
	/* From now on sigaction waits for the lock: nobody sees a half state. */
	__atomic_store_n(&fatal_armed, 1, __ATOMIC_RELEASE);
	for (size_t i = 0; i < ARRAY_SIZE(fatal_sigs); i++) {
		int sig = fatal_sigs[i];
		struct sigaction cur;
		if (real_sigaction(sig, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
			continue;
		fatal_prog[sig] = cur;
		if (real_sigaction(sig, &fatal_act, NULL) != 0)
			dft_debug("cannot catch signal %d: %s", sig, strerror(errno));
	}
	fatal_unlock(locked);
}

/* sigaction for a fatal signal once armed (see above). */
static int fatal_sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	int locked = fatal_lock();
	struct sigaction cur, old;
	int r = real_sigaction(sig, NULL, &cur);
	if (r != 0)
		goto out;
	int ours = fatal_is_ours(&cur);
	old = ours ? fatal_prog[sig] : cur;
	if (!ours && mask_had_trap[sig])
		sigaddset(&old.sa_mask, SIGTRAP);
	if (act && act->sa_handler == SIG_DFL) {
		/* The program reads back what the kernel would have told it
		 * (flags libc adds included): set its SIG_DFL, then ours in its
		 * place, keeping what the first call left. */
		struct sigaction kview;
		r = real_sigaction(sig, act, NULL);
		if (r == 0)
			r = real_sigaction(sig, &fatal_act, &kview);
		if (r == 0)
			fatal_prog[sig] = kview;
	} else if (act) {
		struct sigaction copy = *act;
		int had = sigismember(&copy.sa_mask, SIGTRAP) == 1;
		sigdelset(&copy.sa_mask, SIGTRAP);
		r = real_sigaction(sig, &copy, NULL);
		if (r == 0)
			mask_had_trap[sig] = (unsigned char)had;
	}
	if (r == 0 && oact)
		*oact = old;
out:
	fatal_unlock(locked);
	return r;
}

PUBLIC int sigaction(int sig, const struct sigaction *act, struct sigaction *oact)
{
	if (sig < 1 || sig >= _NSIG)
		return real_sigaction(sig, act, oact);
	if (fatal_sig(sig) && __atomic_load_n(&fatal_armed, __ATOMIC_ACQUIRE))
		return fatal_sigaction(sig, act, oact);
	if (sig == SIGTRAP && __atomic_load_n(&trap_installed, __ATOMIC_ACQUIRE)) {
		pthread_mutex_lock(&trap_lock);
		int cur = prog_trap_cur;
		if (oact)
			*oact = prog_trap[cur];
		if (act) {
			int next = !cur;
			prog_trap[next] = *act;
			__atomic_store_n(&prog_trap_cur, next, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&trap_lock);
		return 0;
	}
	struct sigaction copy;
	const struct sigaction *a = act;
	int had = mask_had_trap[sig];
	if (act) {
		copy = *act;
		mask_had_trap[sig] = sigismember(&copy.sa_mask, SIGTRAP) == 1;
		sigdelset(&copy.sa_mask, SIGTRAP);
		a = &copy;
	}
	int r = real_sigaction(sig, a, oact);
	if (r != 0 && act)
		mask_had_trap[sig] = (unsigned char)had;
	if (r == 0 && oact && had)
		sigaddset(&oact->sa_mask, SIGTRAP);
	return r;
}
DFT_WRAPPER(sigaction);

/* glibc's signal() calls its internal sigaction, so it needs its own wrapper;
 * BSD semantics, as glibc's. */
PUBLIC sighandler_t signal(int sig, sighandler_t h)
{
	struct sigaction a, o;
	memset(&a, 0, sizeof(a));
	a.sa_handler = h;
	sigemptyset(&a.sa_mask);
	if (sig > 0 && sig < _NSIG)
		sigaddset(&a.sa_mask, sig);
	a.sa_flags = SA_RESTART;
	if (dft_sigaction(sig, &a, &o) != 0)
		return SIG_ERR;
	return o.sa_handler;
}
DFT_WRAPPER(signal);

/*
 * A new thread inherits its creator's signal mask, or takes the one set with
 * pthread_attr_setsigmask_np. The real mask never holds SIGTRAP (or, from an
 * attr, holds it until the thread runs our start routine); the virtual bit
 * lives in TLS and must be carried over by hand. Threads whose creator has
 * SIGTRAP unblocked and whose attr sets no mask start directly.
 */
struct thread_start {
	void *(*fn)(void *);
	void *arg;
	int trap_vblocked;
};

/* The program's start routine and its argument, for dft_thread_entry
 * (tramp.S), which jumps there: returned in two registers. */
struct thread_go {
	void *(*fn)(void *);
	void *arg;
};
void *dft_thread_entry(void *p) HIDDEN;
struct thread_go dft_thread_prepare(void *p) HIDDEN;

HIDDEN struct thread_go dft_thread_prepare(void *p)
{
	dft_own_enter();
	struct thread_start s = *(struct thread_start *)p;
	free(p);
	/* Only libc ran on this thread so far: no site can have trapped. */
	sigset_t cur;
	if (real_pthread_sigmask(SIG_SETMASK, NULL, &cur) == 0 && sigismember(&cur, SIGTRAP) == 1) {
		sigset_t s1;
		sigemptyset(&s1);
		sigaddset(&s1, SIGTRAP);
		real_pthread_sigmask(SIG_UNBLOCK, &s1, NULL);
	}
	dft_self.trap_vblocked = s.trap_vblocked;
	dft_own_leave();
	return (struct thread_go){s.fn, s.arg};
}

PUBLIC int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	static create_fn real;
	if (!real)
		real = (create_fn)dft_real("pthread_create");
	if (!real)
		return EAGAIN;
	int vb = dft_self.trap_vblocked;
#ifdef PTHREAD_ATTR_NO_SIGMASK_NP
	sigset_t am;
	int from_attr = attr && pthread_attr_getsigmask_np(attr, &am) == 0;
	if (from_attr)
		vb = sigismember(&am, SIGTRAP) == 1;
#else
	int from_attr = 0;
#endif
	if (!vb && !from_attr)
		return real(th, attr, fn, arg);
	struct thread_start *s = malloc(sizeof(*s));
	if (!s)
		return EAGAIN;
	s->fn = fn;
	s->arg = arg;
	s->trap_vblocked = vb;
	int r = real(th, attr, dft_thread_entry, s);
	if (r != 0)
		free(s);
	return r;
}
DFT_WRAPPER(pthread_create);

/* The main thread may start with SIGTRAP blocked (inherited through exec). */
void dft_signals_init(void)
{
	sigset_t cur;
	if (real_pthread_sigmask(SIG_SETMASK, NULL, &cur) == 0 && sigismember(&cur, SIGTRAP) == 1) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGTRAP);
		real_pthread_sigmask(SIG_UNBLOCK, &s, NULL);
		dft_self.trap_vblocked = 1;
	}
}

/* ---- dlopen / dlclose ------------------------------------------------ */

/*
 * A name without '/' is searched with the DT_RUNPATH of the *calling*
 * object. Calling dlopen from here would make that us, so look the name up
 * in the caller's run path first and pass the full path.
 */
static const char *caller_runpath_lookup(const char *file, const void *caller, char *buf,
					 size_t len)
{
	Dl_info info;
	struct link_map *lm = NULL;
	if (!file || strchr(file, '/') || !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) ||
	    !lm || !lm->l_ld)
		return file;
	const char *strtab = NULL;
	const char *rp = NULL;
	ElfW(Dyn) * d;
	size_t rp_off = 0;
	int have = 0;
	for (d = lm->l_ld; d->d_tag != DT_NULL; d++) {
		if (d->d_tag == DT_STRTAB)
			strtab = (const char *)d->d_un.d_ptr;
		else if (d->d_tag == DT_RUNPATH || (d->d_tag == DT_RPATH && !have)) {
			rp_off = d->d_un.d_val;
			have = 1;
		}
	}
	if (!have || !strtab)
		return file;
	/* glibc adds the load bias to DT_STRTAB in place only where the
	 * dynamic section is writable; riscv64's is read-only
	 * (DL_RO_DYN_SECTION), its d_ptr the file's address (got.c's
	 * dyn_addr says the rule in full). Objects are linked at 0 but for a
	 * non-PIE executable, whose bias is 0: a value below the bias is
	 * unrelocated. */
	if (lm->l_addr && (uintptr_t)strtab < lm->l_addr)
		strtab += lm->l_addr;
	rp = strtab + rp_off;
	char origin[PATH_MAX];
	const char *objpath = lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
	ssize_t on = -1;
	if (!strcmp(objpath, "/proc/self/exe")) {
		on = readlink(objpath, origin, sizeof(origin) - 1);
	} else if (strlen(objpath) < sizeof(origin)) {
		strcpy(origin, objpath);
		on = (ssize_t)strlen(origin);
	}
	if (on <= 0)
		return file;
	origin[on] = 0;
	char *slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	while (*rp) {
		const char *end = strchr(rp, ':');
		size_t n = end ? (size_t)(end - rp) : strlen(rp);
		char dir[PATH_MAX];
		if (n < sizeof(dir)) {
			memcpy(dir, rp, n);
			dir[n] = 0;
			const char *rest = NULL;
			if (!strncmp(dir, "$ORIGIN", 7))
				rest = dir + 7;
			else if (!strncmp(dir, "${ORIGIN}", 9))
				rest = dir + 9;
			int w = rest ? snprintf(buf, len, "%s%s/%s", origin, rest, file)
				     : snprintf(buf, len, "%s/%s", dir, file);
			if (w > 0 && (size_t)w < len && access(buf, F_OK) == 0)
				return buf;
		}
		if (!end)
			break;
		rp = end + 1;
	}
	return file;
}

/*
 * The unload barrier: code that uses memory of a loaded object from outside
 * it (the control thread's events/ files use tracepoints, which live in
 * their objects) holds dft_unload_lock for reading; dlclose holds it for
 * writing across the unload, so an object cannot go away meanwhile.
 *
 * dlopen holds it for writing too, across the load and its rescan. Without
 * that, another thread's dlopen could map the same file again, at the same
 * address, between a dlclose's unmap and its rescan: the rescan would take
 * the new copy for the old object and apply the old object's records
 * (patched sites, thunks, filter addresses) to fresh code.
 *
 * A constructor's or destructor's own dlopen/dlclose (nested: unload_depth)
 * does not take it again. Lock order:
 * dft_unload_lock -> tp_lock -> patch_lock -> the loader's lock. A
 * constructor or destructor that takes patch_lock (static keys, static
 * calls) runs under the loader's lock, which is safe because the only
 * holder of patch_lock that waits for the loader, dlclose, holds
 * dft_unload_lock for writing, which excludes every other wrapped load.
 */
/* dft_unload_lock is defined in got.c, whose GOT hook passes it also
 * serialises (held for writing). */
static __thread int unload_depth __attribute__((tls_model("initial-exec")));

PUBLIC void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	if (!real)
		real = (void *(*)(const char *, int))dft_real("dlopen");
	char buf[PATH_MAX];
	dft_own_enter();
	const char *f = caller_runpath_lookup(file, __builtin_return_address(0), buf, sizeof(buf));
	/* Excludes dlclose (see the unload barrier below): an object unloaded
	 * by another thread's dlclose is forgotten before this load may put a
	 * new copy at its address. */
	int outer = unload_depth++ == 0;
	if (outer)
		pthread_rwlock_wrlock(&dft_unload_lock);
	dft_own_leave();
	void *h = real(f, mode); /* the program's: its constructors are traced */
	dft_own_enter();
	if (h && file) {
		int e = errno;
		sites_rescan();
		got_hooks_object_added(); /* loaded late: hook the new objects */
		errno = e;
	}
	if (outer)
		pthread_rwlock_unlock(&dft_unload_lock);
	unload_depth--;
	dft_own_leave();
	return h;
}
DFT_WRAPPER(dlopen);

/* fork (init.c): no unload in flight while the address space is copied. */
HIDDEN int dft_unload_fork_prepare(void)
{
	if (unload_depth) /* fork from a destructor: we hold it already */
		return 0;
	pthread_rwlock_rdlock(&dft_unload_lock);
	return 1;
}

HIDDEN void dft_unload_fork_done(int held)
{
	if (held)
		pthread_rwlock_unlock(&dft_unload_lock);
}

PUBLIC int dlclose(void *handle)
{
	static int (*real)(void *);
	if (!real)
		real = (int (*)(void *))dft_real("dlclose");
	int outer = unload_depth++ == 0;
	if (outer)
		pthread_rwlock_wrlock(&dft_unload_lock);
	/* Held across the unload so no batch writes into pages being unmapped;
	 * recursive, so destructors may still call the API. */
	patch_lock();
	int r = real(handle);
	sites_rescan();
	patch_unlock();
	if (r == 0)
		got_hooks_object_removed(); /* never write into what went */
	if (outer)
		pthread_rwlock_unlock(&dft_unload_lock);
	unload_depth--;
	return r;
}
DFT_WRAPPER(dlclose);

/* ---- how the runtime was loaded ------------------------------------------ */

/* Written once at start-up (dft_loaded_at_start_init), read after. */
static int loaded_at_start;

/* Is DT_NEEDED of the program (the first object) a name of the runtime? */
static int needed_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	const char *self = ctx, *b = strrchr(self, '/');
	size_t n = strcspn(b ? b + 1 : self, ".");
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	const char *strtab = NULL;
	for (const ElfW(Dyn) *d = dyn; d && d->d_tag != DT_NULL; d++) {
		if (d->d_tag != DT_STRTAB)
			continue;
		/* relocated by the loader, but on targets whose dynamic section
		 * is read-only (riscv64) still the link-time address */
		uintptr_t v = d->d_un.d_ptr;
		strtab = (const char *)(v < info->dlpi_addr ? v + info->dlpi_addr : v);
	}
	for (const ElfW(Dyn) *d = dyn; d && strtab && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_NEEDED &&
		    !strncmp(strtab + d->d_un.d_val, b ? b + 1 : self, n) &&
		    strtab[d->d_un.d_val + n] == '.')
			loaded_at_start = 1;
	return 1; /* the program only */
}

void dft_loaded_at_start_init(void)
{
	Dl_info self;
	struct stat me, st;
	if (!dladdr((void *)dft_loaded_at_start_init, &self) || !self.dli_fname ||
	    stat(self.dli_fname, &me))
		return;
	/* LD_PRELOAD: names separated by spaces or colons */
	const char *pre = getenv("LD_PRELOAD");
	while (pre && *pre && !loaded_at_start) {
		size_t n = strcspn(pre, " :");
		char path[PATH_MAX];
		if (n && n < sizeof(path)) {
			memcpy(path, pre, n);
			path[n] = 0;
			if (!stat(path, &st) && st.st_dev == me.st_dev && st.st_ino == me.st_ino)
				loaded_at_start = 1;
		}
		pre += n + (pre[n] != 0);
	}
	if (!loaded_at_start)
		dl_iterate_phdr(needed_cb, (void *)self.dli_fname);
	dft_debug("%s was loaded %s", self.dli_fname,
		  loaded_at_start ? "with the program" : "by dlopen");
}

int dft_loaded_at_start(void)
{
	return loaded_at_start;
}

/* ---- exec ------------------------------------------------------------- */

/*
 * An exec replaces the image without running destructors: what this image
 * recorded is flushed first (the new image records under its own name). The
 * variadic execl* forms build their argument vector and end here too;
 * glibc's execvp/execvpe call execve internally, so they are wrapped
 * themselves.
 */
#include <stdarg.h>

typedef int (*exec_fn)(const char *, char *const[], char *const[]);

/* Flush, exec through libc's REAL, and resume recording if it failed.
 * PARENT: the wrapper's caller. The layers above are told which call is
 * made: the program traced REAL (-P), and its entry must be recorded
 * before the recording ends, its return too if the exec fails. */
static int exec_flushed(exec_fn real, const char *path, char *const argv[], char *const envp[],
			void *parent)
{
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	const struct core_exec_call call = {
	    .fn = (uintptr_t)real,
	    .parent = (uintptr_t)parent,
	    .args = {(unsigned long)path, (unsigned long)argv, (unsigned long)envp},
	};
	void (*readers)(void) = CORE_HOOK(exec_readers);
	void (*before)(const struct core_exec_call *) = CORE_HOOK(before_exec);
	dft_own_enter();
	if (readers)
		readers();
	if (before)
		before(&call);
	dft_own_leave();
	int r = real(path, argv, envp);
	int e = errno;
	void (*failed)(const struct core_exec_call *, long) = CORE_HOOK(exec_failed);
	dft_own_enter();
	if (failed)
		failed(&call, r);
	dft_own_leave();
	errno = e;
	return r;
}

static exec_fn real_execve(void)
{
	static exec_fn real;
	if (!real)
		real = (exec_fn)dft_real("execve");
	return real;
}

static exec_fn real_execvpe(void)
{
	static exec_fn real;
	if (!real)
		real = (exec_fn)dft_real("execvpe");
	return real;
}

PUBLIC int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_flushed(real_execve(), path, argv, envp, __builtin_return_address(0));
}
DFT_WRAPPER(execve);

PUBLIC int execv(const char *path, char *const argv[])
{
	return exec_flushed(real_execve(), path, argv, environ, __builtin_return_address(0));
}
DFT_WRAPPER(execv);

PUBLIC int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_flushed(real_execvpe(), file, argv, envp, __builtin_return_address(0));
}
DFT_WRAPPER(execvpe);

PUBLIC int execvp(const char *file, char *const argv[])
{
	return exec_flushed(real_execvpe(), file, argv, environ, __builtin_return_address(0));
}
DFT_WRAPPER(execvp);

/* Collect execl-style arguments (NULL-terminated) into a vector. */
#define EXECL_ARGV(first, ap, argv)                                                                \
	do {                                                                                       \
		size_t n_ = 1;                                                                     \
		va_list c_;                                                                        \
		va_copy(c_, ap);                                                                   \
		while (va_arg(c_, char *))                                                         \
			n_++;                                                                      \
		va_end(c_);                                                                        \
		argv = alloca((n_ + 1) * sizeof(char *));                                          \
		argv[0] = (char *)(first);                                                         \
		for (size_t i_ = 1; i_ <= n_; i_++)                                                \
			argv[i_] = va_arg(ap, char *);                                             \
	} while (0)

PUBLIC int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	char **argv;
	va_start(ap, arg);
	EXECL_ARGV(arg, ap, argv);
	va_end(ap);
	return exec_flushed(real_execve(), path, argv, environ, __builtin_return_address(0));
}
DFT_WRAPPER(execl);

PUBLIC int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	char **argv;
	va_start(ap, arg);
	EXECL_ARGV(arg, ap, argv);
	va_end(ap);
	return exec_flushed(real_execvpe(), file, argv, environ, __builtin_return_address(0));
}
DFT_WRAPPER(execlp);

PUBLIC int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	char **argv, **envp = NULL;
	va_start(ap, arg);
	EXECL_ARGV(arg, ap, argv);
	envp = va_arg(ap, char **); /* after the terminating NULL */
	va_end(ap);
	return exec_flushed(real_execve(), path, argv, envp, __builtin_return_address(0));
}
DFT_WRAPPER(execle);

/*
 * Detach (every other thread stopped): give the program back the signal
 * dispositions our handlers stood in for, where ours are still installed
 * (the program may have replaced them with raw system calls since).
 */
void dft_signals_detach(void)
{
	struct sigaction cur;
	if (trap_installed && !real_sigaction(SIGTRAP, NULL, &cur) && (cur.sa_flags & SA_SIGINFO) &&
	    cur.sa_sigaction == trap_entry)
		real_sigaction(SIGTRAP,
			       &prog_trap[__atomic_load_n(&prog_trap_cur, __ATOMIC_ACQUIRE)], NULL);
	trap_installed = 0;
	if (__atomic_load_n(&fatal_armed, __ATOMIC_ACQUIRE)) {
		for (size_t i = 0; i < ARRAY_SIZE(fatal_sigs); i++) {
			int sig = fatal_sigs[i];
			if (!real_sigaction(sig, NULL, &cur) && fatal_is_ours(&cur))
				real_sigaction(sig, &fatal_prog[sig], NULL);
		}
		__atomic_store_n(&fatal_armed, 0, __ATOMIC_RELEASE);
	}
}
