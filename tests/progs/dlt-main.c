/* SPDX-License-Identifier: MIT */
/*
 * dlt-main.c - dlopen/dlclose of a traced library while ops are registered
 * (tests/sh/dlopen.sh). Linked with the runtime; LIB is the library's file
 * name, found through this program's run path the first time (unless
 * "by-path" is given) and by full path (DIR/LIB) afterwards.
 *
 *   dlt-main DIR LIB [by-path]
 *
 * Ops A selects "*_one" (p_one now, dl_one once loaded: the glob log is
 * replayed on new objects); ops B selects everything but "*_two". While both
 * are registered the library is opened: its sites must be NOPs or calls in
 * the architecture's forms (../unit/insn.h), and its functions traced per
 * the filters; a filter added while it is loaded holds after dlclose +
 * dlopen; then 100 more open/close cycles run while a thread calls traced
 * code and another re-registers an ops.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <dynftrace/dynftrace.h>
#include "../unit/tap.h"
#include "../unit/insn.h"

#define NOINLINE __attribute__((noinline))
NOINLINE unsigned long p_one(unsigned long x)
{
	return x + 1;
}
NOINLINE unsigned long p_two(unsigned long x)
{
	return x + 2;
}

typedef unsigned long (*fn_t)(unsigned long);
/* Per thread: the checks count the main thread's calls only. */
static __thread unsigned long hits[3];
static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
	       struct dynftrace_regs *r)
{
	(void)ip;
	(void)pip;
	(void)r;
	hits[(long)o->private]++;
}
static struct dynftrace_ops A = {.func = cb, .private = (void *)0};
static struct dynftrace_ops B = {.func = cb, .private = (void *)1};
static struct dynftrace_ops C = {.func = cb, .private = (void *)2};

struct lib_sites {
	const char *lib;
	int n, calls, nops, bad;
};
/* The site's bytes in this architecture's forms (../unit/insn.h): a call
 * when enabled (x86-64 call rel32, aarch64 BL, riscv64 jal/jalr t0), else
 * the runtime's NOP, after the marker the runtime writes before aarch64
 * and riscv64 sites (mov x9, x30; auipc t0). */
static int count_lib(unsigned long ip, const char *fn, const char *obj, int en, int ref, void *data)
{
	struct lib_sites *ls = data;
	(void)fn;
	(void)ref;
	if (!obj || !strstr(obj, ls->lib))
		return 0;
	ls->n++;
	const void *p = (const void *)ip;
	int call = 0;
	if (en ? !tinsn_branch(p, &call) || !call : !tinsn_is_nop(p))
		ls->bad++;
	else if (!tinsn_site_marked(p))
		ls->bad++;
	else if (en)
		ls->calls++;
	else
		ls->nops++;
	return 0;
}

/* Call dl_one/two/three once each; store what A and B saw. */
static void call_lib(void *h, unsigned long *a, unsigned long *b)
{
	const char *names[3] = {"dl_one", "dl_two", "dl_three"};
	unsigned long a0 = hits[0], b0 = hits[1];
	for (int i = 0; i < 3; i++) {
		fn_t f = (fn_t)dlsym(h, names[i]);
		if (f)
			f(2);
	}
	__asm__ __volatile__("" ::: "memory");
	*a = hits[0] - a0;
	*b = hits[1] - b0;
}

static int stop;
static unsigned long bad_result;
static void *caller(void *arg)
{
	(void)arg;
	for (unsigned long x = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); x++) {
		fn_t f1 = p_one, f2 = p_two;
		fn_t volatile v1 = f1, v2 = f2;
		if (v1(x) != x + 1 || v2(x) != x + 2)
			__atomic_fetch_add(&bad_result, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}
static unsigned long toggles;
static void *toggler(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		dynftrace_register_ops(&C);
		dynftrace_unregister_ops(&C);
		toggles++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: dlt-main DIR LIB [by-path]\n");
		return 2;
	}
	int by_path = argc == 4;
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", argv[1], argv[2]);
	struct lib_sites ls = {argv[2], 0, 0};
	unsigned long a, b;
	tap_plan(13);

	ok(dynftrace_set_filter(&A, "*_one", 1) == 0 && dynftrace_register_ops(&A) == 0,
	   "ops A (\"*_one\") registered");
	ok(dynftrace_set_notrace(&B, "*_two", 1) == 0 && dynftrace_register_ops(&B) == 0,
	   "ops B (all but \"*_two\") registered");

	/* By name, through our run path; by path under ASan, whose dlopen
	 * interceptor makes the run path its own. */
	void *h = dlopen(by_path ? path : argv[2], RTLD_NOW);
	ok(h != NULL, "dlopen(\"%s\") after register: %s", by_path ? path : argv[2],
	   h ? "ok" : dlerror());
	if (!h)
		return tap_done();
	dynftrace_for_each_site(count_lib, &ls);
	/* B wants every function but dl_two: calls and NOPs both. */
	ok(ls.n >= 3 && ls.bad == 0 && ls.calls >= 2 && ls.nops >= 1,
	   "its %d sites are known: %d calls, %d NOPs (%d neither)", ls.n, ls.calls, ls.nops,
	   ls.bad);
	call_lib(h, &a, &b);
	ok(a == 1 && b == 2, "traced per the filters: A saw %lu (want 1: dl_one), B %lu (want 2)",
	   a, b);

	ok(dynftrace_set_filter(&A, "dl_t*", 0) == 0, "A adds \"dl_t*\" while it is loaded");
	call_lib(h, &a, &b);
	ok(a == 3, "A now sees all three (%lu)", a);
	ok(dlclose(h) == 0, "dlclose");
	ls.n = ls.calls = ls.nops = ls.bad = 0;
	dynftrace_for_each_site(count_lib, &ls);
	ok(ls.n == 0, "its sites left the table (%d left)", ls.n);

	h = dlopen(path, RTLD_NOW);
	ok(h != NULL, "dlopen again by path");
	if (!h)
		return tap_done();
	call_lib(h, &a, &b);
	ok(a == 3 && b == 2, "filters replayed on the new instance: A %lu (want 3), B %lu (want 2)",
	   a, b);
	dlclose(h);

	/* Open/close cycles while other threads run traced code and patch. */
	pthread_t t1, t2;
	pthread_create(&t1, NULL, caller, NULL);
	pthread_create(&t2, NULL, toggler, NULL);
	int cyc_bad = 0;
	for (int i = 0; i < 100; i++) {
		h = dlopen(path, RTLD_NOW);
		if (!h) {
			cyc_bad++;
			continue;
		}
		call_lib(h, &a, &b);
		if ((a != 3 || b != 2) && cyc_bad++ < 3)
			diag("cycle %d: A saw %lu, B %lu", i, a, b);
		dlclose(h);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	ok(cyc_bad == 0 && bad_result == 0,
	   "100 open/close cycles beside a caller and %lu (un)registrations: %d wrong", toggles,
	   cyc_bad);

	dynftrace_unregister_ops(&A);
	dynftrace_unregister_ops(&B);
	struct dynftrace_stats st;
	dynftrace_get_stats(&st);
	/* TINSN_SYNCS: 3 on x86-64 (the breakpoint protocol), 1 on aarch64 and
	 * riscv64 (single aligned words: one membarrier). */
	ok(!st.killed && st.sites_enabled == 0 && st.syncs == TINSN_SYNCS * st.batches,
	   "not killed (%s), all NOPs, %d syncs per batch (%lu syncs, %lu batches)",
	   st.killed ? st.kill_reason : "-", TINSN_SYNCS, st.syncs, st.batches);
	return tap_done();
}
