/* SPDX-License-Identifier: MIT */
/*
 * t-reloc.c - the rules of arch_reloc_entry (lib/arch/x86_64/reloc.c), one
 * case each, on code at made-up addresses (nothing runs here; fuzz.c runs
 * what it relocates). Built with reloc.c compiled in (it is hidden in the
 * runtime). `t-reloc nodecoder`: the refusal when capstone cannot be
 * loaded, this program's dlmopen hiding it.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "../unit/tap.h"

static int hide_capstone;

/* Interposes libc's: reloc.c's dlmopen lands here. */
void *dlmopen(Lmid_t lmid, const char *name, int flags)
{
	static void *(*real)(Lmid_t, const char *, int);
	if (hide_capstone && name && strstr(name, "capstone"))
		return NULL;
	if (!real)
		real = (void *(*)(Lmid_t, const char *, int))dlsym(RTLD_NEXT, "dlmopen");
	return real(lmid, name, flags);
}

#define S	  ((uintptr_t)0x7f0000400000)	   /* the function */
#define D_NEAR	  (S + 0x1000)			   /* a block in reach */
#define D_FAR	  (S - ((uintptr_t)16 << 30))	   /* out of rel32 reach */
#define CODE(...) ((const uint8_t[]){__VA_ARGS__}) /* padded below */

static uint8_t out[256];
static struct arch_reloc r;

/* Relocate the N bytes CODE, a function of FSIZE bytes (0: unknown), to DST;
 * 64 bytes are readable, NOPs after CODE. */
static int rel(const uint8_t *code, size_t n, size_t fsize, uintptr_t dst)
{
	uint8_t buf[64];
	memset(buf, 0x90, sizeof(buf));
	memcpy(buf, code, n);
	memset(out, 0xaa, sizeof(out));
	return arch_reloc_entry(S, buf, sizeof(buf), fsize, dst, out, sizeof(out), &r);
}
#define REL(fsize, dst, ...) rel(CODE(__VA_ARGS__), sizeof(CODE(__VA_ARGS__)), fsize, dst)

static int32_t rd32(const uint8_t *p)
{
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}
static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}
/* Does OUT[AT] hold `jmp rel32` from DST + AT to T? */
static int is_jmp(int at, uintptr_t dst, uintptr_t t)
{
	return out[at] == 0xe9 && (uintptr_t)(dst + at + 5 + rd32(out + at + 1)) == t;
}
static int is_far_jmp(int at, uintptr_t t)
{
	return out[at] == 0xff && out[at + 1] == 0x25 && rd32(out + at + 2) == 0 &&
	       rd64(out + at + 6) == t;
}
static void why(int rc)
{
	if (rc)
		diag("rc %d: %s", rc, r.why);
}

static void refused(int rc, int want, const char *reason, const char *what)
{
	ok(rc == want && strstr(r.why, reason), "%s: %d \"%s\"", what, rc, r.why);
}

int main(int argc, char **argv)
{
	int rc;

	if (argc > 1 && !strcmp(argv[1], "nodecoder")) {
		hide_capstone = 1;
		rc = REL(8, D_NEAR, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xc3, 0xc3, 0x90);
		refused(rc, -ENOENT, "the x86 decoder (libcapstone.so.4) is not installed",
			"without capstone: -ENOENT");
		return tap_failed != 0;
	}

	/* mov 0x10(%rip),%rax; ret */
	rc = REL(8, D_NEAR, 0x48, 0x8b, 0x05, 0x10, 0, 0, 0, 0xc3);
	why(rc);
	ok(rc == 0 && r.marker == 0 && r.covered == 7 && r.len == 12 && r.ninsn == 1 &&
	       !memcmp(out, "\x48\x8b\x05", 3) &&
	       (uintptr_t)(D_NEAR + 7 + rd32(out + 3)) == S + 7 + 0x10 && is_jmp(7, D_NEAR, S + 7),
	   "RIP-relative load: displacement recomputed, jump back to +7");
	/* addl $1,0x20(%rip): the immediate follows the displacement */
	rc = REL(16, D_NEAR, 0x83, 0x05, 0x20, 0, 0, 0, 0x01, 0xc3);
	why(rc);
	ok(rc == 0 && r.covered == 7 && out[0] == 0x83 && out[1] == 0x05 && out[6] == 1 &&
	       (uintptr_t)(D_NEAR + 7 + rd32(out + 2)) == S + 7 + 0x20,
	   "RIP-relative operand before an immediate");
	/* movdqa 0x10(%rip),%xmm0: capstone 4 says its disp is 2 bytes */
	rc = REL(16, D_NEAR, 0x66, 0x0f, 0x6f, 0x05, 0x10, 0, 0, 0, 0xc3);
	why(rc);
	ok(rc == 0 && r.covered == 8 && (uintptr_t)(D_NEAR + 8 + rd32(out + 4)) == S + 8 + 0x10,
	   "RIP-relative SSE load (a displacement capstone misreports)");
	rc = REL(8, D_FAR, 0x48, 0x8b, 0x05, 0x10, 0, 0, 0, 0xc3);
	refused(rc, -ERANGE, "mov at +0: its RIP-relative operand is out of reach",
		"RIP-relative operand out of reach: -ERANGE");

	/* je +7 (past the copy); xor %eax,%eax; mov %rax,%rbx */
	rc = REL(16, D_NEAR, 0x74, 0x05, 0x31, 0xc0, 0x48, 0x89, 0xc3, 0xc3);
	why(rc);
	ok(rc == 0 && r.covered == 7 && out[0] == 0x0f && out[1] == 0x84 &&
	       (uintptr_t)(D_NEAR + 6 + rd32(out + 2)) == S + 7 &&
	       !memcmp(out + 6, "\x31\xc0\x48\x89\xc3", 5) && is_jmp(11, D_NEAR, S + 7) &&
	       r.len == 16,
	   "jcc rel8 becomes jcc rel32");
	/* je +4: a copied instruction, reached in the block */
	rc = REL(16, D_NEAR, 0x74, 0x02, 0x31, 0xc0, 0x48, 0x89, 0xc3, 0xc3);
	why(rc);
	ok(rc == 0 && out[0] == 0x0f && out[1] == 0x84 && rd32(out + 2) == 2 && r.ninsn == 3 &&
	       r.map[2].src == 4 && r.map[2].dst == 8,
	   "jcc to a copied instruction goes to its copy");
	/* je +3: inside mov at +2 */
	rc = REL(16, D_NEAR, 0x74, 0x01, 0x48, 0x89, 0xc3, 0xc3);
	refused(rc, -ENOTSUP, "je at +0 targets +3, inside an instruction",
		"jcc into the middle of a copied instruction: refused");
	rc = REL(16, D_FAR, 0x74, 0x05, 0x31, 0xc0, 0x48, 0x89, 0xc3, 0xc3);
	why(rc);
	ok(rc == 0 && out[0] == 0x75 && out[1] == 14 && is_far_jmp(2, S + 7) &&
	       is_far_jmp(16 + 5, S + 7) && r.len == 16 + 5 + 14,
	   "jcc out of reach: inverted jcc over an absolute jump");
	/* jne rel32 */
	rc = REL(16, D_NEAR, 0x0f, 0x85, 0x00, 0x01, 0, 0, 0xc3);
	why(rc);
	ok(rc == 0 && r.covered == 6 && out[0] == 0x0f && out[1] == 0x85 &&
	       (uintptr_t)(D_NEAR + 6 + rd32(out + 2)) == S + 6 + 0x100,
	   "jcc rel32 retargeted");

	/* jmp rel32, function size unknown: 5 bytes exactly */
	rc = REL(0, D_NEAR, 0xe9, 0x00, 0x02, 0, 0);
	why(rc);
	ok(rc == 0 && r.covered == 5 && r.unscanned && is_jmp(0, D_NEAR, S + 5 + 0x200),
	   "jmp rel32 retargeted, unscanned when the size is unknown");
	rc = REL(0, D_FAR, 0xe9, 0x00, 0x02, 0, 0);
	ok(rc == 0 && is_far_jmp(0, S + 5 + 0x200) && is_far_jmp(14, S + 5),
	   "jmp out of reach: absolute");
	/* jmp rel8 at +0 then code of the function */
	rc = REL(32, D_NEAR, 0xeb, 0x10, 0x31, 0xc0, 0x48, 0x89, 0xc3, 0xc3);
	why(rc);
	ok(rc == 0 && is_jmp(0, D_NEAR, S + 0x12) && r.covered == 7, "jmp rel8 becomes jmp rel32");
	rc = REL(0, D_NEAR, 0xeb, 0x10, 0x31, 0xc0, 0x48, 0x89, 0xc3, 0xc3);
	refused(rc, -ENOTSUP, "jmp at +0 before 5 bytes",
		"jmp rel8 at +0 with the size unknown: refused");

	/* call rel32: pushq RET; jmp T; .quad RET (the callee returns into the
	 * function itself, past the replaced bytes) */
	rc = REL(8, D_NEAR, 0xe8, 0x00, 0x10, 0, 0, 0xc3, 0x90, 0x90);
	why(rc);
	ok(rc == 0 && !memcmp(out, "\xff\x35\x05\x00\x00\x00", 6) &&
	       is_jmp(6, D_NEAR, S + 5 + 0x1000) && rd64(out + 11) == S + 5 && !r.calls &&
	       r.call_pushed == 6 && r.call_target == S + 5 + 0x1000 && is_jmp(19, D_NEAR, S + 5),
	   "call rel32: pushq 5(%%rip) (the original's return point); jmp target");
	rc = REL(8, D_FAR, 0xe8, 0x00, 0x10, 0, 0, 0xc3, 0x90, 0x90);
	ok(rc == 0 && !memcmp(out, "\xff\x35\x06\x00\x00\x00\xff\x25\x08\x00\x00\x00", 12) &&
	       rd64(out + 12) == S + 5 && rd64(out + 20) == S + 5 + 0x1000 &&
	       is_far_jmp(28, S + 5) && r.len == 42 && r.call_pushed == 6,
	   "call out of reach: pushq 6(%%rip); jmp *8(%%rip); .quad RET; .quad target");
	/* sub $8,%rsp; call rel32 (redis's dictFetchValue): the copies then the call */
	rc = REL(16, D_NEAR, 0x48, 0x83, 0xec, 0x08, 0xe8, 0x00, 0x10, 0, 0, 0xc3);
	why(rc);
	ok(rc == 0 && r.covered == 9 && r.ninsn == 2 &&
	       !memcmp(out, "\x48\x83\xec\x08\xff\x35", 6) && rd64(out + 4 + 11) == S + 9 &&
	       r.call_pushed == 4 + 6 && r.map[1].dst == 4,
	   "sub; call: the call's rewrite returns to +9, after the replaced bytes");
	/* call *%rax (indirect): copied, flagged for the caller's refusal */
	rc = REL(16, D_NEAR, 0xff, 0xd0, 0x48, 0x89, 0xc3, 0xc3);
	why(rc);
	ok(rc == 0 && r.calls && !r.call_pushed && out[0] == 0xff && out[1] == 0xd0,
	   "call *%%rax: copied as is and flagged (its return address would be the block's)");

	/* jrcxz +7; mov %rax,%rbx; nop */
	rc = REL(16, D_NEAR, 0xe3, 0x05, 0x48, 0x89, 0xc3, 0x90, 0x90, 0xc3);
	why(rc);
	ok(rc == 0 && r.covered == 5 && !memcmp(out, "\xe3\x02\xeb\x05", 4) &&
	       is_jmp(4, D_NEAR, S + 7),
	   "jrcxz: jrcxz +2; jmp +5; jmp target");
	rc = REL(16, D_FAR, 0x67, 0xe2, 0x05, 0x48, 0x89, 0xc3, 0x90, 0xc3);
	why(rc);
	ok(rc == 0 && !memcmp(out, "\x67\xe2\x02\xeb\x0e", 5) && is_far_jmp(5, S + 8),
	   "addr32 loop out of reach keeps its prefix, absolute jump");

	/* endbr64; push %rbp; mov %rsp,%rbp; push %r15 */
	rc = REL(16, D_NEAR, 0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x41, 0x57, 0xc3);
	why(rc);
	ok(rc == 0 && r.marker == 4 && r.covered == 6 && r.map[0].src == 4 &&
	       !memcmp(out, "\x55\x48\x89\xe5\x41\x57", 6) && is_jmp(6, D_NEAR, S + 10),
	   "endbr64 stays, the copy starts after it");

	rc = REL(3, D_NEAR, 0x31, 0xc0, 0xc3);
	refused(rc, -ENOTSUP, "a 3-byte function", "a function of 3 bytes: refused");
	rc = REL(7, D_NEAR, 0xf3, 0x0f, 0x1e, 0xfa, 0x31, 0xc0, 0xc3);
	refused(rc, -ENOTSUP, "a 7-byte function", "endbr64 and 3 bytes: refused");
	rc = REL(0, D_NEAR, 0x90, 0xc3, 0xcc, 0xcc, 0xcc, 0xcc);
	refused(rc, -ENOTSUP, "ret at +1 before 5 bytes", "ret at +1: refused");
	rc = REL(0, D_NEAR, 0xff, 0xe0, 0xcc, 0xcc, 0xcc, 0xcc);
	refused(rc, -ENOTSUP, "jmp at +0 before 5 bytes", "jmp *%%rax at +0: refused");
	rc = REL(0, D_NEAR, 0x31, 0xc0, 0x0f, 0x0b, 0xcc, 0xcc);
	refused(rc, -ENOTSUP, "ud2 at +2 before 5 bytes", "ud2 at +2: refused");
	rc = REL(6, D_NEAR, 0x31, 0xc0, 0x48, 0x8b, 0x05, 0x10, 0, 0, 0);
	refused(rc, -ENOTSUP, "mov at +2 runs past the function's 6 bytes",
		"an instruction past the function's end: refused");

	/* xor %eax,%eax; 1: inc %eax; cmp $10,%eax; jne 1b; ret */
	rc = REL(10, D_NEAR, 0x31, 0xc0, 0xff, 0xc0, 0x83, 0xf8, 0x0a, 0x75, 0xf9, 0xc3);
	refused(rc, -ENOTSUP, "a branch at +7 targets +2, inside the relocated bytes",
		"a loop head in the first bytes: refused");
	rc = REL(0, D_NEAR, 0x31, 0xc0, 0xff, 0xc0, 0x83, 0xf8, 0x0a, 0x75, 0xf9, 0xc3);
	ok(rc == 0 && r.unscanned, "the same with the size unknown: relocated, unscanned");
	/* 1: xor; inc; cmp; jne 1b: a branch to the entry is fine */
	rc = REL(10, D_NEAR, 0x31, 0xc0, 0xff, 0xc0, 0x83, 0xf8, 0x0a, 0x75, 0xf7, 0xc3);
	why(rc);
	ok(rc == 0 && !r.unscanned && r.covered == 7, "a loop back to the entry: relocated");
	/* call +3 (into the copy) from past it */
	rc =
	    REL(16, D_NEAR, 0x31, 0xc0, 0x31, 0xdb, 0x90, 0x90, 0xe8, 0xf8, 0xff, 0xff, 0xff, 0xc3);
	refused(rc, -ENOTSUP, "a branch at +6 targets +3", "a call into the first bytes: refused");

	rc = REL(16, D_NEAR, 0x06, 0x90, 0x90, 0x90, 0x90, 0xc3);
	refused(rc, -EINVAL, "undecodable bytes at +0", "undecodable bytes: -EINVAL");
	rc = REL(16, D_NEAR, 0x90, 0xcc, 0x90, 0x90, 0x90, 0xc3);
	refused(rc, -ENOTSUP, "int3 at +1 is a breakpoint", "int3: refused");
	rc = REL(16, D_NEAR, 0xc7, 0xf8, 0x10, 0, 0, 0, 0xc3);
	refused(rc, -ENOTSUP, "xbegin at +0 cannot be relocated", "xbegin: refused");
	rc = REL(16, D_NEAR, 0x66, 0xe9, 0x10, 0, 0x90, 0x90, 0xc3);
	refused(rc, -ENOTSUP, "operand-size prefix", "jmp with 66: refused");
	rc = REL(16, D_NEAR, 0x67, 0x8b, 0x05, 0x10, 0, 0, 0, 0xc3);
	refused(rc, -ENOTSUP, "EIP-relative", "EIP-relative operand: refused");

	/* Reading its own return address (libgcc's uw_init_context_1):
	 * push %r12; push %rbx; sub $0x18,%rsp; mov 0x28(%rsp),%rax; ...; ret */
	rc = REL(20, D_NEAR, 0x41, 0x54, 0x53, 0x48, 0x83, 0xec, 0x18, 0x48, 0x8b, 0x44, 0x24, 0x28,
		 0x48, 0x83, 0xc4, 0x18, 0x5b, 0x41, 0x5c, 0xc3);
	refused(rc, -ENOTSUP, "reads its own return address at +7",
		"a load of the return address's slot after the prologue: refused");
	/* the same after `add $-0x18,%rsp`, and later in the body */
	rc = REL(25, D_NEAR, 0x41, 0x54, 0x53, 0x48, 0x83, 0xc4, 0xe8, 0x48, 0x89, 0xf8, 0xe8, 0, 0,
		 0, 0, 0x48, 0x8b, 0x4c, 0x24, 0x28, 0x48, 0x83, 0xc4, 0x18, 0xc3);
	refused(rc, -ENOTSUP, "reads its own return address at +0xf",
		"after add $-N and a call: refused");
	/* at the entry (libffi's ffi_call_unix64): mov (%rsp),%r10; ... ret */
	rc =
	    REL(12, D_NEAR, 0x4c, 0x8b, 0x14, 0x24, 0x48, 0x89, 0xf8, 0x48, 0x89, 0xc3, 0x90, 0xc3);
	refused(rc, -ENOTSUP, "reads its own return address at +0", "(%rsp) at the entry: refused");
	/* with a frame pointer: push %rbp; mov %rsp,%rbp; mov 8(%rbp),%rax; pop %rbp; ret */
	rc = REL(10, D_NEAR, 0x55, 0x48, 0x89, 0xe5, 0x48, 0x8b, 0x45, 0x08, 0x5d, 0xc3);
	refused(rc, -ENOTSUP, "reads its own return address at +4", "8(%rbp): refused");
	/* a stack argument (0x30(%rsp) past the return address), and a load
	 * after the stack was realigned: relocated */
	rc = REL(20, D_NEAR, 0x41, 0x54, 0x53, 0x48, 0x83, 0xec, 0x18, 0x48, 0x8b, 0x44, 0x24, 0x30,
		 0x48, 0x83, 0xc4, 0x18, 0x5b, 0x41, 0x5c, 0xc3);
	why(rc);
	ok(rc == 0, "a stack argument's load: relocated");
	rc = REL(22, D_NEAR, 0x53, 0x48, 0x83, 0xe4, 0xc0, 0x48, 0x83, 0xec, 0x08, 0x48, 0x8b, 0x44,
		 0x24, 0x10, 0x48, 0x8b, 0x5d, 0xf8, 0xc9, 0x90, 0x90, 0xc3);
	why(rc);
	ok(rc == 0, "a load after and $-64,%%rsp (depth unknown): relocated");

	uint8_t buf[8] = {0x48, 0x89, 0xf8, 0x48, 0x89, 0xc3, 0xc3, 0x90};
	rc = arch_reloc_entry(S, buf, sizeof(buf), sizeof(buf), D_NEAR, out, 8, &r);
	refused(rc, -EINVAL, "OUT holds 8", "OUT too small: -EINVAL");
	rc = arch_reloc_entry(S, buf, 4, 0, D_NEAR, out, sizeof(out), &r);
	refused(rc, -EINVAL, "4 bytes given", "too few bytes given: -EINVAL");
	rc = arch_reloc_entry(S, buf, 4, 8, D_NEAR, out, sizeof(out), &r);
	refused(rc, -EINVAL, "4 bytes given of a 8-byte function", "AVAIL < FSIZE: -EINVAL");
	ok(arch_reloc_max() >= 5 * 19 + 14 && arch_reloc_peek() >= 4 + 4 + 15,
	   "arch_reloc_max %zu, arch_reloc_peek %zu", arch_reloc_max(), arch_reloc_peek());

	/* Whatever the bytes: no crash, a refusal says why, a block fits. */
	unsigned seed = 12345, bad = 0;
	uint8_t junk[64];
	for (int i = 0; i < 20000; i++) {
		for (size_t k = 0; k < sizeof(junk); k++)
			junk[k] = (uint8_t)((seed = seed * 1103515245u + 12345u) >> 16);
		size_t fsize = (seed >> 8) % 3 ? (seed >> 4) % 64 : 0;
		uintptr_t dst = (seed >> 3) & 1 ? D_FAR : D_NEAR;
		rc = arch_reloc_entry(S, junk, sizeof(junk), fsize, dst, out, arch_reloc_max(), &r);
		if ((rc && !r.why[0]) || (!rc && (r.len > arch_reloc_max() || r.covered < 5)))
			bad++;
	}
	ok(bad == 0, "20000 random byte strings: %u inconsistent answers", bad);
	return tap_failed != 0;
}
