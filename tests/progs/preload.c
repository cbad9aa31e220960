/* SPDX-License-Identifier: MIT */
/*
 * preload.c - a traced program NOT linked with the runtime, for
 * LD_PRELOAD=libdynftrace.so (tests/sh/dlopen.sh). Prints its result and the
 * bytes at its function's entry site: five 1-byte NOPs as gcc left them
 * without the runtime, the canonical NOP5 with it. With a library argument,
 * also dlopens it and calls dl_one.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

__attribute__((noinline)) int pf(int x)
{
	return x + 1;
}

static void *thr(void *arg)
{
	int (*volatile f)(int) = pf;
	return (void *)(long)f(1);
}

int main(int argc, char **argv)
{
	int (*volatile f)(int) = pf;
	const unsigned char *p = (const unsigned char *)pf;
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4; /* endbr64 */
	pthread_t t;
	void *r;
	pthread_create(&t, NULL, thr, NULL);
	pthread_join(t, &r);
	printf("result %d %ld\nentry %02x %02x %02x %02x %02x\n", f(41), (long)r, p[0], p[1], p[2],
	       p[3], p[4]);
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW);
		unsigned long (*g)(unsigned long) =
		    h ? (unsigned long (*)(unsigned long))dlsym(h, "dl_one") : NULL;
		printf("dl_one %lu\n", g ? g(2) : 0UL);
		if (h)
			dlclose(h);
	}
	return 0;
}
