/* t-blocked-signals: threads that block every signal keep running traced
 * code while thousands of batches patch it (the kernel would kill a thread
 * that blocks a synchronous SIGTRAP; the runtime keeps SIGTRAP really
 * deliverable and virtually blocked). Blocked with pthread_sigmask, with
 * sigprocmask, inherited by a thread they create, given to a new thread with
 * pthread_attr_setsigmask_np, and in a process that
 * starts with SIGTRAP really blocked (exec'd with it blocked by a raw
 * syscall the runtime cannot see). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"
#include "insn.h"

#define NOINLINE __attribute__((noinline))
NOINLINE unsigned long hot_a(unsigned long x)
{
	return x * 3 + 1;
}
NOINLINE unsigned long hot_b(unsigned long x)
{
	return x * 5 + 2;
}
NOINLINE unsigned long hot_c(unsigned long x)
{
	return x * 7 + 3;
}

static unsigned long hits;
static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
	       struct dynftrace_regs *r)
{
	(void)ip;
	(void)pip;
	(void)o;
	(void)r;
	__atomic_fetch_add(&hits, 1, __ATOMIC_RELAXED);
}

static int stop;
static unsigned long bad;

/* Calls the hot functions until told to stop; returns the number of calls. */
static unsigned long hammer(void)
{
	unsigned long n = 0;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		unsigned long x = n;
		/* through volatile pointers: no constant folding of the checks */
		unsigned long (*volatile fa)(unsigned long) = hot_a;
		unsigned long (*volatile fb)(unsigned long) = hot_b;
		unsigned long (*volatile fc)(unsigned long) = hot_c;
		if (fa(x) != x * 3 + 1 || fb(x) != x * 5 + 2 || fc(x) != x * 7 + 3)
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
		n += 3;
	}
	return n;
}

static int mask_blocks_trap(void)
{
	sigset_t cur;
	pthread_sigmask(SIG_SETMASK, NULL, &cur);
	return sigismember(&cur, SIGTRAP) == 1 && sigismember(&cur, SIGINT) == 1;
}

struct worker {
	int how;     /* 0: pthread_sigmask, 1: sigprocmask, 2: creates a thread */
	int mask_ok; /* the program sees SIGTRAP blocked */
	unsigned long calls;
};

static void *worker(void *arg);

static void *child(void *arg)
{
	struct worker *w = arg;
	w->mask_ok = mask_blocks_trap();
	w->calls = hammer();
	return NULL;
}

static void *worker(void *arg)
{
	struct worker *w = arg;
	sigset_t all;
	sigfillset(&all);
	if (w->how == 0)
		pthread_sigmask(SIG_BLOCK, &all, NULL);
	else
		sigprocmask(SIG_SETMASK, &all, NULL);
	w->mask_ok = mask_blocks_trap();
	if (w->how == 2) {
		/* A thread created by a thread blocking everything. */
		struct worker *c = w + 1;
		pthread_t t;
		pthread_create(&t, NULL, child, c);
		w->calls = hammer();
		pthread_join(t, NULL);
	} else {
		w->calls = hammer();
	}
	return NULL;
}

/* Patches hot_* ROUNDS times (2 batches each); returns traps seen. */
static unsigned long patch_rounds(int rounds)
{
	struct dynftrace_ops ops = {.func = cb};
	struct dynftrace_stats a, b;
	dynftrace_get_stats(&a);
	dynftrace_set_filter(&ops, "hot_*", 1);
	for (int i = 0; i < rounds; i++) {
		/* alternate the selection so batches differ in size */
		if (i % 3 == 2)
			dynftrace_set_filter(&ops, "hot_[ab]", 1);
		dynftrace_register_ops(&ops);
		if (i % 3 == 2)
			dynftrace_set_filter(&ops, "hot_*", 1);
		dynftrace_unregister_ops(&ops);
	}
	dynftrace_set_filter(&ops, NULL, 1);
	dynftrace_get_stats(&b);
	return b.traps - a.traps;
}

/* The exec'd half: started with SIGTRAP really blocked. */
static int started_blocked(void)
{
	tap_plan(4);
	ok(mask_blocks_trap(), "started with SIGTRAP blocked: the program still sees it blocked");
	sigset_t raw;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &raw, 8);
	ok(!sigismember(&raw, SIGTRAP), "really unblocked by the runtime");
	pthread_t t;
	struct worker w = {.how = -1};
	pthread_create(&t, NULL, child, &w);
	unsigned long traps = patch_rounds(tap_scaled(1000));
	/* and this thread too, between batches */
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	diag("%lu calls, %lu traps emulated", w.calls, traps);
	ok(w.calls > 0 && bad == 0 && w.mask_ok,
	   "a thread of it ran %lu calls through 2000 batches, sees SIGTRAP blocked", w.calls);
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	ok(!st.killed, "not killed");
	return tap_done();
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--started-blocked"))
		return started_blocked();

	tap_plan(9);
	struct worker w[5] = {{.how = 0}, {.how = 1}, {.how = 2}, {.how = 2}, {.how = 3}};
	pthread_t t[4];
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, worker, &w[i]);
	/* A thread born with every signal blocked, SIGTRAP included. */
	pthread_attr_t attr;
	sigset_t all;
	sigfillset(&all);
	pthread_attr_init(&attr);
	pthread_attr_setsigmask_np(&attr, &all);
	pthread_create(&t[3], &attr, child, &w[4]);
	pthread_attr_destroy(&attr);
	const int rounds = tap_scaled(3000);
	unsigned long traps = patch_rounds(rounds);
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);

	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	diag("%d rounds: %lu batches; calls %lu (pthread_sigmask) %lu (sigprocmask) %lu %lu "
	     "(creator, created) %lu (attr); %lu callbacks; %lu traps emulated",
	     rounds, st.batches, w[0].calls, w[1].calls, w[2].calls, w[3].calls, w[4].calls, hits,
	     traps);
	ok(w[0].calls > 0 && w[0].mask_ok,
	   "pthread_sigmask(SIG_BLOCK, all): alive, sees SIGTRAP blocked");
	ok(w[1].calls > 0 && w[1].mask_ok,
	   "sigprocmask(SIG_SETMASK, all): alive, sees SIGTRAP blocked");
	ok(w[2].calls > 0 && w[2].mask_ok, "a thread blocking all that creates another: alive");
	ok(w[3].calls > 0, "the thread it created: alive");
	ok(w[3].mask_ok, "the thread it created inherits the (virtual) SIGTRAP block");
	ok(w[4].calls > 0 && w[4].mask_ok,
	   "a thread created with pthread_attr_setsigmask_np(all): alive, sees SIGTRAP blocked");
	ok(bad == 0, "every traced call returned the right value (%lu wrong)", bad);
	ok(!st.killed && st.batches >= 2UL * rounds && st.syncs == TINSN_SYNCS * st.batches,
	   "%lu batches, %lu syncs, not killed", st.batches, st.syncs);
	if (traps == 0)
		diag("no breakpoint was hit this time (timing): emulation not exercised");

	/* Re-exec with SIGTRAP really blocked (raw syscall: the runtime's
	 * wrappers cannot see it), as a process inheriting that mask. Not
	 * under qemu-user (run.sh says so): its fork() of a threaded process
	 * aborts (qemu 7.2, qemu_plugin_vcpu_init_hook), and without
	 * binfmt_misc the exec of /proc/self/exe cannot run a guest binary. */
	if (getenv("DFT_TEST_EMULATED")) {
		skip("re-exec with SIGTRAP blocked: fork/exec under qemu-user");
		return tap_done();
	}
	fflush(stdout);
	int pfd[2];
	if (pipe(pfd) != 0)
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, SIGTRAP);
		sigaddset(&s, SIGINT);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &s, NULL, 8);
		execl("/proc/self/exe", argv[0], "--started-blocked", (char *)NULL);
		_exit(127);
	}
	/* Its TAP lines become comments of ours. */
	close(pfd[1]);
	FILE *in = fdopen(pfd[0], "r");
	char line[256];
	while (in && fgets(line, sizeof(line), in))
		printf("#   %s", line);
	if (in)
		fclose(in);
	int status = 0;
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "the process started with SIGTRAP blocked passed its checks (status %#x)", status);
	return tap_done();
}
