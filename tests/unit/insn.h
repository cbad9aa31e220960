/* insn.h - for tests: the few instructions the runtime writes, decoded per
 * architecture (a branch's target, the NOP, a static call trampoline with
 * no target), independently of the runtime's own encoder. */
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
/* A static call trampoline with no target: a B to its own `ret` at +4. */
static inline int tinsn_tramp_returns(const void *t)
{
	uint32_t r;
	memcpy(&r, (const char *)t + 4, 4);
	return tinsn_branch(t, NULL) == (const char *)t + 4 && r == 0xd65f03c0u;
}
#else
#define TINSN_STEP  1
#define TINSN_SYNCS 3 /* the breakpoint protocol */
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
static inline int tinsn_tramp_returns(const void *t)
{
	return *(const unsigned char *)t == 0xc3;
}
#endif

/* A jump (not a call) at P to T? */
static inline int tinsn_jumps_to(const void *p, const void *t)
{
	int call = 1;
	return tinsn_branch(p, &call) == t && !call;
}
#endif
