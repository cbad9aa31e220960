/* SPDX-License-Identifier: MIT */
/*
 * vec_funcs.c - traced functions with vector-ABI arguments and results
 * (tests/sh/routes-vec.sh): __m256d in ymm0-7, and with AVX-512 __m512d in
 * zmm0-7. Built with entry sites and -mavx2 (-mavx512f).
 */
#include <immintrin.h>

#include "vec_funcs.h"

__attribute__((noinline)) __m256d v4(__m256d a, __m256d b, __m256d c, __m256d d, __m256d e,
				     __m256d f, __m256d g, __m256d h)
{
	/* distinct weights: a lost upper half changes the result */
	__m256d r = _mm256_add_pd(a, _mm256_mul_pd(b, _mm256_set1_pd(2)));
	r = _mm256_add_pd(r, _mm256_mul_pd(c, _mm256_set1_pd(3)));
	r = _mm256_add_pd(r, _mm256_mul_pd(d, _mm256_set1_pd(5)));
	r = _mm256_add_pd(r, _mm256_mul_pd(e, _mm256_set1_pd(7)));
	r = _mm256_add_pd(r, _mm256_mul_pd(f, _mm256_set1_pd(11)));
	r = _mm256_add_pd(r, _mm256_mul_pd(g, _mm256_set1_pd(13)));
	return _mm256_add_pd(r, _mm256_mul_pd(h, _mm256_set1_pd(17)));
}

/* the result itself in ymm0, made by a traced callee: its return path */
__attribute__((noinline)) __m256d v4_ret(double x)
{
	return _mm256_set_pd(x, x * 2, x * 3, x * 4);
}

#ifdef __AVX512F__
__attribute__((noinline)) __m512d v8(__m512d a, __m512d b, __m512d c, __m512d d, __m512d e,
				     __m512d f, __m512d g, __m512d h)
{
	__m512d r = _mm512_add_pd(a, _mm512_mul_pd(b, _mm512_set1_pd(2)));
	r = _mm512_add_pd(r, _mm512_mul_pd(c, _mm512_set1_pd(3)));
	r = _mm512_add_pd(r, _mm512_mul_pd(d, _mm512_set1_pd(5)));
	r = _mm512_add_pd(r, _mm512_mul_pd(e, _mm512_set1_pd(7)));
	r = _mm512_add_pd(r, _mm512_mul_pd(f, _mm512_set1_pd(11)));
	r = _mm512_add_pd(r, _mm512_mul_pd(g, _mm512_set1_pd(13)));
	return _mm512_add_pd(r, _mm512_mul_pd(h, _mm512_set1_pd(17)));
}

__attribute__((noinline)) __m512d v8_ret(double x)
{
	return _mm512_set_pd(x, x * 2, x * 3, x * 4, x * 5, x * 6, x * 7, x * 8);
}
#endif
