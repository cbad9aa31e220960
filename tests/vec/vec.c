/* SPDX-License-Identifier: MIT */
/*
 * vec.c - vector-ABI arguments and results through the trampolines
 * (tests/sh/routes-vec.sh). The traced functions (vec_funcs.c) take eight
 * __m256d (ymm0-7) or __m512d (zmm0-7) arguments and return one. An ops
 * whose callback runs vzeroupper, which zeroes bits 128 and up of every
 * vector register (as glibc's AVX string functions do on their way out),
 * is registered on them through each route: the list function, the
 * per-ops trampoline, CALL_OPS. Every result must be bit for bit what the
 * same code computes untraced (reference copies in this file, which has no
 * entry sites).
 *
 *   vec api    the checks above, as TAP
 *   vec glibc  the same with a callback that calls glibc's memcpy, memset
 *              and strlen on large buffers instead (its AVX2 variants end
 *              with vzeroupper; its EVEX ones use ymm16-31)
 *   vec run    compute and compare only (under `dynftrace record`): prints
 *              "vec: N wrong" and exits 1 when N > 0
 */
#include <stdio.h>
#include <string.h>
#include <dynftrace/dynftrace.h>

#include "vec_funcs.h"
#include "../unit/tap.h"

static __m256d r4(__m256d a, __m256d b, __m256d c, __m256d d, __m256d e, __m256d f, __m256d g,
		  __m256d h)
{
	__m256d r = _mm256_add_pd(a, _mm256_mul_pd(b, _mm256_set1_pd(2)));
	r = _mm256_add_pd(r, _mm256_mul_pd(c, _mm256_set1_pd(3)));
	r = _mm256_add_pd(r, _mm256_mul_pd(d, _mm256_set1_pd(5)));
	r = _mm256_add_pd(r, _mm256_mul_pd(e, _mm256_set1_pd(7)));
	r = _mm256_add_pd(r, _mm256_mul_pd(f, _mm256_set1_pd(11)));
	r = _mm256_add_pd(r, _mm256_mul_pd(g, _mm256_set1_pd(13)));
	return _mm256_add_pd(r, _mm256_mul_pd(h, _mm256_set1_pd(17)));
}

#ifdef __AVX512F__
static __m512d r8(__m512d a, __m512d b, __m512d c, __m512d d, __m512d e, __m512d f, __m512d g,
		  __m512d h)
{
	__m512d r = _mm512_add_pd(a, _mm512_mul_pd(b, _mm512_set1_pd(2)));
	r = _mm512_add_pd(r, _mm512_mul_pd(c, _mm512_set1_pd(3)));
	r = _mm512_add_pd(r, _mm512_mul_pd(d, _mm512_set1_pd(5)));
	r = _mm512_add_pd(r, _mm512_mul_pd(e, _mm512_set1_pd(7)));
	r = _mm512_add_pd(r, _mm512_mul_pd(f, _mm512_set1_pd(11)));
	r = _mm512_add_pd(r, _mm512_mul_pd(g, _mm512_set1_pd(13)));
	return _mm512_add_pd(r, _mm512_mul_pd(h, _mm512_set1_pd(17)));
}
#endif

static __m256d a4(double x)
{
	return _mm256_set_pd(x, x + 0.25, x + 0.5, x + 0.75);
}

/* 0 when every traced result equals the reference, else how many differ */
static int compare(int rounds)
{
	int wrong = 0;
	for (int i = 0; i < rounds; i++) {
		double x = 1.0 + i * 0.37;
		__m256d (*volatile f4)(__m256d, __m256d, __m256d, __m256d, __m256d, __m256d,
				       __m256d, __m256d) = v4;
		__m256d got = f4(a4(x), a4(x + 1), a4(x + 2), a4(x + 3), a4(x + 4), a4(x + 5),
				 a4(x + 6), a4(x + 7));
		__m256d want = r4(a4(x), a4(x + 1), a4(x + 2), a4(x + 3), a4(x + 4), a4(x + 5),
				  a4(x + 6), a4(x + 7));
		wrong += memcmp(&got, &want, sizeof(got)) != 0;
		__m256d (*volatile g4)(double) = v4_ret;
		got = g4(x);
		want = _mm256_set_pd(x, x * 2, x * 3, x * 4);
		wrong += memcmp(&got, &want, sizeof(got)) != 0;
#ifdef __AVX512F__
		__m512d b = _mm512_set_pd(x, x + 1, x + 2, x + 3, x + 4, x + 5, x + 6, x + 7);
		__m512d (*volatile f8)(__m512d, __m512d, __m512d, __m512d, __m512d, __m512d,
				       __m512d, __m512d) = v8;
		__m512d got8 = f8(b, _mm512_add_pd(b, b), _mm512_mul_pd(b, b), b, b, b, b,
				  _mm512_sub_pd(b, _mm512_set1_pd(0.5)));
		__m512d want8 = r8(b, _mm512_add_pd(b, b), _mm512_mul_pd(b, b), b, b, b, b,
				   _mm512_sub_pd(b, _mm512_set1_pd(0.5)));
		wrong += memcmp(&got8, &want8, sizeof(got8)) != 0;
		__m512d (*volatile g8)(double) = v8_ret;
		got8 = g8(x);
		want8 = _mm512_set_pd(x, x * 2, x * 3, x * 4, x * 5, x * 6, x * 7, x * 8);
		wrong += memcmp(&got8, &want8, sizeof(got8)) != 0;
#endif
	}
	return wrong;
}

static unsigned long cb_calls;

/* What C code may do to vector registers: vzeroupper clears bits 128 and
 * up of all of them. */
static void clobber_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
		       struct dynftrace_regs *regs)
{
	(void)ip, (void)pip, (void)op, (void)regs;
	__asm__ __volatile__("vzeroupper" ::: "memory");
	cb_calls++;
}

/* What an ordinary callback does: glibc's string functions. */
static char big_a[65536], big_b[65536];
static void libc_cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *op,
		    struct dynftrace_regs *regs)
{
	(void)ip, (void)pip, (void)op, (void)regs;
	memset(big_a, 'x', sizeof(big_a) - 1);
	memcpy(big_b, big_a, sizeof(big_a));
	cb_calls += strlen(big_b) == sizeof(big_b) - 1;
}

#ifdef __AVX512F__
#define NFUNCS 4
#define WHAT   "ymm and zmm"
#else
#define NFUNCS 2
#define WHAT   "ymm"
#endif

int main(int argc, char **argv)
{
	enum { ROUNDS = 50 };
	if (argc > 1 && !strcmp(argv[1], "run")) {
		int w = compare(ROUNDS);
		printf("vec: %d wrong\n", w);
		return w != 0;
	}
	static const struct {
		unsigned mask;
		const char *route;
	} r[] = {
	    {DYNFTRACE_ROUTE_LIST, "list"},
	    {DYNFTRACE_ROUTE_TRAMP, "tramp"},
	    {DYNFTRACE_ROUTE_CALL_OPS, "call_ops"},
	};
	tap_plan(4);
	ok(compare(ROUNDS) == 0, "untraced: results equal the reference");
	int glibc = argc > 1 && !strcmp(argv[1], "glibc");
	struct dynftrace_ops o = {.func = glibc ? libc_cb : clobber_cb};
	int err = dynftrace_set_filter(&o, "v[48]*", 1);
	err = err ? err : dynftrace_register_ops(&o);
	for (int k = 0; k < 3; k++) {
		int e = err ? err : dynftrace_set_routes(r[k].mask);
		unsigned long c0 = cb_calls;
		int w = e ? -1 : compare(ROUNDS);
		ok(!e && w == 0 && cb_calls - c0 == (unsigned long)ROUNDS * NFUNCS,
		   "%s route, a callback %s: " WHAT " arguments and results intact "
		   "(%d wrong, %lu callbacks, want %d; error %d)",
		   r[k].route, glibc ? "calling memset/memcpy/strlen" : "running vzeroupper", w,
		   cb_calls - c0, ROUNDS * NFUNCS, e);
	}
	dynftrace_unregister_ops(&o);
	dynftrace_free_filter(&o);
	dynftrace_set_routes(DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS);
	return tap_done();
}
