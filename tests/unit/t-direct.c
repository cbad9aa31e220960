/* t-direct: direct calls (register_ftrace_direct): the site calls our
 * assembly function itself, which sees the arguments, preserves them, and
 * returns into the traced function; near and far (jump stub) targets. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <dynftrace/dynftrace.h>
#include "tap.h"

#define NOINLINE __attribute__((noinline))
volatile unsigned long direct_hits, direct_arg0, direct_arg5;
static volatile unsigned long ops_hits;
static volatile long sink; /* keeps calls of these pure functions */

/* Keeps every register: only memory changes. */
#if defined(__aarch64__)
/* Entered by `bl` with x9 the traced function's return address: returns
 * to x30 with x30 = x9 again (x16, x17 are free at a function's entry). */
__asm__(".text\n"
	".globl direct_fn\n"
	".type direct_fn, %function\n"
	"direct_fn:\n"
	"	adrp x16, direct_hits\n"
	"	add x16, x16, :lo12:direct_hits\n"
	"	ldr x17, [x16]\n"
	"	add x17, x17, #1\n"
	"	str x17, [x16]\n"
	"	adrp x16, direct_arg0\n"
	"	str x0, [x16, :lo12:direct_arg0]\n"
	"	adrp x16, direct_arg5\n"
	"	str x5, [x16, :lo12:direct_arg5]\n"
	"	mov x16, x30\n"
	"	mov x30, x9\n"
	"	ret x16\n"
	".size direct_fn, . - direct_fn\n");
#elif defined(__riscv)
/* Entered by `jal t0` or `jalr t0` with ra the traced function's return
 * address: returns to t0 (t1, t3 are free at a function's entry; t2 is
 * the static chain). */
__asm__(".text\n"
	".globl direct_fn\n"
	".type direct_fn, %function\n"
	"direct_fn:\n"
	"	lla t1, direct_hits\n"
	"	ld t3, 0(t1)\n"
	"	addi t3, t3, 1\n"
	"	sd t3, 0(t1)\n"
	"	lla t1, direct_arg0\n"
	"	sd a0, 0(t1)\n"
	"	lla t1, direct_arg5\n"
	"	sd a5, 0(t1)\n"
	"	jr t0\n"
	".size direct_fn, . - direct_fn\n");
#else
__asm__(".text\n"
	".globl direct_fn\n"
	".type direct_fn, @function\n"
	"direct_fn:\n"
	"	lock incq direct_hits(%rip)\n"
	"	movq %rdi, direct_arg0(%rip)\n"
	"	movq %r9, direct_arg5(%rip)\n"
	"	ret\n"
	".size direct_fn, . - direct_fn\n");
#endif
void direct_fn(void);

static volatile long zero; /* not pure: the compiler must keep every call */
NOINLINE long target_fn(long a, long b, long c, long d, long e, long f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + zero;
}
NOINLINE double target_fp(double x, double y)
{
	return x * y + 1.0;
}

static void cb(unsigned long ip, unsigned long pip, struct dynftrace_ops *o,
	       struct dynftrace_regs *r)
{
	(void)ip, (void)pip, (void)o, (void)r;
	ops_hits++;
}

static int show(const struct dynftrace_site_info *si, void *data)
{
	if (si->func && !strcmp(si->func, "target_fn"))
		*(const char **)data = si->route;
	return 0;
}

int main(void)
{
	struct dynftrace_ops d = {0}, other = {.func = cb}, d2 = {0};
	const char *route = NULL;
	tap_plan(13);
	ok(dynftrace_set_filter(&d, "target_*", 1) == 0, "direct ops selects target_*");
	ok(dynftrace_register_direct(&d, (unsigned long)direct_fn) == 0, "register direct");
	ok(target_fn(1, 2, 3, 4, 5, 6) == 91, "traced function computes right");
	ok(direct_hits == 1 && direct_arg0 == 1 && direct_arg5 == 6,
	   "direct saw the call and its args (%lu %lu %lu)", direct_hits, direct_arg0, direct_arg5);
	ok(target_fp(2.0, 3.5) == 8.0 && direct_hits == 2, "fp args untouched, second hit");
	dynftrace_for_each_site_info(show, &route);
	ok(route && !strcmp(route, "direct"), "site info says direct (%s)", route ? route : "?");
	dynftrace_set_filter(&d2, "target_fn", 1);
	ok(dynftrace_register_direct(&d2, (unsigned long)direct_fn) == -EBUSY,
	   "one direct call per site");
	ok(dynftrace_set_filter(&other, "target_*", 1) == 0 && dynftrace_register_ops(&other) == 0,
	   "another ops registers");
	ops_hits = 0;
	sink = target_fn(1, 1, 1, 1, 1, 1);
	ok(ops_hits == 0 && direct_hits == 3, "a direct site is exclusive (%lu %lu)", ops_hits,
	   direct_hits);
	ok(dynftrace_unregister_ops(&d) == 0, "unregister direct");
	sink = target_fn(1, 1, 1, 1, 1, 1);
	ok(direct_hits == 3 && ops_hits == 1, "direct gone, the other ops sees the site again");
	dynftrace_unregister_ops(&other);
	dynftrace_free_filter(&other);

	/* A far target: a copy of the function far from the code. */
	volatile unsigned long *hp = &direct_hits;
#if defined(__aarch64__)
	uint32_t far_code[10] = {
	    0x58000110, /* ldr x16, .+32 (&hits) */
	    0xf9400211, /* ldr x17, [x16] */
	    0x91000631, /* add x17, x17, #1 */
	    0xf9000211, /* str x17, [x16] */
	    0xaa1e03f0, /* mov x16, x30 */
	    0xaa0903fe, /* mov x30, x9 */
	    0xd65f0200, /* ret x16 */
	    0xd503201f, /* nop */
	};
	memcpy(&far_code[8], &hp, 8);
#elif defined(__riscv)
	uint32_t far_code[8] = {
	    0x00000317, /* auipc t1, 0 */
	    0x01833303, /* ld t1, 24(t1) (&hits) */
	    0x00033e03, /* ld t3, 0(t1) */
	    0x001e0e13, /* addi t3, t3, 1 */
	    0x01c33023, /* sd t3, 0(t1) */
	    0x00028067, /* jr t0 */
	};
	memcpy(&far_code[6], &hp, 8);
#else
	uint8_t far_code[] = {0x50,					/* push %rax */
			      0x48, 0xb8, 0,	0,    0, 0, 0, 0, 0, 0, /* movabs $hits,%rax */
			      0xf0, 0x48, 0xff, 0x00,			/* lock incq (%rax) */
			      0x58, 0xc3};				/* pop %rax; ret */
	memcpy(far_code + 3, &hp, 8);
#endif
	void *far = mmap((void *)0x100000000000UL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	diag("far target at %p", far);
	memcpy(far, far_code, sizeof(far_code));
	__builtin___clear_cache((char *)far, (char *)far + sizeof(far_code));
	ok(dynftrace_register_direct(&d, (unsigned long)far) == 0, "register a far direct target");
	sink = target_fn(1, 1, 1, 1, 1, 1);
	route = NULL;
	dynftrace_for_each_site_info(show, &route);
	ok(direct_hits == 4, "reached through the jump stub (%lu, %s)", direct_hits, route);
	dynftrace_unregister_ops(&d);
	dynftrace_free_filter(&d);
	dynftrace_free_filter(&d2);
	return tap_done();
}
