/* SPDX-License-Identifier: MIT */
/*
 * dlt-loop.c - a runtime message that repeats: an ops whose filter selects
 * only functions of a library (dl_*) loses its whole selection at every
 * dlclose of that library, and gets it back at the next dlopen (the glob
 * log is replayed). Run by tests/sh/log-repeat.sh, which counts the
 * runtime's lines on stderr.
 *
 *   dlt-loop PATH CYCLES
 *
 * Prints "cycles N traced T": T calls of dl_one seen by the ops, one per
 * cycle when the filter came back each time.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <dynftrace/dynftrace.h>

typedef unsigned long (*fn_t)(unsigned long);
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
static struct dynftrace_ops ops = {.func = cb};

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: dlt-loop PATH CYCLES\n");
		return 2;
	}
	int cycles = atoi(argv[2]);
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "dlt-loop: %s\n", dlerror());
		return 1;
	}
	int err = dynftrace_set_filter(&ops, "dl_one", 1);
	if (!err)
		err = dynftrace_register_ops(&ops);
	if (err) {
		fprintf(stderr, "dlt-loop: filter dl_one: %d\n", err);
		return 1;
	}
	int n = 0;
	for (; n < cycles; n++) {
		dlclose(h); /* the ops' whole selection goes */
		h = dlopen(argv[1], RTLD_NOW);
		if (!h) {
			fprintf(stderr, "dlt-loop: %s\n", dlerror());
			return 1;
		}
		fn_t f = (fn_t)dlsym(h, "dl_one");
		if (f)
			f(1);
	}
	printf("cycles %d traced %lu\n", n, __atomic_load_n(&hits, __ATOMIC_RELAXED));
	dynftrace_unregister_ops(&ops);
	dlclose(h);
	return 0;
}
