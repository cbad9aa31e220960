/* SPDX-License-Identifier: MIT */
/*
 * inject.c - the attaching agent: ptrace a running process, run calls in
 * it, leave it as it was.
 *
 * What the program may observe is the pause and nothing else:
 *  - Threads are seized (PTRACE_SEIZE) and stopped with PTRACE_INTERRUPT,
 *    never with SIGSTOP: no signal is sent, and a thread waiting in a
 *    system call (read, futex, epoll_wait, nanosleep) finds it restarted by
 *    the kernel when it resumes, with no EINTR, because its registers are
 *    put back exactly as they were (the restart happens on the way out of
 *    the stop, from those registers).
 *  - A call runs on one thread below its stack pointer and red zone, which
 *    the interrupted code does not own. Its return address is an address
 *    no process maps: the return faults, and the fault stops the thread
 *    in ptrace before any handler of the program could see it.
 *  - Meanwhile the thread's signals are held (its mask, restored after);
 *    only synchronous faults stay deliverable: a fault the kernel must
 *    force through a blocked mask resets the handler to SIG_DFL for the
 *    whole process, which the program would see.
 *  - Every register (vector state too), the signal mask and errno are
 *    restored. Signals a thread was stopped for are delivered when it
 *    resumes, as they would have been.
 *  - No child process is made and no descriptor is left in the target.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "arch_inject.h"
#include "inject.h"

#define WHY(p, ...) snprintf((p)->why, sizeof((p)->why), __VA_ARGS__)

static sigset_t chld_set, chld_old;

int inj_open(struct inj *p, pid_t pid)
{
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->mem = -1;
	/* Stops of our tracees are told by SIGCHLD: wait for it with a
	 * deadline (sigtimedwait), never in a blind loop. */
	sigemptyset(&chld_set);
	sigaddset(&chld_set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld_set, &chld_old);
	return 0;
}

static int open_mem(struct inj *p)
{
	if (p->mem >= 0)
		return 0;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)p->pid);
	p->mem = open(path, O_RDWR | O_CLOEXEC);
	if (p->mem < 0) {
		int e = errno;
		WHY(p, "cannot open %s: %s", path, strerror(e));
		return -e;
	}
	return 0;
}

int inj_read(struct inj *p, uint64_t addr, void *buf, size_t len)
{
	int err = open_mem(p);
	if (err)
		return err;
	ssize_t r = pread(p->mem, buf, len, (off_t)addr);
	return r == (ssize_t)len ? 0 : r < 0 ? -errno : -EIO;
}

int inj_write(struct inj *p, uint64_t addr, const void *buf, size_t len)
{
	int err = open_mem(p);
	if (err)
		return err;
	ssize_t r = pwrite(p->mem, buf, len, (off_t)addr);
	return r == (ssize_t)len ? 0 : r < 0 ? -errno : -EIO;
}

/* Wait for TID's next state change, TIMEOUT_MS at most (-1: for ever,
 * saying so every 10 s). 1 with *STATUS, 0 on time-out, -errno. */
static int wait_tid(struct inj *p, pid_t tid, int *status, int timeout_ms)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long said = 0;
	for (;;) {
		pid_t r = waitpid(tid, status, __WALL | WNOHANG);
		if (r == tid)
			return 1;
		if (r < 0)
			return -errno;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		if (timeout_ms >= 0 && ms >= timeout_ms)
			return 0;
		if (timeout_ms < 0 && ms / 10000 > said) {
			said = ms / 10000;
			fprintf(stderr,
				"dynftrace: still waiting for thread %d of process %d (%ld s): "
				"it may wait for a lock another thread holds\n",
				(int)tid, (int)p->pid, ms / 1000);
		}
		long left = timeout_ms >= 0 ? timeout_ms - ms : 1000;
		if (left > 100)
			left = 100; /* a SIGCHLD of another child may have been taken */
		struct timespec ts = {0, left * 1000000};
		sigtimedwait(&chld_set, NULL, &ts);
	}
}

static struct inj_thread *add_thread(struct inj *p, pid_t tid)
{
	if (p->n == p->cap) {
		size_t nc = p->cap ? 2 * p->cap : 16;
		struct inj_thread *nt = realloc(p->t, nc * sizeof(*nt));
		if (!nt)
			return NULL;
		p->t = nt;
		p->cap = nc;
	}
	struct inj_thread *t = &p->t[p->n];
	memset(t, 0, sizeof(*t));
	t->blocked_nr = -1;
	t->regs = calloc(1, sizeof(*t->regs));
	if (!t->regs)
		return NULL;
	t->tid = tid;
	p->n++;
	return t;
}

static void drop_thread(struct inj *p, size_t i)
{
	free(p->t[i].regs);
	p->t[i] = p->t[--p->n];
}

static int find_thread(const struct inj *p, pid_t tid)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].tid == tid)
			return (int)i;
	return -1;
}

/* The signal sets of a status file in /proc (bit SIG-1 for SIG). */
struct sigsets {
	uint64_t pnd; /* SigPnd | ShdPnd: the thread's own and the process's */
	uint64_t blk, ign, cgt;
};

/* Read them from /proc/PID/task/TID/status, or /proc/PID/status when TID is
 * 0: 0, or -1 when it cannot be opened (the thread is gone). */
static int read_sigsets(pid_t pid, pid_t tid, struct sigsets *m)
{
	char path[80], line[256];
	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	*m = (struct sigsets){0};
	/* Each line comes once; the two pending ones are joined. */
	while (fgets(line, sizeof(line), f)) {
		uint64_t *set = !strncmp(line, "SigPnd:", 7) || !strncmp(line, "ShdPnd:", 7)
				    ? &m->pnd
				: !strncmp(line, "SigBlk:", 7) ? &m->blk
				: !strncmp(line, "SigIgn:", 7) ? &m->ign
				: !strncmp(line, "SigCgt:", 7) ? &m->cgt
							       : NULL;
		if (set)
			*set |= strtoull(line + 7, NULL, 16);
	}
	fclose(f);
	return 0;
}

/* Will TID run a handler of the program when it resumes: a signal pending
 * (its own or the process's) that is caught and not blocked? Then the
 * program sees EINTR anyway. Ignored signals do not count: see below. */
static int signals_pending(pid_t pid, pid_t tid)
{
	struct sigsets m;
	if (read_sigsets(pid, tid, &m))
		return 1;
	return (m.pnd & m.cgt & ~m.blk) != 0;
}

/*
 * Would the process have dropped SIG had we not been tracing it? A traced
 * thread is sent even the signals its process ignores (explicitly, or by
 * default: SIGCHLD, SIGURG, SIGWINCH), so that its tracer sees them; one
 * arriving while we hold the thread ends its wait with EINTR. We drop it,
 * as the kernel would have, and the wait is restarted.
 */
static int signal_ignored(pid_t pid, int sig)
{
	struct sigsets m;
	uint64_t bit = UINT64_C(1) << (sig - 1);
	if (read_sigsets(pid, 0, &m))
		return 0;
	if (m.ign & bit)
		return 1;
	return !(m.cgt & bit) && (sig == SIGCHLD || sig == SIGURG || sig == SIGWINCH);
}

/* The system call thread TID waits in, as /proc/PID/task/TID/syscall shows
 * it ("NR ARG0 ... ARG5 SP PC": orig_x0/orig_a0 as ARG0, PC after the
 * system-call instruction), for undo_eintr. */
static void note_blocked_call(struct inj *p, struct inj_thread *t)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)p->pid, (int)t->tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = 0;
	unsigned long long v[8];
	long nr = -1;
	if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7]) != 9)
		nr = -1;
	t->blocked_nr = nr;
	for (int k = 0; k < 6; k++)
		t->blocked_args[k] = nr >= 0 ? v[k] : 0;
	t->blocked_sp = nr >= 0 ? v[6] : 0;
	t->blocked_pc = nr >= 0 ? v[7] : 0;
}

/* The waits the kernel ends with EINTR, not a restart, when the thread is
 * stopped (signal(7), "interruption by stop signals"); the ones an
 * architecture lacks (epoll_wait, semop) are not in its table. */
static int eintr_on_stop(long nr)
{
	static const long calls[] = {
#ifdef SYS_epoll_wait
	    SYS_epoll_wait,
#endif
	    SYS_epoll_pwait,  SYS_rt_sigtimedwait, SYS_semtimedop,
#ifdef SYS_epoll_pwait2
	    SYS_epoll_pwait2,
#endif
#ifdef SYS_semop
	    SYS_semop,
#endif
	};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (nr == calls[i])
			return 1;
	return 0;
}

/*
 * Thread T, just stopped by the agent, was waiting in one of those calls,
 * which the stop ended with EINTR: make it run the call again when it
 * resumes, as if the stop had not happened (back onto the system-call
 * instruction with the call's registers, what the kernel does for
 * -ERESTARTNOHAND; a wait with a time-out starts again whole). 1 if its
 * registers were changed.
 *
 * Where the first argument's register also returns the result (aarch64's
 * x0, riscv64's a0: ARCH_INJ_BLOCKED_CALL), that argument is lost and the
 * kernel's orig_x0/orig_a0 is not visible to ptrace. It comes from the
 * call read in /proc just before the stop (note_blocked_call), trusted
 * only when that was the same call: same number, the same five other
 * arguments, sp and pc. Else restoring it could hand some other call's
 * argument to this one. A thread that entered such a wait between that
 * read and the stop keeps its EINTR (as POSIX allows after a stop).
 *
 * On x86-64 (no ARCH_INJ_BLOCKED_CALL) orig_rax, which survives the stop,
 * says which call the thread just left and the arguments are intact, so
 * no earlier read is needed and none is compared.
 */
static int undo_eintr(struct inj_thread *t)
{
	struct arch_inj_regs *r = t->regs;
	long nr = arch_inj_syscall_nr(r);
	if (nr < 0 || (int64_t)arch_inj_retval(r) != -EINTR || !eintr_on_stop(nr))
		return 0;
	uint64_t args[6];
	arch_inj_syscall_args(r, args);
	if (ARCH_INJ_BLOCKED_CALL) {
		if (nr != t->blocked_nr || arch_inj_sp(r) != t->blocked_sp ||
		    arch_inj_ip(r) != t->blocked_pc)
			return 0;
		for (int k = 1; k < 6; k++)
			if (args[k] != t->blocked_args[k])
				return 0;
		args[0] = t->blocked_args[0];
		t->blocked_nr = -1;
	}
	arch_inj_restart_syscall(r, nr, args);
	return 1;
}

/* Ask seized thread I to stop: 1 asked, 0 gone, -errno. */
static int interrupt_one(struct inj *p, size_t i)
{
	struct inj_thread *t = &p->t[i];
	if (ARCH_INJ_BLOCKED_CALL)
		note_blocked_call(p, t);
	if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0)) {
		if (errno == ESRCH)
			return 0;
		int e = errno;
		WHY(p, "cannot stop thread %d: %s", (int)t->tid, strerror(e));
		return -e;
	}
	return 1;
}

/* Wait until interrupted thread I stops; 1 stopped, 0 gone, -errno. */
static int stop_one(struct inj *p, size_t i)
{
	struct inj_thread *t = &p->t[i];
	int st;
	int r = wait_tid(p, t->tid, &st, 5000);
	if (r == 0) {
		WHY(p, "thread %d of process %d did not stop within 5 s", (int)t->tid, (int)p->pid);
		return -ETIMEDOUT;
	}
	if (r < 0)
		return r == -ECHILD ? 0 : r;
	if (!WIFSTOPPED(st))
		return 0; /* it exited */
	int event = st >> 16;
	/* A signal-delivery stop: the signal is delivered when it resumes,
	 * unless it is one the process would never have been sent. */
	t->sig = event == 0 ? WSTOPSIG(st) : 0;
	if (t->sig && signal_ignored(p->pid, t->sig))
		t->sig = 0;
	t->stopped = 1;
	int err = arch_inj_save(t->tid, t->regs);
	if (err) {
		WHY(p, "cannot read the registers of thread %d: %s", (int)t->tid, strerror(-err));
		return err;
	}
	/* Our stop ended its wait with EINTR: undo that, unless a signal
	 * is on its way (then the program would have seen EINTR anyway). */
	if (!t->sig && undo_eintr(t)) {
		if (signals_pending(p->pid, t->tid))
			arch_inj_save(t->tid, t->regs); /* as it was */
		else
			t->dirty = 1;
	}
	return 1;
}

/* STEP every thread not stopped yet (1 done, 0 gone: dropped, -errno). */
static int each_unstopped(struct inj *p, int (*step)(struct inj *p, size_t i))
{
	for (size_t i = 0; i < p->n;) {
		int r = p->t[i].stopped ? 1 : step(p, i);
		if (r < 0)
			return r;
		if (r == 0)
			drop_thread(p, i);
		else
			i++;
	}
	return 0;
}

int inj_stop_all(struct inj *p)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)p->pid);
	for (int round = 0; round < 1000; round++) {
		DIR *d = opendir(path);
		if (!d) {
			int e = errno;
			WHY(p, "process %d: %s", (int)p->pid,
			    e == ENOENT ? "no such process" : strerror(e));
			return -(e == ENOENT ? ESRCH : e);
		}
		int added = 0;
		struct dirent *de;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || find_thread(p, tid) >= 0)
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
				if (errno == ESRCH)
					continue; /* gone meanwhile */
				int e = errno;
				closedir(d);
				WHY(p, "cannot trace thread %d of process %d: %s", (int)tid,
				    (int)p->pid, strerror(e));
				return -e;
			}
			if (!add_thread(p, tid)) {
				closedir(d);
				return -ENOMEM;
			}
			added++;
		}
		closedir(d);
		/* All asked at once, then each waited for: the stops overlap. */
		int r = each_unstopped(p, interrupt_one);
		if (!r)
			r = each_unstopped(p, stop_one);
		if (r < 0)
			return r;
		/* Once every listed thread is stopped none can make another:
		 * a list with nobody new is the whole process. */
		if (!added)
			return p->n ? 0 : -ESRCH;
	}
	WHY(p, "process %d keeps making threads faster than they can be stopped", (int)p->pid);
	return -EAGAIN;
}

static int resume_one(struct inj *p, struct inj_thread *t)
{
	if (!t->stopped)
		return 0;
	int err = 0;
	if (t->dirty && (err = arch_inj_restore(t->tid, t->regs)))
		WHY(p, "cannot restore the registers of thread %d: %s", (int)t->tid,
		    strerror(-err));
	t->dirty = 0;
	if (ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)t->sig) && errno != ESRCH && !err) {
		err = -errno;
		WHY(p, "cannot let thread %d go: %s", (int)t->tid, strerror(errno));
	}
	t->stopped = 0;
	t->sig = 0;
	return err;
}

int inj_resume_all(struct inj *p)
{
	int err = 0;
	for (size_t i = 0; i < p->n; i++) {
		int e = resume_one(p, &p->t[i]);
		if (e && !err)
			err = e;
	}
	while (p->n)
		drop_thread(p, p->n - 1);
	return err;
}

void inj_close(struct inj *p)
{
	inj_resume_all(p);
	free(p->t);
	p->t = NULL;
	p->cap = 0;
	if (p->mem >= 0)
		close(p->mem);
	p->mem = -1;
	sigprocmask(SIG_SETMASK, &chld_old, NULL);
}

int inj_sigmask(struct inj *p, size_t i, uint64_t *old, const uint64_t *set)
{
	pid_t tid = p->t[i].tid;
	if (old && ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(*old), old))
		return -errno;
	if (set && ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(*set), set))
		return -errno;
	return 0;
}

int inj_trap_pending(struct inj *p, size_t i)
{
	const struct inj_thread *t = &p->t[i];
	if (t->sig == SIGTRAP)
		return 1;
	struct sigsets m;
	if (read_sigsets(p->pid, t->tid, &m))
		return 0;
	return (m.pnd & UINT64_C(1) << (SIGTRAP - 1)) != 0;
}

uint64_t inj_thread_pointer(const struct inj *p, size_t i)
{
	return arch_inj_tp(p->t[i].regs);
}

uint64_t inj_link(const struct inj *p, size_t i)
{
	return arch_inj_link(p->t[i].regs);
}

void inj_set_link(struct inj *p, size_t i, uint64_t v)
{
	arch_inj_set_link(p->t[i].regs, v);
	p->t[i].dirty = 1;
}

uint64_t inj_last_data(const struct inj *p)
{
	return p->last_data;
}

int inj_stop_thread(struct inj *p, pid_t tid)
{
	if (find_thread(p, tid) >= 0)
		return 0;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0)) {
		int e = errno;
		WHY(p, "cannot trace thread %d of process %d: %s", (int)tid, (int)p->pid,
		    strerror(e));
		return -e;
	}
	if (!add_thread(p, tid))
		return -ENOMEM;
	int r = interrupt_one(p, p->n - 1);
	if (r > 0)
		r = stop_one(p, p->n - 1);
	if (r <= 0) {
		drop_thread(p, p->n - 1);
		if (!r)
			WHY(p, "thread %d of process %d ended", (int)tid, (int)p->pid);
		return r ? r : -ESRCH;
	}
	return 0;
}

pid_t inj_choose_tid(pid_t pid, const pid_t *avoid, size_t navoid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	pid_t best = -1, any = -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		int skip = tid <= 0;
		for (size_t i = 0; i < navoid && !skip; i++)
			skip = avoid[i] == tid;
		if (skip)
			continue;
		char sp[96], buf[64] = "";
		/* never the runtime's own threads (a detach stops them) */
		snprintf(sp, sizeof(sp), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
		int cfd = open(sp, O_RDONLY | O_CLOEXEC);
		if (cfd >= 0) {
			ssize_t n = read(cfd, buf, sizeof(buf) - 1);
			buf[n > 0 ? n : 0] = 0;
			close(cfd);
			if (!strncmp(buf, "dynftrace", 9))
				continue;
			buf[0] = 0;
		}
		if (any < 0)
			any = tid;
		snprintf(sp, sizeof(sp), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
		int fd = open(sp, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);
			buf[n > 0 ? n : 0] = 0;
			close(fd);
		}
		/* a number: waiting in that system call; "running" or -1: not */
		if (best < 0 && buf[0] >= '0' && buf[0] <= '9')
			best = tid;
	}
	closedir(d);
	return best >= 0 ? best : any;
}

size_t inj_pick_thread(struct inj *p)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].stopped && !p->t[i].sig && arch_inj_syscall(p->t[i].regs) >= 0)
			return i;
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].stopped && !p->t[i].sig)
			return i;
	return 0;
}

/* The signals a called function may still take: synchronous faults. */
static uint64_t call_mask(void)
{
	uint64_t m = ~UINT64_C(0);
	static const int sync[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
	for (size_t i = 0; i < sizeof(sync) / sizeof(sync[0]); i++)
		m &= ~(UINT64_C(1) << (sync[i] - 1));
	return m;
}

/* Run one call on stopped thread T whose saved state is SAVED. */
static int call_raw(struct inj *p, struct inj_thread *t, const struct arch_inj_regs *saved,
		    uint64_t fn, const uint64_t *args, int nargs, const void *data, size_t len,
		    uint64_t *ret)
{
	uint64_t sp = arch_inj_sp(saved) - ARCH_INJ_RED_ZONE - len;
	sp &= ~(uint64_t)(ARCH_INJ_CALL_ALIGN - 1);
	uint64_t a[6];
	for (int i = 0; i < nargs && i < 6; i++)
		a[i] = args[i] - INJ_DATA < len ? sp + (args[i] - INJ_DATA) : args[i];
	p->last_data = sp;
	int err = len ? inj_write(p, sp, data, len) : 0;
	uint64_t trap = ARCH_INJ_RETURN_TRAP;
	uint64_t callsp = sp - sizeof(trap);
	if (!err)
		err = inj_write(p, callsp, &trap, sizeof(trap));
	if (err) {
		WHY(p, "cannot write to the stack of thread %d: %s", (int)t->tid, strerror(-err));
		return err;
	}
	struct arch_inj_regs *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	memcpy(r, saved, sizeof(*r));
	arch_inj_setup_call(r, fn, a, nargs, callsp);
	err = arch_inj_set_gp(t->tid, r);
	if (err) {
		WHY(p, "cannot set the registers of thread %d: %s", (int)t->tid, strerror(-err));
		goto out;
	}
	int sig = 0;
	for (;;) {
		if (ptrace(PTRACE_CONT, t->tid, 0, (void *)(long)sig)) {
			err = -errno;
			WHY(p, "cannot run thread %d: %s", (int)t->tid, strerror(errno));
			goto out;
		}
		int st;
		int w = wait_tid(p, t->tid, &st, -1);
		if (w < 0 || !WIFSTOPPED(st)) {
			WHY(p, "process %d ended during the call", (int)p->pid);
			t->stopped = 0;
			err = -ESRCH;
			goto out;
		}
		int event = st >> 16;
		sig = event ? 0 : WSTOPSIG(st);
		if (sig == SIGSEGV && !arch_inj_get_gp(t->tid, r) &&
		    arch_inj_ip(r) == ARCH_INJ_RETURN_TRAP)
			break;
		/* Anything else is the program's (a SIGTRAP of the runtime's
		 * own patching, a fault): delivered as it would be. */
	}
	*ret = arch_inj_retval(r);
	err = 0;
out:
	free(r);
	/* Back to exactly what it was, vector state included. */
	int e = arch_inj_restore(t->tid, saved);
	if (e && !err) {
		WHY(p, "cannot restore the registers of thread %d: %s", (int)t->tid, strerror(-e));
		err = e;
	}
	return err;
}

int inj_call(struct inj *p, size_t *tip, uint64_t fn, const uint64_t *args, int nargs,
	     const void *data, size_t len, int others_run, uint64_t *ret)
{
	size_t ti = *tip;
	if (ti >= p->n)
		return -EINVAL;
	struct inj_thread *t = &p->t[ti];
	if (!t->stopped)
		return -EINVAL;
	int err;
	if (t->dirty && (err = arch_inj_set_gp(t->tid, t->regs)))
		return err;
	t->dirty = 0;
	uint64_t mask, hold = call_mask();
	if (ptrace(PTRACE_GETSIGMASK, t->tid, (void *)sizeof(mask), &mask) ||
	    ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(hold), &hold)) {
		err = -errno;
		WHY(p, "cannot hold the signals of thread %d: %s", (int)t->tid, strerror(errno));
		return err;
	}
	if (others_run) {
		/* They run untraced from here: forget them (inj_stop_all seizes
		 * them again), keeping T first. */
		for (size_t i = 0; i < p->n; i++)
			if (i != ti && (err = resume_one(p, &p->t[i])))
				goto mask;
		struct inj_thread keep = p->t[ti];
		for (size_t i = 0; i < p->n; i++)
			if (i != ti)
				free(p->t[i].regs);
		p->t[0] = keep;
		p->n = 1;
		*tip = 0;
		t = &p->t[0];
	}
	/* errno: the call may change it; the thread must find it unchanged
	 * (the runtime's entry points keep it themselves: keeps_errno). */
	static uint64_t errno_fn;
	static pid_t errno_pid;
	if (errno_pid != p->pid) {
		errno_fn = inj_symbol(p->pid, "/libc.so.6", "__errno_location", NULL, 0);
		errno_pid = p->pid;
	}
	uint64_t eaddr = 0;
	int32_t eval = 0;
	if (errno_fn && !p->keeps_errno &&
	    !call_raw(p, t, t->regs, errno_fn, NULL, 0, NULL, 0, &eaddr) &&
	    inj_read(p, eaddr, &eval, sizeof(eval)))
		eaddr = 0;
	err = call_raw(p, t, t->regs, fn, args, nargs, data, len, ret);
	if (eaddr && t->stopped)
		inj_write(p, eaddr, &eval, sizeof(eval));
mask:
	if (t->stopped && ptrace(PTRACE_SETSIGMASK, t->tid, (void *)sizeof(mask), &mask) && !err) {
		err = -errno;
		WHY(p, "cannot restore the signal mask of thread %d: %s", (int)t->tid,
		    strerror(errno));
	}
	return err;
}

/* ---- walking the stopped threads' frames --------------------------------- */

struct map {
	uint64_t lo, hi;
	int exec;
};

static struct map *read_maps(pid_t pid, size_t *n)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(path, "re");
	*n = 0;
	if (!f)
		return NULL;
	struct map *v = NULL;
	size_t cap = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3)
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			struct map *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[(*n)++] = (struct map){lo, hi, perms[2] == 'x'};
	}
	fclose(f);
	return v;
}

static const struct map *map_of(const struct map *m, size_t n, uint64_t a)
{
	for (size_t i = 0; i < n; i++)
		if (a >= m[i].lo && a < m[i].hi)
			return &m[i];
	return NULL;
}

void inj_thread_stack(const struct inj *p, size_t i, uint64_t *sp, uint64_t *lo, uint64_t *hi)
{
	size_t nm;
	struct map *m = read_maps(p->pid, &nm);
	*sp = arch_inj_sp(p->t[i].regs);
	const struct map *st = m ? map_of(m, nm, *sp) : NULL;
	*lo = st ? st->lo : 0;
	*hi = st ? st->hi : 0;
	free(m);
}

/* Called for every signal frame found: FRAME is where its return address
 * is; return non-zero to stop. */
typedef int (*frame_fn)(struct inj *p, uint64_t frame, void *ctx);

#define STACK_SCAN_MAX (8u << 20)

#ifdef ARCH_SIGFRAME_MARK
static int read_cb(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return inj_read(ctx, addr, buf, len);
}

/* Is FRAME, whose marker word was seen on stack ST, a signal frame: laid
 * out as the kernel does (arch_sigframe_check), its saved pc in code and
 * its saved sp mapped, above the frame when on the same stack? */
static int marked_frame(struct inj *p, const struct map *m, size_t nm, const struct map *st,
			uint64_t frame)
{
	uint64_t end, ip, ssp;
	if (arch_sigframe_check(frame, read_cb, p, &end) != 1 ||
	    inj_read(p, frame + ARCH_SIGFRAME_IP_OFF, &ip, 8) ||
	    inj_read(p, frame + ARCH_SIGFRAME_SP_OFF, &ssp, 8))
		return 0;
	const struct map *cm = map_of(m, nm, ip), *sm = map_of(m, nm, ssp);
	return cm && cm->exec && sm && (sm != st || ssp >= end);
}
#endif

/*
 * Find the signal frames on the stack that holds SP: every word, from SP
 * up to the end of its mapping, that is the address of the C library's
 * signal return code (or, where frames do not hold it, the kernel's
 * marker word at its place in a frame that passes the checks). A
 * handler's frame is found even when the thread runs deeper calls; a
 * frame on an alternate stack leads on to the stack it interrupted (its
 * saved stack pointer). Reads are in chunks, the code at candidate
 * addresses once each.
 *
 * A frame is told by its contents, so a dead one that a live frame's
 * uninitialised locals still hold may be taken for one: a pc moved there
 * is written into memory nobody reads, and at detach it may make the
 * runtime refuse (a thread seems to be in its code) until it is gone.
 */
static int scan_frames(struct inj *p, const struct map *m, size_t nm, uint64_t sp, frame_fn fn,
		       void *ctx, int depth)
{
	const struct map *st = map_of(m, nm, sp);
	if (!st || depth > 4)
		return 0;
	uint64_t end = st->hi;
	if (end - sp > STACK_SCAN_MAX)
		end = sp + STACK_SCAN_MAX;
	enum { CHUNK = 65536 };
	uint64_t *buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
#ifndef ARCH_SIGFRAME_MARK
	uint64_t yes[8] = {0}, no[64] = {0}; /* restorer candidates known */
	size_t ny = 0, nn = 0;
#endif
	int stop = 0;
	for (uint64_t a = sp & ~7ull; a < end && !stop; a += CHUNK) {
		size_t len = end - a < CHUNK ? end - a : CHUNK;
		if (inj_read(p, a, buf, len))
			break;
		for (size_t k = 0; k < len / 8 && !stop; k++) {
			uint64_t w = buf[k];
#ifdef ARCH_SIGFRAME_MARK
			uint64_t frame = a + 8 * k - ARCH_SIGFRAME_MARK_OFF;
			if (w != ARCH_SIGFRAME_MARK || a + 8 * k < sp + ARCH_SIGFRAME_MARK_OFF ||
			    !marked_frame(p, m, nm, st, frame))
				continue;
#else
			const struct map *cm = map_of(m, nm, w);
			if (!cm || !cm->exec)
				continue;
			int is = -1;
			for (size_t j = 0; j < ny && is < 0; j++)
				if (yes[j] == w)
					is = 1;
			for (size_t j = 0; j < nn && j < 64 && is < 0; j++)
				if (no[j] == w)
					is = 0;
			if (is < 0) {
				uint8_t code[16];
				is = !inj_read(p, w, code, sizeof(code)) &&
				     arch_is_sigreturn(code, sizeof(code));
				if (is && ny < 8)
					yes[ny++] = w;
				else if (!is)
					no[nn++ % 64] = w;
			}
			if (!is)
				continue;
			uint64_t frame = a + 8 * k;
#endif
			stop = fn(p, frame, ctx);
			uint64_t ssp;
			if (!stop && !inj_read(p, frame + ARCH_SIGFRAME_SP_OFF, &ssp, 8) &&
			    map_of(m, nm, ssp) != st)
				stop = scan_frames(p, m, nm, ssp, fn, ctx, depth + 1);
		}
	}
	free(buf);
	return stop;
}

static uint64_t nop_end(struct inj *p, uint64_t ip)
{
	uint8_t code[16];
	if (inj_read(p, ip, code, sizeof(code)))
		return ip;
	return ip + arch_nop_run(code, sizeof(code));
}

static int skip_in_frame(struct inj *p, uint64_t frame, void *ctx)
{
	uint64_t ip;
	if (inj_read(p, frame + ARCH_SIGFRAME_IP_OFF, &ip, 8))
		return 0;
	uint64_t to = nop_end(p, ip);
	if (to != ip && !inj_write(p, frame + ARCH_SIGFRAME_IP_OFF, &to, 8))
		(*(size_t *)ctx)++;
	return 0;
}

int inj_skip_nop_runs(struct inj *p, size_t *moved)
{
	size_t nm;
	struct map *m = read_maps(p->pid, &nm);
	if (!m) {
		WHY(p, "cannot read the mappings of process %d", (int)p->pid);
		return -EIO;
	}
	*moved = 0;
	for (size_t i = 0; i < p->n; i++) {
		struct inj_thread *t = &p->t[i];
		if (!t->stopped)
			continue;
		uint64_t ip = arch_inj_ip(t->regs);
		uint64_t to = arch_inj_syscall(t->regs) >= 0 ? ip : nop_end(p, ip);
		if (to != ip) {
			arch_inj_set_ip(t->regs, to);
			t->dirty = 1;
			(*moved)++;
		}
		scan_frames(p, m, nm, arch_inj_sp(t->regs), skip_in_frame, moved, 0);
	}
	free(m);
	return 0;
}

struct refvec {
	struct inj_ipref *v;
	size_t n, cap, thread;
	int err;
};

static int refvec_add(struct refvec *rv, uint64_t ip, uint64_t frame)
{
	if (rv->n == rv->cap) {
		size_t nc = rv->cap ? 2 * rv->cap : 64;
		struct inj_ipref *nv = realloc(rv->v, nc * sizeof(*nv));
		if (!nv)
			return rv->err = -ENOMEM;
		rv->v = nv;
		rv->cap = nc;
	}
	rv->v[rv->n++] = (struct inj_ipref){.ip = ip, .thread = rv->thread, .frame = frame};
	return 0;
}

static int collect_frame_ref(struct inj *p, uint64_t frame, void *ctx)
{
	uint64_t ip;
	if (!inj_read(p, frame + ARCH_SIGFRAME_IP_OFF, &ip, 8))
		return refvec_add(ctx, ip, frame) != 0;
	return 0;
}

int inj_collect_iprefs(struct inj *p, struct inj_ipref **v, size_t *n)
{
	size_t nm;
	struct map *m = read_maps(p->pid, &nm);
	struct refvec rv = {0};
	if (!m) {
		WHY(p, "cannot read the mappings of process %d", (int)p->pid);
		return -EIO;
	}
	for (size_t i = 0; i < p->n && !rv.err; i++) {
		if (!p->t[i].stopped)
			continue;
		rv.thread = i;
		refvec_add(&rv, arch_inj_ip(p->t[i].regs), 0);
		scan_frames(p, m, nm, arch_inj_sp(p->t[i].regs), collect_frame_ref, &rv, 0);
	}
	free(m);
	if (rv.err) {
		free(rv.v);
		WHY(p, "out of memory");
		return rv.err;
	}
	*v = rv.v;
	*n = rv.n;
	return 0;
}

int inj_set_ipref(struct inj *p, const struct inj_ipref *r, uint64_t ip)
{
	if (r->frame)
		return inj_write(p, r->frame + ARCH_SIGFRAME_IP_OFF, &ip, 8);
	struct inj_thread *t = &p->t[r->thread];
	arch_inj_set_ip(t->regs, ip);
	t->dirty = 1;
	return 0;
}

/* ---- symbols of the target's objects ------------------------------------ */

/* NAME's value in the dynamic symbol table of the ELF file PATH (0: none),
 * and the lowest PT_LOAD address (to turn it into the mapped address). */
static int dynsym_lookup(const char *path, const char *name, int type, uint64_t *value,
			 uint64_t *lowest)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = -ENOENT;
	uint8_t *f = NULL;
	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(Elf64_Ehdr))
		goto out;
	f = malloc((size_t)st.st_size);
	if (!f || pread(fd, f, (size_t)st.st_size, 0) != st.st_size)
		goto out;
	size_t sz = (size_t)st.st_size;
	const Elf64_Ehdr *eh = (const void *)f;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		goto out;
	*lowest = UINT64_MAX;
	if (eh->e_phoff > sz || eh->e_phnum > (sz - eh->e_phoff) / sizeof(Elf64_Phdr))
		goto out;
	const Elf64_Phdr *ph = (const void *)(f + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr < *lowest)
			*lowest = ph[i].p_vaddr & ~0xfffull;
	if (eh->e_shoff > sz || eh->e_shnum > (sz - eh->e_shoff) / sizeof(Elf64_Shdr))
		goto out;
	const Elf64_Shdr *sh = (const void *)(f + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum)
			continue;
		const Elf64_Shdr *ss = &sh[sh[i].sh_link];
		if (sh[i].sh_offset > sz || sh[i].sh_size > sz - sh[i].sh_offset ||
		    ss->sh_offset > sz || ss->sh_size > sz - ss->sh_offset)
			goto out;
		const Elf64_Sym *sym = (const void *)(f + sh[i].sh_offset);
		size_t ns = sh[i].sh_size / sizeof(*sym);
		const char *str = (const char *)(f + ss->sh_offset);
		for (size_t k = 0; k < ns; k++) {
			if (sym[k].st_shndx == SHN_UNDEF || sym[k].st_name >= ss->sh_size ||
			    ELF64_ST_TYPE(sym[k].st_info) != type)
				continue;
			if (strnlen(str + sym[k].st_name, ss->sh_size - sym[k].st_name) ==
				ss->sh_size - sym[k].st_name ||
			    strcmp(str + sym[k].st_name, name))
				continue;
			*value = sym[k].st_value;
			err = 0;
			goto out;
		}
	}
out:
	free(f);
	close(fd);
	return err;
}

static uint64_t symbol_typed(pid_t pid, const char *suffix, const char *name, int type,
			     char *pathout, size_t pathlen);

/* N bytes at ADDR of the memory behind /proc/PID/mem descriptor FD. */
static int mem_get(int fd, uint64_t addr, void *buf, size_t n)
{
	return pread(fd, buf, n, (off_t)addr) == (ssize_t)n ? 0 : -EIO;
}

/*
 * NAME's address in the object mapped at BASE (its first page) of process
 * PID, read from the process's memory through the dynamic section and the
 * GNU hash table, as the loader itself finds symbols: for an object whose
 * file was replaced or removed since it was loaded (maps says "(deleted)"),
 * whose symbols the file on disk no longer gives. 0: not found.
 */
static uint64_t mem_dynsym(pid_t pid, uint64_t base, const char *name, int type)
{
	char mp[64];
	snprintf(mp, sizeof(mp), "/proc/%d/mem", (int)pid);
	int fd = open(mp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint64_t found = 0, lowest = UINT64_MAX, dynv = 0, dynsz = 0;
	Elf64_Ehdr eh;
	if (mem_get(fd, base, &eh, sizeof(eh)) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum > 64)
		goto out;
	for (int i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (mem_get(fd, base + eh.e_phoff + (uint64_t)i * sizeof(ph), &ph, sizeof(ph)))
			goto out;
		if (ph.p_type == PT_LOAD && ph.p_vaddr < lowest)
			lowest = ph.p_vaddr & ~0xfffull;
		if (ph.p_type == PT_DYNAMIC)
			dynv = ph.p_vaddr, dynsz = ph.p_memsz;
	}
	if (!dynv || lowest == UINT64_MAX)
		goto out;
	uint64_t bias = base - lowest, symtab = 0, strtab = 0, strsz = 0, gnuhash = 0;
	for (uint64_t off = 0; off + sizeof(Elf64_Dyn) <= dynsz && off < 65536;
	     off += sizeof(Elf64_Dyn)) {
		Elf64_Dyn d;
		if (mem_get(fd, bias + dynv + off, &d, sizeof(d)) || d.d_tag == DT_NULL)
			break;
		/* The loader makes these absolute where the section is writable. */
		uint64_t v = d.d_un.d_ptr < bias ? d.d_un.d_ptr + bias : d.d_un.d_ptr;
		if (d.d_tag == DT_SYMTAB)
			symtab = v;
		else if (d.d_tag == DT_STRTAB)
			strtab = v;
		else if (d.d_tag == DT_STRSZ)
			strsz = d.d_un.d_val;
		else if (d.d_tag == DT_GNU_HASH)
			gnuhash = v;
	}
	uint32_t hdr[4]; /* nbuckets, symoffset, bloom words, bloom shift */
	if (!symtab || !strtab || !gnuhash || mem_get(fd, gnuhash, hdr, sizeof(hdr)) || !hdr[0])
		goto out;
	uint32_t h = 5381;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	uint64_t buckets = gnuhash + 16 + (uint64_t)hdr[2] * 8;
	uint64_t chains = buckets + (uint64_t)hdr[0] * 4;
	uint32_t idx;
	if (mem_get(fd, buckets + (uint64_t)(h % hdr[0]) * 4, &idx, 4) || idx < hdr[1])
		goto out;
	size_t nl = strlen(name);
	for (int n = 0; n < 100000; n++, idx++) {
		uint32_t ch;
		Elf64_Sym sym;
		char got[256];
		if (mem_get(fd, chains + (uint64_t)(idx - hdr[1]) * 4, &ch, 4))
			break;
		if ((ch | 1) == (h | 1) &&
		    !mem_get(fd, symtab + (uint64_t)idx * sizeof(sym), &sym, sizeof(sym)) &&
		    sym.st_shndx != SHN_UNDEF && ELF64_ST_TYPE(sym.st_info) == type &&
		    nl < sizeof(got) && sym.st_name + nl < strsz &&
		    !mem_get(fd, strtab + sym.st_name, got, nl + 1) && !memcmp(got, name, nl + 1)) {
			found = bias + sym.st_value;
			break;
		}
		if (ch & 1)
			break; /* the chain's last */
	}
out:
	close(fd);
	return found;
}

uint64_t inj_symbol(pid_t pid, const char *suffix, const char *name, char *pathout, size_t pathlen)
{
	return symbol_typed(pid, suffix, name, STT_FUNC, pathout, pathlen);
}

int inj_loaded_as(struct inj *p, const char *suffix)
{
	/* The loader's list of objects (r_debug.r_map), as debuggers read
	 * it: each keeps the name it was loaded under. */
	uint64_t rd = symbol_typed(p->pid, ARCH_INJ_LOADER, "_r_debug", STT_OBJECT, NULL, 0);
	if (!rd)
		rd = symbol_typed(p->pid, "/libc.so.6", "_r_debug", STT_OBJECT, NULL, 0);
	uint64_t lm;
	if (!rd || inj_read(p, rd + 8, &lm, 8))
		return -ENOENT;
	size_t sl = strlen(suffix);
	for (int n = 0; lm && n < 100000; n++) {
		uint64_t f[4]; /* l_addr, l_name, l_ld, l_next */
		char name[4096];
		if (inj_read(p, lm, f, sizeof(f)))
			return -EIO;
		/* page by page until its NUL: the name may end just before an
		 * unmapped page, or run across into the next */
		size_t k = 0;
		while (f[1] && k < sizeof(name) - 1) {
			uint64_t a = f[1] + k;
			size_t want = 4096 - (a & 4095);
			if (want > sizeof(name) - 1 - k)
				want = sizeof(name) - 1 - k;
			if (inj_read(p, a, name + k, want))
				break;
			size_t z = strnlen(name + k, want);
			k += z;
			if (z < want)
				break;
		}
		name[k] = 0;
		if (k >= sl && !strcmp(name + k - sl, suffix))
			return 1;
		lm = f[3];
	}
	return 0;
}

static uint64_t symbol_typed(pid_t pid, const char *suffix, const char *name, int type,
			     char *pathout, size_t pathlen)
{
	char mpath[64], line[4096];
	snprintf(mpath, sizeof(mpath), "/proc/%d/maps", (int)pid);
	FILE *f = fopen(mpath, "re");
	if (!f)
		return 0;
	uint64_t addr = 0;
	size_t sl = strlen(suffix);
	while (!addr && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char perms[8];
		int pathpos = 0;
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &pathpos) <
			4 ||
		    !pathpos || off != 0)
			continue;
		char *path = line + pathpos;
		path[strcspn(path, "\n")] = 0;
		size_t pl = strlen(path);
		/* A file replaced since it was mapped (a dynftrace upgraded
		 * under an attached runtime): its symbols are in memory only. */
		const size_t dl = sizeof(" (deleted)") - 1;
		int gone = pl > dl && !strcmp(path + pl - dl, " (deleted)");
		if (gone)
			pl -= dl;
		if (path[0] != '/' || pl < sl || strncmp(path + pl - sl, suffix, sl))
			continue;
		if (gone) {
			addr = mem_dynsym(pid, lo, name, type);
			if (addr && pathout)
				snprintf(pathout, pathlen, "%.*s", (int)pl, path);
			continue;
		}
		uint64_t value = 0, lowest = 0;
		if (dynsym_lookup(path, name, type, &value, &lowest))
			continue;
		addr = lo - lowest + value;
		if (pathout)
			snprintf(pathout, pathlen, "%s", path);
	}
	fclose(f);
	return addr;
}
