/* t-fork: fork() while other threads patch and run traced code. Each child
 * (single-threaded, with whatever the parent had registered at the fork)
 * registers its own ops, traces exactly, patches while a thread of its own
 * runs the code, and exits; the parent keeps patching throughout.
 * config: !tsan -- TSan does not support fork() in multi-threaded processes well. */
// cross-skip: aarch64: fork() of a threaded process aborts qemu-user 7.2 (an assertion)
// cross-skip: riscv64: fork() of a threaded process aborts qemu-user 7.2 (an assertion)
// (qemu_plugin_vcpu_init_hook, before any check of ours runs)
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"
#include "insn.h"

#define NOINLINE __attribute__((noinline))
NOINLINE unsigned long fk_a(unsigned long x)
{
	return x * 3 + 1;
}
NOINLINE unsigned long fk_b(unsigned long x)
{
	return x * 5 + 2;
}

static unsigned long parent_hits, child_hits;
static void parent_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
		      struct dynftrace_regs *r)
{
	(void)ip;
	(void)pip;
	(void)o;
	(void)r;
	__atomic_fetch_add(&parent_hits, 1, __ATOMIC_RELAXED);
}
static void child_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
		     struct dynftrace_regs *r)
{
	(void)ip;
	(void)pip;
	(void)o;
	(void)r;
	__atomic_fetch_add(&child_hits, 1, __ATOMIC_RELAXED);
}

static int stop;
static unsigned long bad, rounds;

static void *caller(void *arg)
{
	unsigned long x = 0;
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		unsigned long (*volatile fa)(unsigned long) = fk_a;
		unsigned long (*volatile fb)(unsigned long) = fk_b;
		if (fa(x) != x * 3 + 1 || fb(x) != x * 5 + 2)
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
		x++;
	}
	return NULL;
}

static struct dynftrace_ops parent_ops = {.func = parent_cb};

static void *patcher(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		dynftrace_register_ops(&parent_ops);
		dynftrace_set_filter(&parent_ops, (rounds & 1) ? "fk_a" : "fk_*", 1);
		dynftrace_unregister_ops(&parent_ops);
		__atomic_fetch_add(&rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* The child: exit status 0 when every check passed, else the failed step. */
static int child(void)
{
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	if (st.killed)
		return 10;
	static struct dynftrace_ops ops = {.func = child_cb};
	if (dynftrace_set_filter(&ops, "fk_b", 1) || dynftrace_register_ops(&ops))
		return 11;
	__atomic_store_n(&child_hits, 0, __ATOMIC_RELAXED);
	/* through volatile pointers: the compiler would drop calls of these
	 * pure functions whose results are unused */
	unsigned long (*volatile fa)(unsigned long) = fk_a;
	unsigned long (*volatile fb)(unsigned long) = fk_b;
	fa(1);
	fb(1);
	fb(2);
	if (__atomic_load_n(&child_hits, __ATOMIC_RELAXED) != 2)
		return 12;
	/* Patch while a thread of the child runs the code. */
	pthread_t t;
	__atomic_store_n(&stop, 0, __ATOMIC_RELEASE);
	bad = 0;
	if (pthread_create(&t, NULL, caller, NULL))
		return 13;
	/* at least 5 cycles when shortened (a system-emulated guest) */
	int cycles = tap_scaled(50) < 5 ? 5 : tap_scaled(50);
	for (int i = 0; i < cycles; i++) {
		if (dynftrace_unregister_ops(&ops) || dynftrace_register_ops(&ops))
			return 14;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	if (bad)
		return 15;
	if (dynftrace_unregister_ops(&ops))
		return 16;
	dynftrace_get_stats(&st);
	if (st.killed || st.syncs != TINSN_SYNCS * st.batches)
		return 17;
	return 0;
}

int main(void)
{
	/* at least 4 children when shortened (a system-emulated guest) */
	const int nforks = tap_scaled(40) < 4 ? 4 : tap_scaled(40);
	tap_plan(4);
	pthread_t tp, tc;
	pthread_create(&tp, NULL, patcher, NULL);
	pthread_create(&tc, NULL, caller, NULL);

	int good = 0, status_bad = 0;
	unsigned long r0 = 0;
	for (int i = 0; i < nforks; i++) {
		/* let the patcher get a few rounds in between */
		r0 = __atomic_load_n(&rounds, __ATOMIC_RELAXED);
		while (__atomic_load_n(&rounds, __ATOMIC_RELAXED) < r0 + 2)
			sched_yield();
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			alarm(30); /* a hung child must not hang the test */
			_exit(child());
		}
		if (pid < 0) {
			status_bad++;
			continue;
		}
		int status;
		waitpid(pid, &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			good++;
		} else {
			if (status_bad++ < 5)
				diag("child %d: %s %d", i, WIFEXITED(status) ? "exit" : "signal",
				     WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		}
	}
	unsigned long before = __atomic_load_n(&rounds, __ATOMIC_RELAXED);
	while (__atomic_load_n(&rounds, __ATOMIC_RELAXED) < before + 20)
		sched_yield();
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(tp, NULL);
	pthread_join(tc, NULL);
	dynftrace_unregister_ops(&parent_ops); /* in case */
	dynftrace_set_filter(&parent_ops, NULL, 1);

	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	diag("%lu patch rounds in the parent, %lu parent callbacks, %lu traps", rounds, parent_hits,
	     st.traps);
	ok(good == nforks, "%d of %d children traced and patched correctly", good, nforks);
	ok(bad == 0, "the parent's traced calls returned the right values (%lu wrong)", bad);
	ok(!st.killed && st.syncs == TINSN_SYNCS * st.batches,
	   "parent not killed, %d syncs per batch", TINSN_SYNCS);
	ok(st.sites_enabled == 0, "parent: every site a NOP again");
	return tap_done();
}
