/* SPDX-License-Identifier: MIT */
/*
 * preload.c - a traced program NOT linked with the runtime, for
 * LD_PRELOAD=libdynftrace.so (tests/sh/dlopen.sh). Prints its result and the
 * bytes at its function's entry: the NOPs the compiler left without the
 * runtime, the runtime's forms with it (x86-64: the 5-byte site; aarch64
 * and riscv64: the 8 bytes of marker and site). With a library argument,
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
#if defined(__x86_64__)
	enum { ENTRY = 5 };
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
		p += 4; /* endbr64 */
#else
	enum { ENTRY = 8 };
#endif
	pthread_t t;
	void *r;
	pthread_create(&t, NULL, thr, NULL);
	pthread_join(t, &r);
	printf("result %d %ld\nentry", f(41), (long)r);
	for (int i = 0; i < ENTRY; i++)
		printf(" %02x", p[i]);
	printf("\n");
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
