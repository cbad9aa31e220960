/* SPDX-License-Identifier: MIT */
/*
 * demo - live patching of a running, multi-threaded program.
 *
 * Two worker threads compute forever. The main thread turns tracing on and
 * off with the ops API while they run, changes the filter, and prints what
 * the callback saw and what it cost in batches and syncs. Build flags:
 * `dynftrace cflags`; link: -ldynftrace.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <dynftrace/dynftrace.h>

#define NOINLINE __attribute__((noinline))

static volatile long sink;
NOINLINE static long parse_token(long x)
{
	return x * 3 + 1;
}
NOINLINE static long hash_token(long x)
{
	return (x << 7) ^ (x >> 3);
}
NOINLINE static long lookup_table(long x)
{
	return hash_token(x) & 1023;
}
NOINLINE static long handle_request(long x)
{
	return lookup_table(parse_token(x)) + parse_token(x + 1);
}

static atomic_int stop;

static void *worker(void *arg)
{
	long i = (long)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		sink += handle_request(i++);
	return NULL;
}

/* The callback: count calls per function (the ops-private table). */
struct counts {
	const char *name[8];
	unsigned long ip[8];
	atomic_ulong n[8];
};

static void count_cb(unsigned long ip, unsigned long parent_ip, struct dynftrace_ops *ops,
		     struct dynftrace_regs *regs)
{
	struct counts *c = ops->private;
	(void)parent_ip;
	(void)regs;
	for (int i = 0; i < 8 && c->name[i]; i++)
		if (ip - c->ip[i] < 16) /* the site sits in the first bytes */
			atomic_fetch_add_explicit(&c->n[i], 1, memory_order_relaxed);
}

static void run_for_ms(int ms)
{
	struct timespec ts = {0, ms * 1000000L};
	nanosleep(&ts, NULL);
}

static void show(const char *title, struct counts *c)
{
	printf("%s\n", title);
	for (int i = 0; i < 8 && c->name[i]; i++) {
		printf("  %-16s %10lu calls\n", c->name[i], atomic_exchange(&c->n[i], 0));
	}
}

int main(void)
{
	static struct counts c = {
	    .name = {"handle_request", "parse_token", "lookup_table", "hash_token"},
	};
	c.ip[0] = (unsigned long)handle_request;
	c.ip[1] = (unsigned long)parse_token;
	c.ip[2] = (unsigned long)lookup_table;
	c.ip[3] = (unsigned long)hash_token;
	struct dynftrace_ops ops = {.func = count_cb, .private = &c};
	struct dynftrace_stats st;
	pthread_t t[2];
	int err;

	dynftrace_get_stats(&st);
	printf("dynftrace demo: %lu sites in %lu objects, all NOPs; starting 2 workers\n", st.sites,
	       st.objects);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i * 1000));
	run_for_ms(100);

	if ((err = dynftrace_register_ops(&ops))) {
		fprintf(stderr, "demo: register failed: %s\n", strerror(-err));
		return 1;
	}
	dynftrace_get_stats(&st);
	printf("tracing ON for all functions: %lu sites patched in %.3f ms, %lu syncs\n",
	       st.last_batch_sites, st.last_batch_ns / 1e6, st.syncs);
	run_for_ms(100);
	show("calls seen in 100 ms:", &c);

	dynftrace_set_filter(&ops, "*_token", 1);
	dynftrace_get_stats(&st);
	printf("filter '*_token' applied live (%lu sites changed)\n", st.last_batch_sites);
	run_for_ms(100);
	show("calls seen in 100 ms:", &c);

	dynftrace_unregister_ops(&ops);
	dynftrace_free_filter(&ops);
	for (int i = 0; i < 4; i++) /* forget calls made before unregister returned */
		atomic_store(&c.n[i], 0);
	run_for_ms(50);
	show("after unregister (all zero: sites are NOPs again):", &c);
	dynftrace_get_stats(&st);
	printf("%lu batches, %lu syncs (3 per batch), %lu breakpoint hits emulated\n", st.batches,
	       st.syncs, st.traps);

	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
