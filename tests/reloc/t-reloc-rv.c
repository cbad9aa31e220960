/* SPDX-License-Identifier: MIT */
/*
 * t-reloc-rv.c - riscv64 entry relocation (lib/arch/riscv64/reloc.c,
 * compiled in: it is hidden in the runtime), run under qemu-riscv64 by
 * tests/cross/reloc.sh.
 *
 * Each PC-relative form (auipc, jal, the branches, c.j, c.beqz, c.bnez),
 * first or crossing the entry's word after a compressed instruction, is
 * written as a small function into memory, run, then its entry relocated
 * into a block 512 KiB away (out of reach of every form's own immediate
 * but jal's, within the entry jal's +-1 MiB), replaced by `jal x0, block`,
 * and run again with the same inputs: the results must agree. Then the
 * refusals, each with its reason, and the branch sweep.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arch.h"
#include "insn.h"
#include "../unit/tap.h"

#define KIB   ((uintptr_t)1 << 10)
#define A     ((uintptr_t)0x1000000000) /* the functions (below Sv39's top) */
#define BLKS  (A + 512 * KIB)		/* their blocks' mapping */
#define BLK   (BLKS + 0x3a4)		/* ... off a page: auipc's low part, rounding up */
#define NEAR  (A - 256 * KIB)		/* helpers in the blocks' jal reach */
#define FAR   (A - 900 * KIB)		/* ... and out of it (in the entries') */
#define SLOT  256			/* bytes per function */
#define NSLOT 64
#define DATA  192 /* a function's data, from its start */

enum { ZERO = 0, RA = 1, SP = 2, T0 = 5, T1 = 6, T2 = 7, A0 = 10, A1 = 11, A5 = 15 };

static uint32_t itype(uint32_t op, int rd, int f3, int rs1, int imm)
{
	return ((uint32_t)imm & 0xfff) << 20 | (uint32_t)rs1 << 15 | (uint32_t)f3 << 12 |
	       (uint32_t)rd << 7 | op;
}
static uint32_t addi(int rd, int rs1, int imm)
{
	return itype(0x13, rd, 0, rs1, imm);
}
static uint32_t ld(int rd, int rs1, int imm)
{
	return itype(0x03, rd, 3, rs1, imm);
}
static uint32_t jalr(int rd, int rs1, int imm)
{
	return itype(0x67, rd, 0, rs1, imm);
}
static uint32_t auipc(int rd, int hi)
{
	return ((uint32_t)hi & 0xfffff) << 12 | (uint32_t)rd << 7 | 0x17;
}
static uint32_t br(int f3, int rs1, int rs2, int off)
{
	uint32_t u = (uint32_t)off;
	return (u >> 12 & 1) << 31 | (u >> 5 & 0x3f) << 25 | (uint32_t)rs2 << 20 |
	       (uint32_t)rs1 << 15 | (uint32_t)f3 << 12 | (u >> 1 & 15) << 8 | (u >> 11 & 1) << 7 |
	       0x63;
}
static uint32_t jal_off(int rd, int off)
{
	return insn_jal(rd, 0, (uintptr_t)(intptr_t)off);
}
#define RET 0x00008067u
/* compressed */
static uint32_t c_li(int rd, int imm)
{
	return 0x4001u | ((uint32_t)imm >> 5 & 1) << 12 | (uint32_t)rd << 7 |
	       ((uint32_t)imm & 31) << 2;
}
static uint32_t c_addi(int rd, int imm)
{
	return 0x0001u | ((uint32_t)imm >> 5 & 1) << 12 | (uint32_t)rd << 7 |
	       ((uint32_t)imm & 31) << 2;
}
static uint32_t c_add(int rd, int rs2)
{
	return 0x9002u | (uint32_t)rd << 7 | (uint32_t)rs2 << 2;
}
static uint32_t c_mv(int rd, int rs2)
{
	return 0x8002u | (uint32_t)rd << 7 | (uint32_t)rs2 << 2;
}
static uint32_t c_jr(int rs1)
{
	return 0x8002u | (uint32_t)rs1 << 7;
}
#define C_RET	 0x8082u
#define C_NOP	 0x0001u
#define C_EBREAK 0x9002u
static uint32_t c_j(int off)
{
	uint32_t u = (uint32_t)off;
	return 0xa001u | (u >> 11 & 1) << 12 | (u >> 4 & 1) << 11 | (u >> 8 & 3) << 9 |
	       (u >> 10 & 1) << 8 | (u >> 6 & 1) << 7 | (u >> 7 & 1) << 6 | (u >> 1 & 7) << 3 |
	       (u >> 5 & 1) << 2;
}
static uint32_t c_bz(int nz, int rs1, int off)
{
	uint32_t u = (uint32_t)off;
	return (nz ? 0xe001u : 0xc001u) | (uint32_t)(rs1 - 8) << 7 | (u >> 8 & 1) << 12 |
	       (u >> 3 & 3) << 10 | (u >> 6 & 3) << 5 | (u >> 1 & 3) << 3 | (u >> 5 & 1) << 2;
}

/* Lay the instructions V (each 2 or 4 bytes by its low bits) out at P;
 * the bytes written. */
static size_t emit(uint8_t *p, const uint32_t *v, int n)
{
	size_t o = 0;
	for (int i = 0; i < n; i++) {
		memcpy(p + o, &v[i], (v[i] & 3) == 3 ? 4 : 2);
		o += (v[i] & 3) == 3 ? 4 : 2;
	}
	return o;
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
static uintptr_t next_fn(void)
{
	return A + (uintptr_t)slot_n * SLOT;
}

static long call(uintptr_t f, long x)
{
	return ((long (*)(long))f)(x);
}

static struct arch_reloc r;

/*
 * The function V (N instructions; DATA: 8-byte words at +192) at a fresh
 * slot: run with each input, its entry relocated (the function's size
 * known: its branches scanned), run again. COVERED, NINSN: what the entry's
 * word must cover.
 */
static void check(const char *what, const uint32_t *v, int n, int covered, int ninsn,
		  const uint64_t *data, int ndata)
{
	static const long in[] = {0, 1, 3, 4, 5, -3, 0x100000000L};
	long before[7], after[7];
	uintptr_t f = fn_at(), blk = BLK + (f - A);
	size_t len = emit((uint8_t *)f, v, n);
	if (ndata)
		memcpy((void *)(f + DATA), data, (size_t)ndata * 8);
	flush(f, SLOT);
	for (int i = 0; i < 7; i++)
		before[i] = call(f, in[i]);
	int rc = arch_reloc_entry(f, (const uint8_t *)f, len, len, blk, (uint8_t *)blk, SLOT, &r);
	if (rc) {
		ok(0, "%s: relocated (%d: %s)", what, rc, r.why);
		return;
	}
	flush(blk, SLOT);
	insn_put((void *)f, insn_jal(RV_ZERO, f, blk));
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
	ok(same && r.covered == covered && r.ninsn == ninsn && !r.unscanned && !r.calls,
	   "%s: the same results through its block (%u bytes, covers %u in %u)", what, r.len,
	   r.covered, r.ninsn);
}

#define W(...) (const uint32_t[]){__VA_ARGS__}, (int)(sizeof((const uint32_t[]){__VA_ARGS__}) / 4)

/* Relocate the instructions V at S (a function of FSIZE bytes) to DST. */
static int rel(uintptr_t s, const uint32_t *v, int n, size_t fsize, uintptr_t dst)
{
	static uint8_t code[64], out[256];
	size_t len = emit(code, v, n);
	return arch_reloc_entry(s, code, len, fsize, dst, out, sizeof(out), &r);
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

static void put_fn(uintptr_t at, const uint32_t *v, int n)
{
	flush(at, emit((uint8_t *)at, v, n));
}

int main(void)
{
	int prot = PROT_READ | PROT_WRITE | PROT_EXEC, fl = MAP_PRIVATE | MAP_ANONYMOUS;
	void *a = mmap((void *)A, NSLOT * SLOT, prot, fl | MAP_FIXED_NOREPLACE, -1, 0);
	void *b = mmap((void *)BLKS, NSLOT * SLOT + 4096, prot, fl | MAP_FIXED_NOREPLACE, -1, 0);
	void *na = mmap((void *)NEAR, 4096, prot, fl | MAP_FIXED_NOREPLACE, -1, 0);
	void *fa = mmap((void *)FAR, 4096, prot, fl | MAP_FIXED_NOREPLACE, -1, 0);
	if (a != (void *)A || b != (void *)BLKS || na != (void *)NEAR || fa != (void *)FAR) {
		printf("1..0 # SKIP the fixed test addresses are taken\n");
		return 0;
	}
	/* Helpers within the blocks' reach: a0 * 2; a0 = ra; through t0: a0 +
	 * 100, a0 = t0. */
	uintptr_t dbl = NEAR, get_ra = NEAR + 16, t0_add = NEAR + 32, t0_get = NEAR + 48;
	put_fn(dbl, W(0x00a50533u /* add a0, a0, a0 */, RET));
	put_fn(get_ra, W(addi(A0, RA, 0), RET));
	put_fn(t0_add, W(addi(A0, A0, 100), jalr(ZERO, T0, 0)));
	put_fn(t0_get, W(addi(A0, T0, 0), jalr(ZERO, T0, 0)));
	static const uint64_t lit[] = {0x1122334455667788u, 0x80000001fedcba98u};

	/* ---- auipc */
	check("auipc a0, 3", W(auipc(A0, 3), RET), 4, 1, NULL, 0);
	check("auipc a0, -5 (below)", W(auipc(A0, -5), RET), 4, 1, NULL, 0);
	check("auipc a5, 0; ld a0, 192(a5) (a pc-relative load)",
	      W(auipc(A5, 0), ld(A0, A5, DATA), RET), 4, 1, lit, 2);
	check("auipc x0 (a hint, dropped)", W(auipc(ZERO, 1), addi(A0, A0, 1), RET), 4, 1, NULL, 0);
	ok(r.len == 4 && r.end == 0, "... the block is the jump back alone (%u)", r.len);
	check("auipc t1, 0; jr 12(t1)",
	      W(auipc(T1, 0), jalr(ZERO, T1, 12), addi(A0, A0, 1), addi(A0, A0, 2), RET), 4, 1,
	      NULL, 0);

	/* ---- jal */
	check("j +8 (over addi a0, a0, 1)",
	      W(jal_off(ZERO, 8), addi(A0, A0, 1), addi(A0, A0, 5), RET), 4, 1, NULL, 0);
	uintptr_t f = next_fn();
	/* calls through t0 keep ra: they may be the entry itself */
	check("jal t0, callee returning through t0 (millicode's form)",
	      W(insn_jal(T0, f, t0_add), addi(A0, A0, 3), RET), 4, 1, NULL, 0);
	ok(r.call_pushed == 8 && r.call_target == t0_add, "... t0 set, then the jump (%u)",
	   r.call_pushed);
	f = next_fn();
	check("jal t0, callee returning t0: the original's return address",
	      W(insn_jal(T0, f, t0_get), RET), 4, 1, NULL, 0);
	f = next_fn();
	check("c.mv t2, ra; jal ra, a0*2 (crossing the word); c.addi a0, 10; c.jr t2",
	      W(c_mv(T2, RA), insn_jal(RA, f + 2, dbl), c_addi(A0, 10), c_jr(T2)), 6, 2, NULL, 0);
	ok(r.call_pushed == 10 && r.call_target == dbl && r.map[1].src == 2 && r.map[1].dst == 2,
	   "... ra set at +2 of the block, then the jump (%u)", r.call_pushed);
	f = next_fn();
	check("jal ra to a callee returning ra (crossing): the original's",
	      W(c_mv(T2, RA), insn_jal(RA, f + 2, get_ra), c_jr(T2)), 6, 2, NULL, 0);

	/* ---- branches: t1 = 3, the relocated word the test */
	static const struct {
		int f3;
		const char *name;
	} bs[] = {{0, "beq"}, {1, "bne"}, {4, "blt"}, {5, "bge"}, {6, "bltu"}, {7, "bgeu"}};
	for (int i = 0; i < 6; i++) {
		char what[64];
		snprintf(what, sizeof(what), "%s a0, t1 (t1 = 3 before it, compressed)",
			 bs[i].name);
		check(
		    what,
		    W(c_li(T1, 3), br(bs[i].f3, A0, T1, 8), c_li(A0, 1), C_RET, c_li(A0, 2), C_RET),
		    6, 2, NULL, 0);
		snprintf(what, sizeof(what), "%s a0, x0 first", bs[i].name);
		check(what,
		      W(br(bs[i].f3, A0, ZERO, 12), addi(A0, ZERO, 1), RET, addi(A0, ZERO, 2), RET),
		      4, 1, NULL, 0);
	}

	/* ---- compressed forms and pairs */
	check("c.j +6 (the word's second half dead)",
	      W(c_j(6), c_addi(A0, 1), c_addi(A0, 2), c_addi(A0, 5), C_RET), 4, 2, NULL, 0);
	check("c.beqz a0, +8; c.li a0, 1",
	      W(c_bz(0, A0, 8), c_li(A0, 1), C_RET, C_NOP, c_li(A0, 2), C_RET), 4, 2, NULL, 0);
	check("c.bnez a0, +8; c.li a0, 1",
	      W(c_bz(1, A0, 8), c_li(A0, 1), C_RET, C_NOP, c_li(A0, 2), C_RET), 4, 2, NULL, 0);
	check("c.li a1, 5; c.add a0, a1 (two compressed)", W(c_li(A1, 5), c_add(A0, A1), C_RET), 4,
	      2, NULL, 0);
	ok(r.map[0].src == 0 && r.map[1].src == 2 && r.map[1].dst == 2 && r.end == 4,
	   "... each copied as is, in place");
	check("c.addi a0, 1; addi a0, a0, 7 (crossing)", W(c_addi(A0, 1), addi(A0, A0, 7), C_RET),
	      6, 2, NULL, 0);
	check("c.li a1, 1; auipc a0, 2 (crossing); c.add a0, a1",
	      W(c_li(A1, 1), auipc(A0, 2), c_add(A0, A1), C_RET), 6, 2, NULL, 0);
	check("c.beqz a0, +8; c.bnez a0, +10 (both compressed branches)",
	      W(c_bz(0, A0, 8), c_bz(1, A0, 10), c_li(A0, 1), C_RET, c_li(A0, 2), C_RET,
		c_li(A0, 3), C_RET),
	      4, 2, NULL, 0);
	check("c.ret; c.nop (the size says the word is its own)", W(C_RET, C_NOP), 4, 2, NULL, 0);

	/* ---- refusals */
	int rc = rel(A + 2, W(addi(A0, A0, 1), RET), 8, A + 512 * KIB);
	refused(rc, -ENOTSUP, "2-byte boundary", "a function on a 2-byte boundary: refused");
	rc = rel(A + 1, W(RET), 4, A + 512 * KIB);
	refused(rc, -EINVAL, "misaligned", "an odd address: -EINVAL");
	rc = rel(A, W(0x00100073u, RET), 8, A + 512 * KIB);
	refused(rc, -ENOTSUP, "breakpoint", "ebreak: refused");
	rc = rel(A, W(c_li(A0, 1), C_EBREAK, C_RET), 6, A + 512 * KIB);
	refused(rc, -ENOTSUP, "ebreak at +2", "c.ebreak second: refused");
	rc = rel(A, W(2u << 27 | (uint32_t)A1 << 15 | 2u << 12 | (uint32_t)A0 << 7 | 0x2f, RET), 8,
		 A + 512 * KIB);
	refused(rc, -ENOTSUP, "lr at +0", "lr.w: refused");
	rc = rel(A, W(0x001fu, 0, 0, RET), 10, A + 512 * KIB);
	refused(rc, -ENOTSUP, "longer than 4 bytes", "a 48-bit instruction: refused");
	rc = rel(A, W(0, RET), 6, A + 512 * KIB);
	refused(rc, -ENOTSUP, "illegal", "zero bytes: refused");
	rc = rel(A, W(br(2, A0, A1, 8), RET), 8, A + 512 * KIB);
	refused(rc, -ENOTSUP, "reserved", "a reserved branch: refused");
	rc = rel(A, W(addi(A0, A0, -1), br(1, A0, ZERO, -4), RET), 12, A + 512 * KIB);
	refused(rc, -ENOTSUP, "a branch at +0x4 targets +0, the relocated",
		"a loop head at the entry: refused");
	rc = rel(A, W(c_li(A1, 0), c_addi(A0, -1), c_bz(1, A0, -2), C_RET), 8, A + 512 * KIB);
	refused(rc, -ENOTSUP, "a branch at +0x4 targets +2", "a loop to the word's second half");
	rc = rel(A, W(c_j(0), C_NOP), 4, A + 512 * KIB);
	refused(rc, -ENOTSUP, "targets +0", "c.j to itself: refused");
	rc = rel(A, W(C_RET, C_NOP), 0, A + 512 * KIB);
	refused(rc, -ENOTSUP, "returns or jumps away at +0",
		"c.ret first, the size unknown: refused (the next 2 bytes may be another's)");
	rc = rel(A, W(C_RET, C_NOP), 2, A + 512 * KIB);
	refused(rc, -ENOTSUP, "2-byte function", "a 2-byte function: refused");
	rc = rel(A, W(jalr(RA, A1, 0), RET), 8, A + 512 * KIB);
	ok(rc == 0 && r.calls == 1, "jalr ra, a1: an indirect call, said in arch_reloc.calls");
	rc = rel(A, W(c_li(A0, 0), 0x9002u | (uint32_t)A1 << 7, C_RET), 6, A + 512 * KIB);
	ok(rc == 0 && r.calls == 1, "c.jalr a1 second: an indirect call, said in arch_reloc.calls");
	rc = rel(A, W(addi(A0, A0, 1), RET), 8, A + 2048 * KIB);
	refused(rc, -ERANGE, "out of jal reach", "a block 2 MiB away: -ERANGE");
	rc = rel(A, W(insn_jal(ZERO, A, FAR), RET), 8, A + 512 * KIB);
	refused(rc, -ERANGE, "out of the block's jal reach",
		"j to 900 KiB below, the block 512 KiB above: -ERANGE");
	rc = rel(A, W(addi(A0, A0, 1), RET), 8, A - 512 * KIB);
	ok(rc == 0 && r.unscanned == 0, "a block below the function: relocated");

	/* ---- the branch sweep */
	struct seen s = {0};
	uint8_t sw[64];
	size_t swn = emit(sw, W(jal_off(ZERO, 16),   /* +0: j +16 */
				c_j(-2),	     /* +4: c.j -2 */
				addi(A0, A0, 1),     /* +6: not a branch */
				c_bz(0, A0, 4),	     /* +10: c.beqz +4 */
				br(0, A0, A1, -8),   /* +12: beq -8 */
				C_NOP,		     /* +16 */
				c_bz(1, A0, -16),    /* +18: c.bnez -16 */
				c_jr(RA),	     /* +20: indirect */
				jalr(ZERO, A1, 0))); /* +22: indirect */
	arch_reloc_branches(sw, swn, A, on_branch, &s);
	ok(s.n == 5 && s.t[0] == A + 16 && s.t[1] == A + 2 && s.from[1] == A + 4 &&
	       s.t[2] == A + 14 && s.from[2] == A + 10 && s.t[3] == A + 4 && s.from[3] == A + 12 &&
	       s.t[4] == A + 2 && s.from[4] == A + 18,
	   "arch_reloc_branches: j, c.j, c.beqz, beq, c.bnez at 2-byte steps, with their targets "
	   "(%d)",
	   s.n);
	printf("1..%d\n", tap_n);
	return tap_done();
}
