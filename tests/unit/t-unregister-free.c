/* t-unregister-free: after dynftrace_unregister_ops returns, no thread is
 * inside (or about to enter) the ops' callback, so the caller may free it at
 * once. Worker threads hammer traced functions; the main thread, thousands
 * of times, mallocs an ops and its private data, registers it (alone: the
 * direct path, or beside a long-lived ops: the list function), unregisters
 * it, poisons both and frees them. The callback reads and writes
 * ops->private, so a late callback reads poison (counted here) or freed
 * memory (reported by ASan in the asan configuration). */
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"
#include "insn.h"

#define NOINLINE __attribute__((noinline))
NOINLINE unsigned long uf_a(unsigned long x)
{
	return x * 3 + 1;
}
NOINLINE unsigned long uf_b(unsigned long x)
{
	return x * 5 + 2;
}
NOINLINE unsigned long uf_c(unsigned long x)
{
	return x * 7 + 3;
}

#define MAGIC  0x5ca1ab1e5ca1ab1eUL
#define POISON 0xdb

struct priv {
	unsigned long magic;
	unsigned long calls;
	unsigned long pad[6];
};

static unsigned long poisoned_seen, total_calls;

static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
	       struct dynftrace_regs *r)
{
	(void)ip;
	(void)pip;
	(void)r;
	struct priv *p = o->private;
	if (__atomic_load_n(&p->magic, __ATOMIC_RELAXED) != MAGIC)
		__atomic_fetch_add(&poisoned_seen, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&p->calls, 1, __ATOMIC_RELAXED);
}

static unsigned long other_calls;
static void other_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
		     struct dynftrace_regs *r)
{
	(void)ip;
	(void)pip;
	(void)o;
	(void)r;
	__atomic_fetch_add(&other_calls, 1, __ATOMIC_RELAXED);
}

static int stop;
static unsigned long bad;
static void *worker(void *arg)
{
	unsigned long x = (unsigned long)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		unsigned long (*volatile fa)(unsigned long) = uf_a;
		unsigned long (*volatile fb)(unsigned long) = uf_b;
		unsigned long (*volatile fc)(unsigned long) = uf_c;
		if (fa(x) != x * 3 + 1 || fb(x) != x * 5 + 2 || fc(x) != x * 7 + 3)
			__atomic_fetch_add(&bad, 1, __ATOMIC_RELAXED);
		x++;
	}
	return NULL;
}

int main(void)
{
	const int rounds = tap_scaled(2000), nworkers = 2;
	tap_plan(6);
	pthread_t t[2];
	for (long i = 0; i < nworkers; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);

	struct dynftrace_ops other = {.func = other_cb};
	dynftrace_set_filter(&other, "uf_c", 1);
	int errors = 0, with_calls = 0;
	for (int i = 0; i < rounds; i++) {
		/* 0: alone, all functions; 1: alone, filtered; 2, 3: beside OTHER */
		int mode = i % 4;
		if (mode == 2 && dynftrace_register_ops(&other) != 0)
			errors++;
		struct dynftrace_ops *ops = calloc(1, sizeof(*ops));
		struct priv *p = calloc(1, sizeof(*p));
		p->magic = MAGIC;
		ops->func = cb;
		ops->private = p;
		if (mode & 1) {
			if (dynftrace_set_filter(ops, "uf_[ab]", 1) != 0 ||
			    dynftrace_set_notrace(ops, "uf_b", 1) != 0)
				errors++;
		}
		if (dynftrace_register_ops(ops) != 0)
			errors++;
		/* Give the workers a moment inside the callback, bounded. */
		for (int spin = 0; spin < 100 && !__atomic_load_n(&p->calls, __ATOMIC_RELAXED);
		     spin++)
			sched_yield();
		if (dynftrace_unregister_ops(ops) != 0)
			errors++;
		unsigned long n = __atomic_load_n(&p->calls, __ATOMIC_RELAXED);
		with_calls += n > 0;
		total_calls += n;
		/* Release the runtime's filter memory, then poison and free. */
		if (mode & 1) {
			dynftrace_set_filter(ops, NULL, 1);
			dynftrace_set_notrace(ops, NULL, 1);
		}
		memset(p, POISON, sizeof(*p));
		memset(ops, POISON, sizeof(*ops));
		free(p);
		free(ops);
		if (mode == 3 && dynftrace_unregister_ops(&other) != 0)
			errors++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nworkers; i++)
		pthread_join(t[i], NULL);
	dynftrace_set_filter(&other, NULL, 1);

	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	diag("%d rounds, %lu callbacks on freed-after ops, %lu on the long-lived one, %lu traps, "
	     "%lu grace periods",
	     rounds, total_calls, other_calls, st.traps, st.grace_periods);
	ok(errors == 0, "every register/unregister/filter call succeeded (%d failed)", errors);
	ok(poisoned_seen == 0, "no callback saw poisoned private data (%lu)", poisoned_seen);
	ok(with_calls > 0, "%d of %d ops got callbacks before their unregister", with_calls,
	   rounds);
	ok(bad == 0, "traced functions returned the right values (%lu wrong)", bad);
	ok(!st.killed && st.syncs == TINSN_SYNCS * st.batches,
	   "not killed, %d syncs per batch (%lu, %lu)", TINSN_SYNCS, st.syncs, st.batches);
	ok(st.sites_enabled == 0, "every site is a NOP again");
	return tap_done();
}
