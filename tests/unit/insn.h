/* insn.h - for tests: the few instructions the runtime writes, decoded per
 * architecture (a branch's target, the NOP, the marker before a site, a
 * static call trampoline with no target), independently of the runtime's own encoder. */
#ifndef DFT_TEST_INSN_H
#define DFT_TEST_INSN_H
#include <stdint.h>
#include <string.h>

#if defined(__aarch64__)
#define TINSN_STEP 4 /* instructions are aligned words */
/* Syncs per batch: every change the runtime makes is one word that the
 * architecture lets a single store replace on running code (NOP, B, BL). */
#define TINSN_SYNCS 1
/* A NOP of another form than the runtime's (mov x0, x0). */
static const unsigned char tinsn_other_nop[4] = {0xe0, 0x03, 0x00, 0xaa};
/* The target of a B (*CALL 0) or BL (1) at P, else NULL. */
static inline const void *tinsn_branch(const void *p, int *call)
{
	uint32_t v;
	memcpy(&v, p, 4);
	uint32_t op = v & 0xfc000000u;
	if (op != 0x14000000u && op != 0x94000000u)
		return NULL;
	if (call)
		*call = op == 0x94000000u;
	int32_t imm = (int32_t)(v << 6) >> 6;
	return (const char *)p + (intptr_t)imm * 4;
}
static inline int tinsn_is_nop(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v == 0xd503201fu;
}
/* Where a per-ops stub (movz x10; movk x10; b body; brk) jumps. */
#define TINSN_STUB_JUMP 8
/* A static call trampoline with no target: a B to its own `ret` at +4. */
static inline int tinsn_tramp_returns(const void *t)
{
	uint32_t r;
	memcpy(&r, (const char *)t + 4, 4);
	return tinsn_branch(t, NULL) == (const char *)t + 4 && r == 0xd65f03c0u;
}
/* The site P is the second of -fpatchable-function-entry=2's NOPs; the
 * first becomes `mov x9, x30` (the function's return address, kept from
 * the site's BL) once the runtime knows the site. */
static inline int tinsn_site_marked(const void *p)
{
	uint32_t v;
	memcpy(&v, (const char *)p - 4, 4);
	return v == 0xaa1e03e9u;
}
#elif defined(__riscv) && __riscv_xlen == 64
#define TINSN_STEP	4 /* the patched words are aligned */
/* Syncs per batch: every change is one aligned word (NOP, jal, jalr
 * through the site's auipc), which a hart fetches whole. */
#define TINSN_SYNCS	1
/* A NOP of another form than the runtime's (addi x0, x0, 1, a HINT). */
static const unsigned char tinsn_other_nop[4] = {0x13, 0x00, 0x10, 0x00};
/* The target of a jal (*CALL: rd != x0) at P, or of a `jalr t0, lo(t0)`
 * after an `auipc t0` at P - 4; else NULL. */
static inline const void *tinsn_branch(const void *p, int *call)
{
	uint32_t v, a;
	memcpy(&v, p, 4);
	if ((v & 0x7f) == 0x6f) {
		uint32_t d = ((v >> 31) & 1) << 20 | ((v >> 21) & 0x3ff) << 1 |
			     ((v >> 20) & 1) << 11 | ((v >> 12) & 0xff) << 12;
		if (call)
			*call = ((v >> 7) & 31) != 0;
		return (const char *)p + ((int32_t)(d << 11) >> 11);
	}
	if ((v & 0xfffffu) == 0x282e7u) {
		uintptr_t q = (uintptr_t)p;
		__asm__("" : "+r"(q)); /* not an object's bytes to the compiler */
		memcpy(&a, (const void *)(q - 4), 4);
		if ((a & 0xfffu) != 0x297u)
			return NULL;
		if (call)
			*call = 1;
		return (const char *)p - 4 + (int32_t)(a & 0xfffff000u) + ((int32_t)v >> 20);
	}
	return NULL;
}
static inline int tinsn_is_nop(const void *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v == 0x00000013u;
}
/* Where a per-ops stub (lui t1; addiw t1; j body; ebreak) jumps. */
#define TINSN_STUB_JUMP 8
/* A static call trampoline with no target: a j to its own `ret` at +4. */
static inline int tinsn_tramp_returns(const void *t)
{
	uint32_t r;
	memcpy(&r, (const char *)t + 4, 4);
	return tinsn_branch(t, NULL) == (const char *)t + 4 && r == 0x00008067u;
}
/* The site P is the second word of the entry's 8 bytes of NOPs; the first
 * becomes `auipc t0, hi` (aimed at the object's trampoline region) once
 * the runtime knows the site. */
static inline int tinsn_site_marked(const void *p)
{
	uint32_t v;
	uintptr_t q = (uintptr_t)p;
	__asm__("" : "+r"(q));
	memcpy(&v, (const void *)(q - 4), 4);
	return (v & 0xfffu) == 0x297u;
}
#else
#define TINSN_STEP	1
#define TINSN_SYNCS	3 /* the breakpoint protocol */
static const unsigned char tinsn_other_nop[5] = {0x66, 0x66, 0x66, 0x66, 0x90};
static inline const void *tinsn_branch(const void *p, int *call)
{
	const unsigned char *b = p;
	int32_t d;
	if (b[0] != 0xe8 && b[0] != 0xe9)
		return NULL;
	if (call)
		*call = b[0] == 0xe8;
	memcpy(&d, b + 1, 4);
	return b + 5 + d;
}
static inline int tinsn_is_nop(const void *p)
{
	return !memcmp(p, "\x0f\x1f\x44\x00\x00", 5);
}
/* Where a per-ops stub (push imm32; jmp rel32) jumps. */
#define TINSN_STUB_JUMP 5
static inline int tinsn_tramp_returns(const void *t)
{
	return *(const unsigned char *)t == 0xc3;
}
/* The site is the whole 5-byte NOP or call: nothing before it changes. */
static inline int tinsn_site_marked(const void *p)
{
	(void)p;
	return 1;
}
#endif

/* A jump (not a call) at P to T? */
static inline int tinsn_jumps_to(const void *p, const void *t)
{
	int call = 1;
	return tinsn_branch(p, &call) == t && !call;
}

/* The body a per-ops stub at P jumps to (the instruction at
 * TINSN_STUB_JUMP), NULL when P holds no such jump. */
static inline const void *tinsn_stub_body(const void *p)
{
	int call = 1;
	const void *b = tinsn_branch((const char *)p + TINSN_STUB_JUMP, &call);
	return call ? NULL : b;
}
#endif
