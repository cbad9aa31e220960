/* t-foreign-trap: SIGTRAPs that are not the runtime's reach the program as
 * they would without dynftrace: raise(), kill() and an int3 instruction
 * reach the program's handler (installed before the runtime's constructor
 * ran, from .preinit_array, and after it), with the right siginfo, program
 * counter and signal mask, also while another thread patches sites; SIG_IGN
 * ignores raise(); SA_RESETHAND resets; a thread blocking SIGTRAP gets
 * raise()'s signal pending (sigpending) and delivered when it unblocks.
 * (That SIG_DFL + int3 still kills is tests/sh/foreign-trap.sh.) Runs under
 * TSan too, whose sigaction interceptor sits in front of the runtime's. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"
#include "insn.h"

#define NOINLINE __attribute__((noinline))
/* The architecture's breakpoint: its SIGTRAP's si_code, and where the
 * handler finds the program counter. aarch64 leaves pc on the brk: the
 * handler steps over it, as a debugger does. */
#if defined(__aarch64__)
#define TRAP_CODE    TRAP_BRKPT
#define UC_PC(uc)    ((uc)->uc_mcontext.pc)
#define TRAP_ASM     "brk #7\n1:\tadr %0, 1b"
#define TRAP_ADVANCE 4
#elif defined(__riscv)
/* riscv leaves pc on the ebreak too (uncompressed here: 4 bytes). */
#define TRAP_CODE    TRAP_BRKPT
#define UC_PC(uc)    ((uc)->uc_mcontext.__gregs[REG_PC])
#define TRAP_ASM     ".option push\n\t.option norvc\n\tebreak\n\t.option pop\n1:\tlla %0, 1b"
#define TRAP_ADVANCE 4
#else
#define TRAP_CODE    SI_KERNEL
#define UC_PC(uc)    ((uc)->uc_mcontext.gregs[REG_RIP])
#define TRAP_ASM     "int3\n1:\tlea 1b(%%rip), %0"
#define TRAP_ADVANCE 0
#endif
static int sink;
NOINLINE int work_a(int x)
{
	__atomic_fetch_add(&sink, x, __ATOMIC_RELAXED);
	return x + 1;
}
NOINLINE int work_b(int x)
{
	__atomic_fetch_add(&sink, x, __ATOMIC_RELAXED);
	return x + 2;
}

/* What the handlers saw: counts (atomic: kill() may be taken by any thread)
 * and, per thread, the last siginfo. Volatile: written by signal handlers. */
static volatile unsigned long h_early_n, h_late_n;
/* Read atomically: handlers of other threads count too. */
static unsigned long late_n(void)
{
	return __atomic_load_n(&h_late_n, __ATOMIC_RELAXED);
}
static __thread volatile int last_code, last_pid_ok, last_mask_ok;
static __thread volatile unsigned long last_rip;

static void note(siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	sigset_t cur;
	last_code = si->si_code;
	last_pid_ok = si->si_code == TRAP_CODE || si->si_pid == getpid();
	if (si->si_code == TRAP_CODE)
		UC_PC(uc) += TRAP_ADVANCE;
	last_rip = (unsigned long)UC_PC(uc);
	/* As the kernel would: SIGTRAP (no SA_NODEFER) and sa_mask blocked. */
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	last_mask_ok = sigismember(&cur, SIGTRAP) == 1 && sigismember(&cur, SIGUSR2) == 1;
}

static void h_early(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	__atomic_fetch_add(&h_early_n, 1, __ATOMIC_RELAXED);
	note(si, uc);
}

static void h_late(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	__atomic_fetch_add(&h_late_n, 1, __ATOMIC_RELAXED);
	note(si, uc);
	work_b(2); /* traced code in the handler: may meet a breakpoint too */
}

/* Before every constructor, the runtime's included: .preinit_array. */
static int early_rc = -1;
static unsigned long early_sites = ~0UL;
static void install_early(void)
{
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	early_sites = st.sites; /* 0: the runtime has not looked yet */
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h_early;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	early_rc = sigaction(SIGTRAP, &sa, NULL);
}
__attribute__((section(".preinit_array"), used)) static void (*const preinit)(void) = install_early;

/* Executes int3; returns the address of the instruction after it. */
static NOINLINE unsigned long do_int3(void)
{
	unsigned long after;
	__asm__ __volatile__(TRAP_ASM : "=r"(after)::"memory");
	return after;
}

/* ---- patching in another thread ---------------------------------------- */

static volatile unsigned long cb_hits;
static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
	       struct dynftrace_regs *r)
{
	(void)ip;
	(void)pip;
	(void)o;
	(void)r;
	__atomic_fetch_add(&cb_hits, 1, __ATOMIC_RELAXED);
}

static int stop;
static unsigned long patch_rounds;
static void *patcher(void *arg)
{
	struct dynftrace_ops ops = {.func = cb};
	(void)arg;
	dynftrace_set_filter(&ops, "work_*", 1);
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		dynftrace_register_ops(&ops);
		dynftrace_unregister_ops(&ops);
		__atomic_fetch_add(&patch_rounds, 1, __ATOMIC_RELAXED);
	}
	dynftrace_set_filter(&ops, NULL, 1); /* release it: OPS goes away */
	return NULL;
}

static void *caller(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
		work_a(work_b(1));
	return NULL;
}

/* ---- a thread that blocks SIGTRAP --------------------------------------- */

static int blk_pending, blk_before, blk_after, blk_code;
static void *blocker(void *arg)
{
	sigset_t s, pend;
	(void)arg;
	sigemptyset(&s);
	sigaddset(&s, SIGTRAP);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	unsigned long before = late_n();
	raise(SIGTRAP);
	blk_before = late_n() == before; /* not delivered while blocked */
	sigemptyset(&pend);
	sigpending(&pend);
	blk_pending = sigismember(&pend, SIGTRAP) == 1;
	pthread_sigmask(SIG_UNBLOCK, &s, NULL); /* delivered before this returns */
	blk_after = late_n() == before + 1;
	blk_code = last_code;
	sigemptyset(&pend);
	sigpending(&pend);
	blk_pending = blk_pending && sigismember(&pend, SIGTRAP) == 0;
	return NULL;
}

int main(void)
{
	struct sigaction sa, old;
	tap_plan(21);

	/* 1. The handler installed before the runtime's constructor. */
	ok(early_rc == 0 && early_sites == 0,
	   "sigaction(SIGTRAP) from .preinit_array, before the runtime's init (%lu sites "
	   "known then), returned %d",
	   early_sites, early_rc);
	memset(&old, 0, sizeof(old));
	sigaction(SIGTRAP, NULL, &old);
	ok(old.sa_sigaction == h_early && (old.sa_flags & SA_SIGINFO) &&
	       sigismember(&old.sa_mask, SIGUSR2) == 1,
	   "sigaction's oldact is the program's early handler, flags and mask");
	raise(SIGTRAP);
	ok(h_early_n == 1 && last_code == SI_TKILL && last_pid_ok && last_mask_ok,
	   "raise reaches the early handler (code %d, mask ok %d)", last_code, last_mask_ok);
	kill(getpid(), SIGTRAP);
	ok(h_early_n == 2 && last_code == SI_USER && last_pid_ok,
	   "kill reaches the early handler (code %d)", last_code);
	unsigned long after = do_int3();
	ok(h_early_n == 3 && last_code == TRAP_CODE && last_rip == after && last_mask_ok,
	   "int3 reaches the early handler (code %d, pc %#lx, after int3 %#lx)", last_code,
	   last_rip, after);

	/* 2. A handler installed now. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = h_late;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	memset(&old, 0, sizeof(old));
	ok(sigaction(SIGTRAP, &sa, &old) == 0 && old.sa_sigaction == h_early,
	   "installing a new handler returns the early one as oldact");
	raise(SIGTRAP);
	kill(getpid(), SIGTRAP);
	after = do_int3();
	ok(late_n() == 3 && h_early_n == 3 && last_code == TRAP_CODE && last_rip == after,
	   "raise, kill and int3 reach the new handler (%lu)", late_n());

	/* 3. The same while another thread patches sites that a third calls. */
	pthread_t tp, tc;
	pthread_create(&tp, NULL, patcher, NULL);
	pthread_create(&tc, NULL, caller, NULL);
	unsigned long n0 = late_n(), bad_pc = 0, bad_code = 0;
	const int rounds = 3000;
	for (int i = 0; i < rounds; i++) {
		raise(SIGTRAP);
		bad_code += last_code != SI_TKILL;
		kill(getpid(), SIGTRAP);
		/* kill() is process-directed: another thread may take it */
		after = do_int3();
		bad_pc += last_rip != after;
		bad_code += last_code != TRAP_CODE;
		work_a(i);
	}
	/* Let the patcher get going, in case main was quicker than it. */
	while (__atomic_load_n(&patch_rounds, __ATOMIC_RELAXED) < 200)
		sched_yield();
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	diag("%lu register/unregister rounds, %lu callbacks, %lu traps emulated meanwhile",
	     patch_rounds, cb_hits, st.traps);
	ok(late_n() - n0 == 3UL * rounds, "while patching: %lu of %d signals reached the handler",
	   late_n() - n0, 3 * rounds);
	ok(bad_pc == 0 && bad_code == 0, "right pc and si_code every time (%lu, %lu wrong)", bad_pc,
	   bad_code);
	ok(!st.killed && st.syncs == TINSN_SYNCS * st.batches, "tracing unharmed (%s)",
	   st.killed ? st.kill_reason : "not killed");

	/* 4. A thread that blocks SIGTRAP. */
	pthread_t tb;
	pthread_create(&tb, NULL, blocker, NULL);
	pthread_join(tb, NULL);
	ok(blk_before, "raise() in a thread blocking SIGTRAP: the handler does not run");
	ok(blk_pending, "sigpending shows it, and not after delivery");
	ok(blk_after && blk_code == SI_TKILL, "unblocking delivers it, with its siginfo (code %d)",
	   blk_code);

	/* 5. SIG_IGN, then SIG_DFL via signal(), SA_RESETHAND. */
	sighandler_t prev = signal(SIGTRAP, SIG_IGN);
	ok((void *)prev == (void *)h_late, "signal() returns the previous handler");
	unsigned long n1 = late_n();
	raise(SIGTRAP);
	kill(getpid(), SIGTRAP);
	ok(late_n() == n1, "SIG_IGN: raise and kill are ignored");
	sigaction(SIGTRAP, NULL, &old);
	ok(old.sa_handler == SIG_IGN, "sigaction reports SIG_IGN");

	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	sigaction(SIGTRAP, &sa, NULL);
	raise(SIGTRAP);
	ok(late_n() == n1 + 1, "SA_RESETHAND handler ran once");
	sigaction(SIGTRAP, NULL, &old);
	ok(old.sa_handler == SIG_DFL, "then the disposition is SIG_DFL");

	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGTRAP, &sa, NULL);
	raise(SIGTRAP);
	ok(late_n() == n1 + 2 && !last_mask_ok && last_code == SI_TKILL,
	   "SA_NODEFER: SIGTRAP not blocked in the handler");

	/* 6. The mask wrappers: SIGTRAP blocked as far as the program can tell. */
	sigset_t s, cur;
	sigemptyset(&s);
	sigaddset(&s, SIGTRAP);
	sigprocmask(SIG_BLOCK, &s, NULL);
	sigprocmask(SIG_SETMASK, NULL, &cur);
	ok(sigismember(&cur, SIGTRAP) == 1, "sigprocmask reports SIGTRAP blocked");
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	sigprocmask(SIG_SETMASK, NULL, &cur);
	ok(sigismember(&cur, SIGTRAP) == 0, "and unblocked");
	return tap_done();
}
