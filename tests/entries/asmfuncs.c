// SPDX-License-Identifier: MIT
/* asmfuncs.c - two hand-written functions returning their argument plus 1:
 * asm_cfi with unwind information, asm_nocfi without any (as a JIT's
 * builtins or uncommented assembly). -P relocates the first only
 * (tests/sh/entries.sh). */
#include <stdio.h>
#include <stdlib.h>
long asm_cfi(long), asm_nocfi(long);
__asm__(".text\n"
	".globl asm_cfi\n.type asm_cfi, @function\n"
	"asm_cfi:\n.cfi_startproc\n"
	"	push %rbx\n.cfi_adjust_cfa_offset 8\n.cfi_offset %rbx, -16\n"
	"	lea 1(%rdi), %rax\n	mov %rax, %rbx\n	mov %rbx, %rax\n"
	"	pop %rbx\n.cfi_adjust_cfa_offset -8\n.cfi_restore %rbx\n"
	"	ret\n.cfi_endproc\n.size asm_cfi, .-asm_cfi\n"
	".globl asm_nocfi\n.type asm_nocfi, @function\n"
	"asm_nocfi:\n"
	"	push %rbx\n	lea 1(%rdi), %rax\n	mov %rax, %rbx\n	mov %rbx, %rax\n"
	"	pop %rbx\n	ret\n.size asm_nocfi, .-asm_nocfi\n");
/* C functions (with unwind information), so that one without is the
 * exception in the program, as the runtime's rule wants it to be */
#define C_FN(k)                                                                                    \
	__attribute__((noinline)) long c_##k(long x)                                               \
	{                                                                                          \
		return x + k - k;                                                                  \
	}
/* clang-format off */
C_FN(0) C_FN(1) C_FN(2) C_FN(3) C_FN(4) C_FN(5) C_FN(6) C_FN(7)
C_FN(8) C_FN(9) C_FN(10) C_FN(11) C_FN(12) C_FN(13) C_FN(14) C_FN(15)
extern long c_done; /* ends the run of definitions for the formatter */
/* clang-format on */

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3, s = 0;
	for (long i = 0; i < n; i++)
		s += asm_cfi(i) + asm_nocfi(i) + c_0(0) + c_1(0) + c_2(0) + c_3(0) + c_4(0) +
		     c_5(0) + c_6(0) + c_7(0) + c_8(0) + c_9(0) + c_10(0) + c_11(0) + c_12(0) +
		     c_13(0) + c_14(0) + c_15(0);
	printf("%ld\n", s);
	return 0;
}
