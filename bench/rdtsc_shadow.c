/* SPDX-License-Identifier: MIT */
/*
 * rdtsc_shadow.c - how much work hides behind two cycle-counter reads: a
 * loop of `rdtsc; N instructions; rdtsc; N instructions`, N simple
 * instructions (a load, an add, a store, a compare and an untaken branch,
 * five at a time), fastest of many runs. Where the time starts to grow
 * is what a tracer's writer can do per timestamp for free on this CPU
 * (docs/PERFORMANCE.md). x86-64 only.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

static uint64_t mem[8];

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

#define MIX    "movq 8(%0), %%rsi\n addq $1, %%rsi\n movq %%rsi, 16(%0)\n cmpq $5, %%rdi\n je 9f\n"
#define R2(x)  x x
#define R4(x)  R2(x) R2(x)
#define R8(x)  R4(x) R4(x)
#define R16(x) R8(x) R8(x)
#define R32(x) R16(x) R16(x)
#define R64(x) R32(x) R32(x)
#define ITERS  200000
#define RUN(n, body)                                                                               \
	do {                                                                                       \
		double best = 1e30;                                                                \
		for (int r = 0; r < 30; r++) {                                                     \
			double t0 = now_ns();                                                      \
			for (int i = 0; i < ITERS; i++)                                            \
				__asm__ volatile("rdtsc\n" body "rdtsc\n" body "9:\n"              \
						 :                                                 \
						 : "r"(mem)                                        \
						 : "rax", "rdx", "rsi", "rdi", "memory", "cc");    \
			double t = (now_ns() - t0) / ITERS;                                        \
			if (t < best)                                                              \
				best = t;                                                          \
		}                                                                                  \
		printf("| %d | %.2f |\n", n, best);                                                \
	} while (0)

int main(void)
{
	printf("| instructions after each rdtsc | ns per two rdtsc |\n|---|---|\n");
	RUN(0, "");
	RUN(40, R8(MIX));
	RUN(80, R16(MIX));
	RUN(160, R32(MIX));
	RUN(320, R64(MIX));
	return 0;
}
