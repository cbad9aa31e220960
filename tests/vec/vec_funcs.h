/* SPDX-License-Identifier: MIT */
#ifndef VEC_FUNCS_H
#define VEC_FUNCS_H
#include <immintrin.h>
__m256d v4(__m256d a, __m256d b, __m256d c, __m256d d, __m256d e, __m256d f, __m256d g, __m256d h);
__m256d v4_ret(double x);
#ifdef __AVX512F__
__m512d v8(__m512d a, __m512d b, __m512d c, __m512d d, __m512d e, __m512d f, __m512d g, __m512d h);
__m512d v8_ret(double x);
#endif
#endif
