/* SPDX-License-Identifier: MIT */
/*
 * inject.h - the attaching agent: stops the threads of a running process
 * with ptrace, runs function calls inside it, and lets it go with every
 * register as it was. See inject.c for the rules it keeps.
 */
#ifndef DYNFTRACE_INJECT_H
#define DYNFTRACE_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct arch_inj_regs;

struct inj_thread {
	pid_t tid;
	int stopped;		    /* seized and in a ptrace stop */
	int sig;		    /* a signal it stopped for, delivered when it resumes */
	int dirty;		    /* regs changed: written back before it resumes */
	struct arch_inj_regs *regs; /* as it stopped (then as changed) */
	/* Where ARCH_INJ_BLOCKED_CALL: the system call it waited in just
	 * before the stop (-1 none, its six arguments, sp and pc after the
	 * system-call instruction), from /proc; the agent's thread alone
	 * uses it, as every field here. */
	long blocked_nr;
	uint64_t blocked_args[6], blocked_sp, blocked_pc;
};

struct inj {
	pid_t pid;
	int mem; /* /proc/PID/mem, for reading and writing its memory */
	struct inj_thread *t;
	size_t n, cap;
	uint64_t last_data; /* where the last call's DATA went */
	int keeps_errno;    /* the function called keeps errno: not saved */
	char why[320];	    /* the last error, one sentence */
};

/* Open PID for injection (nothing is stopped yet): 0 or -errno (why). */
int inj_open(struct inj *p, pid_t pid);
/* Let every thread go and forget PID. */
void inj_close(struct inj *p);

/* Seize and stop every thread (threads appearing meanwhile too), and save
 * their registers: 0 or -errno. */
int inj_stop_all(struct inj *p);
/* Write back changed registers and let every thread run (ptrace detach):
 * pending stop signals are delivered as they would have been. */
int inj_resume_all(struct inj *p);

int inj_read(struct inj *p, uint64_t addr, void *buf, size_t len);
int inj_write(struct inj *p, uint64_t addr, const void *buf, size_t len);

/*
 * Call FN(ARGS) on stopped thread T. DATA (LEN bytes, may be NULL) is
 * copied below its stack pointer first; its address replaces every
 * argument equal to INJ_DATA. With OTHERS_RUN, every other thread is let go
 * for the duration (a thread stopped while holding a lock the call needs
 * would otherwise deadlock it) and stays running afterwards; else they stay
 * stopped (INJ_DATA + K stands for the address of DATA + K). The thread's signals are held
 * meanwhile (none interrupts the call) and every register, its signal mask and its errno come back
 * as they were. RET gets the call's value. 0 or -errno (why). *T is the
 * thread's index, updated: the others are forgotten when they run.
 */
#define INJ_DATA UINT64_C(0xd47ad47ad47ad47a)
int inj_call(struct inj *p, size_t *t, uint64_t fn, const uint64_t *args, int nargs,
	     const void *data, size_t len, int others_run, uint64_t *ret);

/* Stopped thread I's signal mask (bit N-1 for signal N): read into OLD,
 * then SET if not NULL. 0 or -errno. */
int inj_sigmask(struct inj *p, size_t i, uint64_t *old, const uint64_t *set);
/* Has stopped thread I a SIGTRAP on its way (the stop's own, or pending)? */
int inj_trap_pending(struct inj *p, size_t i);
/* Its thread pointer (locates its static TLS in the target). */
uint64_t inj_thread_pointer(const struct inj *p, size_t i);
/* Its stack pointer and the mapping [*LO, *HI) that holds it (0, 0: none). */
void inj_thread_stack(const struct inj *p, size_t i, uint64_t *sp, uint64_t *lo, uint64_t *hi);
/* Its link register (arch_inj_link: 0 where there is none), and setting
 * it at the thread's resume. */
uint64_t inj_link(const struct inj *p, size_t i);
void inj_set_link(struct inj *p, size_t i, uint64_t v);

/* Where the last call's DATA was copied (still there until the thread
 * runs on: a call's results written into it can be read back). */
uint64_t inj_last_data(const struct inj *p);

/* Seize and stop one thread only. 0 or -errno (why). */
int inj_stop_thread(struct inj *p, pid_t tid);
/* A thread of PID to run calls on, chosen without stopping anything: one
 * waiting in a system call (/proc/PID/task/TID/syscall) if there is one,
 * none of AVOID. -1 if none. */
pid_t inj_choose_tid(pid_t pid, const pid_t *avoid, size_t navoid);

/* Which stopped thread to run calls on: one waiting in a system call if
 * there is one (it holds no lock of the C library's in user code), else
 * the first. */
size_t inj_pick_thread(struct inj *p);

/*
 * With every thread stopped: move each one that is inside a run of
 * single-instruction NOPs to its end, in its registers and in the saved
 * state of every signal frame on its stack (what executing them would have
 * done), so that such a run can become one instruction. MOVED counts them.
 */
int inj_skip_nop_runs(struct inj *p, size_t *moved);

/* Every stopped thread's instruction pointer and those saved in its signal
 * frames (*V, malloc'd, *N of them), each with where it lives, so that it
 * can be changed. */
struct inj_ipref {
	uint64_t ip;
	size_t thread;	/* index in p->t */
	uint64_t frame; /* 0: the thread's register; else its signal frame */
};
int inj_collect_iprefs(struct inj *p, struct inj_ipref **v, size_t *n);
/* Make R's instruction pointer IP (a register: at the thread's resume). */
int inj_set_ipref(struct inj *p, const struct inj_ipref *r, uint64_t ip);

/* The address of symbol NAME in the object mapped from a file whose path
 * ends with SUFFIX (e.g. "/libc.so.6") in PID: 0 if none. */
uint64_t inj_symbol(pid_t pid, const char *suffix, const char *name, char *path, size_t pathlen);

/* Was an object loaded under a name ending with SUFFIX (the loader's
 * list, not the mappings, which show the file)? 1, 0, or -errno. */
int inj_loaded_as(struct inj *p, const char *suffix);

#endif
