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
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3, s = 0;
	for (long i = 0; i < n; i++)
		s += asm_cfi(i) + asm_nocfi(i);
	printf("%ld\n", s);
	return 0;
}
