/* SPDX-License-Identifier: MIT */
/*
 * golden.h - shared by the golden-output programs (tests/golden/s-*.c).
 *
 * Every function that must show in the trace is NOINLINE and does some work
 * after its last call (sink++), so no compiler at -O2 turns a call into a
 * tail jump or a recursion into a loop: the same call graph at -O0 and -O2
 * with gcc and clang.
 */
#ifndef GOLDEN_H
#define GOLDEN_H

#if defined(__clang__)
#define NOINLINE __attribute__((noinline, used))
#else
#define NOINLINE __attribute__((noipa, used))
#endif

#ifdef __cplusplus
extern "C" {
#endif
extern volatile int sink;
#ifdef __cplusplus
}
#endif

#define GOLDEN_SINK volatile int sink

#endif
