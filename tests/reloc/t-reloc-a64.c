/* SPDX-License-Identifier: MIT */
/*
 * t-reloc-a64.c - aarch64 entry relocation (lib/arch/aarch64/reloc.c,
 * compiled in: it is hidden in the runtime), run under qemu-aarch64 by
 * tests/cross/reloc.sh.
 *
 * Each PC-relative form is written as a small function into memory, run,
 * then its word is relocated into a block 100 MiB away (out of reach of
 * every form's own immediate but B's), replaced by `B block`, and the
 * function run again with the same inputs: the results must agree. The
 * far targets lie 60 MiB the other way, out of the block's B reach (the
 * x16 path). Then the refusals, each with its reason, and the branch sweep.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arch.h"
#include "../unit/tap.h"

#define MIB   ((uintptr_t)1 << 20)
#define A     ((uintptr_t)0x4000000000) /* the functions */
#define BLK   (A + 100 * MIB)		/* their blocks */
#define FAR   (A - 60 * MIB)		/* far targets */
#define SLOT  256			/* bytes per function */
#define NSLOT 64

static const uint32_t RET = 0xd65f03c0u;

static uint32_t movz(int rd, unsigned imm)
{
	return 0xd2800000u | imm << 5 | (uint32_t)rd;
}
static uint32_t addi(int rd, int rn, unsigned imm)
{
	return 0x91000000u | imm << 10 | (uint32_t)rn << 5 | (uint32_t)rd;
}
static uint32_t b_to(uint32_t op, uintptr_t from, uintptr_t to)
{
	return op | ((uint32_t)((intptr_t)(to - from) >> 2) & 0x03ffffffu);
}
static uint32_t imm19(uint32_t op, int words)
{
	return op | ((uint32_t)words & 0x7ffff) << 5;
}
static uint32_t adr(int page, int rd, int64_t imm)
{
	uint32_t u = (uint32_t)imm;
	return (page ? 0x90000000u : 0x10000000u) | (u & 3) << 29 | ((u >> 2) & 0x7ffff) << 5 |
	       (uint32_t)rd;
}
static uint32_t tbz(int nz, int rt, int bit, int words)
{
	return (nz ? 0x37000000u : 0x36000000u) | (uint32_t)(bit >> 5) << 31 |
	       (uint32_t)(bit & 31) << 19 | ((uint32_t)words & 0x3fff) << 5 | (uint32_t)rt;
}

static void flush(uintptr_t p, size_t n)
{
	__builtin___clear_cache((char *)p, (char *)(p + n));
}

static int slot_n;
static uintptr_t fn_at(void)
{
	return A + (uintptr_t)(slot_n++) * SLOT;
}

static long call(uintptr_t f, long x)
{
	return ((long (*)(long))f)(x);
}

static struct arch_reloc r;

/*
 * The function W (N words, the rest of its slot: DATA, 8-byte words from
 * byte 128) at a fresh slot: run with each input, its word K relocated,
 * run again. WANT_LEN: the block's length, 0 to skip that check.
 */
static void check(const char *what, const uint32_t *w, int n, int k, const uint64_t *data,
		  int ndata, int want_len)
{
	static const long in[] = {0, 1, 3, 4, 5, -3, 0x100000000L};
	long before[7], after[7];
	uintptr_t f = fn_at(), blk = BLK + (f - A);
	memcpy((void *)f, w, (size_t)n * 4);
	if (ndata)
		memcpy((void *)(f + 128), data, (size_t)ndata * 8);
	flush(f, SLOT);
	for (int i = 0; i < 7; i++)
		before[i] = call(f, in[i]);
	int rc = arch_reloc_entry(f + (uintptr_t)k * 4, (const uint8_t *)(f + (uintptr_t)k * 4), 4,
				  0, blk, (uint8_t *)blk, SLOT, &r);
	if (rc) {
		ok(0, "%s: relocated (%d: %s)", what, rc, r.why);
		return;
	}
	flush(blk, SLOT);
	uint32_t jb = b_to(0x14000000u, f + (uintptr_t)k * 4, blk);
	memcpy((void *)(f + (uintptr_t)k * 4), &jb, 4);
	flush(f, SLOT);
	int same = 1;
	for (int i = 0; i < 7; i++) {
		after[i] = call(f, in[i]);
		if (after[i] != before[i]) {
			same = 0;
			diag("%s: input %ld: %#lx before, %#lx relocated", what, in[i], before[i],
			     after[i]);
		}
	}
	ok(same && r.covered == 4 && r.ninsn == 1 && r.unscanned &&
	       (!want_len || r.len == want_len),
	   "%s: the same results through its block (%u bytes)", what, r.len);
}

#define W(...) (const uint32_t[]){__VA_ARGS__}, (int)(sizeof((const uint32_t[]){__VA_ARGS__}) / 4)

/* Relocate the N words CODE (a function of FSIZE bytes) at S to DST. */
static int rel(uintptr_t s, const uint32_t *code, int n, size_t fsize, uintptr_t dst)
{
	static uint8_t out[256];
	return arch_reloc_entry(s, (const uint8_t *)code, (size_t)n * 4, fsize, dst, out,
				sizeof(out), &r);
}

static void refused(int rc, int want, const char *reason, const char *what)
{
	ok(rc == want && strstr(r.why, reason), "%s: %d \"%s\"", what, rc, r.why);
}

struct seen {
	int n;
	uintptr_t t[8], from[8];
};
static void on_branch(uintptr_t t, uintptr_t from, void *ctx)
{
	struct seen *s = ctx;
	if (s->n < 8)
		s->t[s->n] = t, s->from[s->n] = from;
	s->n++;
}

int main(void)
{
	void *a = mmap((void *)A, NSLOT * SLOT, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	void *b = mmap((void *)BLK, NSLOT * SLOT, PROT_READ | PROT_WRITE | PROT_EXEC,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	void *fa = mmap((void *)FAR, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (a != (void *)A || b != (void *)BLK || fa != (void *)FAR) {
		printf("1..0 # SKIP the fixed test addresses are taken\n");
		return 0;
	}
	/* Far helpers: x0 + 42; x30 (where it returns); near helper: x0 * 2. */
	uint32_t far[] = {addi(0, 0, 42), RET, 0xaa1e03e0u /* mov x0, x30 */, RET};
	memcpy(fa, far, sizeof(far));
	flush(FAR, sizeof(far));
	uintptr_t far_add = FAR, far_lr = FAR + 8;
	uintptr_t near_dbl = fn_at();
	uint32_t dbl[] = {0x8b000000u /* add x0, x0, x0 */, RET};
	memcpy((void *)near_dbl, dbl, sizeof(dbl));
	flush(near_dbl, sizeof(dbl));

	static const uint64_t lit[] = {0x1122334455667788u, 0x80000001fedcba98u,
				       0x99aabbccddeeff00u};

	/* ---- address forms */
	check("adrp x0, +3 pages", W(adr(1, 0, 3), RET), 0, NULL, 0, 0);
	check("adrp x0, -70000 pages (beyond the block's reach)", W(adr(1, 0, -70000), RET), 0,
	      NULL, 0, 0);
	check("adr x0, +0x40", W(adr(0, 0, 0x40), RET), 0, NULL, 0, 0);
	check("adr x5, -0x100; mov x0, x5", W(adr(0, 5, -0x100), 0xaa0503e0u, RET), 0, NULL, 0, 0);
	check("adr xzr, +8 (nothing)", W(adr(0, 31, 8), RET), 0, NULL, 0, 4);

	/* ---- literal loads (the data at +128) */
	check("ldr x0, =lit", W(imm19(0x58000000u, 32), RET), 0, lit, 3, 0);
	check("ldr w0, =lit+8 (zero-extends)", W(imm19(0x18000000u, 34), RET), 0, lit, 3, 0);
	check("ldrsw x0, =lit+8 (sign-extends)", W(imm19(0x98000000u, 34), RET), 0, lit, 3, 0);
	check("ldr x16, =lit; mov x0, x16", W(imm19(0x58000010u, 32), 0xaa1003e0u, RET), 0, lit, 3,
	      0);
	check("ldr d0, =lit; fmov x0, d0", W(imm19(0x5c000000u, 32), 0x9e660000u, RET), 0, lit, 3,
	      0);
	check("ldr s0, =lit; fmov w0, s0", W(imm19(0x1c000000u, 32), 0x1e260000u, RET), 0, lit, 3,
	      0);
	check("ldr q0, =lit; umov x0, v0.d[1]", W(imm19(0x9c000000u, 32), 0x4e183c00u, RET), 0, lit,
	      3, 0);
	check("prfm pldl1keep, =lit; mov x0, #5", W(imm19(0xd8000000u, 32), movz(0, 5), RET), 0,
	      lit, 3, 0);
	check("add x0, x0, #7 (copied as is)", W(addi(0, 0, 7), RET), 0, NULL, 0, 8);
	check("ret alone", W(RET), 0, NULL, 0, 8);

	/* ---- conditional branches: the relocated word is the test */
	check("cmp x0, #3; b.eq",
	      W(0xf1000c1fu, imm19(0x54000000u, 3), movz(0, 1), RET, movz(0, 2), RET), 1, NULL, 0,
	      12);
	check("cmp x0, #3; b.lt (signed)",
	      W(0xf1000c1fu, imm19(0x5400000bu, 3), movz(0, 1), RET, movz(0, 2), RET), 1, NULL, 0,
	      0);
	check("cmp x0, #3; b.al",
	      W(0xf1000c1fu, imm19(0x5400000eu, 3), movz(0, 1), RET, movz(0, 2), RET), 1, NULL, 0,
	      8);
	check("cbz x0", W(imm19(0xb4000000u, 3), movz(0, 1), RET, movz(0, 2), RET), 0, NULL, 0, 12);
	check("cbnz w0 (32-bit: 1 << 32 is zero)",
	      W(imm19(0x35000000u, 3), movz(0, 1), RET, movz(0, 2), RET), 0, NULL, 0, 0);
	check("tbz x0, #2", W(tbz(0, 0, 2, 3), movz(0, 1), RET, movz(0, 2), RET), 0, NULL, 0, 12);
	check("tbnz x0, #63", W(tbz(1, 0, 63, 3), movz(0, 1), RET, movz(0, 2), RET), 0, NULL, 0, 0);
	check("tbnz x0, #32", W(tbz(1, 0, 32, 3), movz(0, 1), RET, movz(0, 2), RET), 0, NULL, 0, 0);

	/* ---- unconditional branches */
	check("b +8 (over mov x0, #1)", W(0x14000002u, movz(0, 1), RET), 0, NULL, 0, 8);
	uintptr_t f = A + (uintptr_t)slot_n * SLOT;
	check("b to a function 60 MiB away (the block's x16 path)",
	      W(b_to(0x14000000u, f, far_add)), 0, NULL, 0, 0);
	ok(r.len == 24 && r.end == 8, "... ldr x16, =T; br x16; b back; pad; .quad T (%u, end %u)",
	   r.len, r.end);
	f = A + (uintptr_t)slot_n * SLOT;
	/* stp x29, x30, [sp, #-16]!; bl T; ldp x29, x30, [sp], #16; add x0, x0, #10; ret */
	check("bl near: returns into the function",
	      W(0xa9bf7bfdu, b_to(0x94000000u, f + 4, near_dbl), 0xa8c17bfdu, addi(0, 0, 10), RET),
	      1, NULL, 0, 0);
	ok(r.call_pushed == 4 && r.call_target == near_dbl, "... x30 set, then the jump");
	f = A + (uintptr_t)slot_n * SLOT;
	check("bl far (x16 path)",
	      W(0xa9bf7bfdu, b_to(0x94000000u, f + 4, far_add), 0xa8c17bfdu, addi(0, 0, 10), RET),
	      1, NULL, 0, 0);
	f = A + (uintptr_t)slot_n * SLOT;
	check("bl to a callee returning its x30: the original's return address",
	      W(0xa9bf7bfdu, b_to(0x94000000u, f + 4, far_lr), 0xa8c17bfdu, RET), 1, NULL, 0, 0);

	/* ---- refusals and the marker */
	const uint32_t bti = 0xd503245fu, paciasp = 0xd503233fu;
	int rc = rel(A, W(bti, addi(0, 0, 1), RET), 12, A + MIB);
	ok(rc == 0 && r.marker == 4 && r.map[0].src == 4 && !r.unscanned,
	   "bti c stays first: the word after it is relocated");
	rc = rel(A, W(paciasp, addi(0, 0, 1), RET), 12, A + MIB);
	refused(rc, -ENOTSUP, "signs its return address", "paciasp first: refused");
	rc = rel(A, W(bti, 0xd503237fu, RET), 12, A + MIB);
	refused(rc, -ENOTSUP, "signs its return address", "bti c; pacibsp: refused");
	rc = rel(A, W(0xd4200000u | 0x1be0u, RET), 8, A + MIB);
	refused(rc, -ENOTSUP, "breakpoint", "brk: refused");
	rc = rel(A, W(0xd63f0020u /* blr x1 */, RET), 8, A + MIB);
	ok(rc == 0 && r.calls == 1, "blr: an indirect call, said in arch_reloc.calls");
	/* subs x0, x0, #1; b.ne entry; ret */
	rc = rel(A, W(0xf1000400u, imm19(0x54000001u, -1), RET), 12, A + MIB);
	refused(rc, -ENOTSUP, "a branch at +0x4 targets +0, the relocated instruction",
		"a loop head at the entry: refused");
	rc = rel(A, W(bti, 0xf1000400u, imm19(0x54000001u, -1), RET), 16, A + MIB);
	refused(rc, -ENOTSUP, "targets +4", "a loop head after bti c: refused");
	rc = rel(A, W(bti, 0xf1000400u, imm19(0x54000001u, -2), RET), 16, A + MIB);
	ok(rc == 0, "a branch to the bti itself (a tail call of itself): relocated");
	rc = rel(A, W(bti), 4, A + MIB);
	refused(rc, -ENOTSUP, "no word after 4", "bti c alone: refused");
	rc = rel(A, W(addi(0, 0, 1), RET), 8, A + 200 * MIB);
	refused(rc, -ERANGE, "out of B reach", "a block 200 MiB away: -ERANGE");
	rc = rel(A + 2, W(RET), 4, A + MIB);
	refused(rc, -EINVAL, "misaligned", "a misaligned function: -EINVAL");

	/* ---- the branch sweep */
	struct seen s = {0};
	const uint32_t sweep[] = {0x14000004u,		  /* b +16 */
				  0x97ffffffu,		  /* bl -4 */
				  imm19(0x54000000u, -2), /* b.eq -8 */
				  imm19(0xb4000000u, 2),  /* cbz x0, +8 */
				  tbz(1, 3, 5, -4),	  /* tbnz w3, #5, -16 */
				  addi(0, 0, 1),	  /* not a branch */
				  0xd61f0200u,		  /* br x16: indirect */
				  adr(1, 0, 1)};	  /* not a branch */
	arch_reloc_branches((const uint8_t *)sweep, sizeof(sweep), A, on_branch, &s);
	ok(s.n == 5 && s.t[0] == A + 16 && s.t[1] == A + 4 - 4 && s.t[2] == A + 8 - 8 &&
	       s.t[3] == A + 12 + 8 && s.t[4] == A + 16 - 16 && s.from[4] == A + 16,
	   "arch_reloc_branches: b, bl, b.cond, cbz, tbnz with their targets (%d)", s.n);
	printf("1..%d\n", tap_n);
	return tap_done();
}
