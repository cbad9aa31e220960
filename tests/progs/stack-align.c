/*
 * stack-align: traced functions entered with %rsp 8 off the ABI's 16-byte
 * alignment, as gcc calls a local function that needs no alignment
 * (-fipa-stack-alignment, on by default: the caller pushes an odd number of
 * registers and calls). Code the runtime runs from such an entry must see
 * an aligned stack all the same, or the first movaps to its stack faults.
 *
 * riscv64: the psABI requires sp 16-aligned at every entry and the
 * compilers never enter a function otherwise (nothing like x86-64's
 * -fipa-stack-alignment), so there is no misaligned entry to make; the
 * same program checks that the runtime keeps that alignment from the
 * trampolines into its C code and the callbacks (nothing in the hardware
 * would catch it there: misaligned accesses work, slowly, or are
 * emulated). SKEWED_CALL is then an ordinary call. (aarch64: see
 * tests/cross/sh-skip.)
 *
 *   stack-align ops     user ops on each route (list, per-ops trampoline,
 *                       light GPR_ONLY body): the callback's frame is
 *                       checked, after misaligned and aligned calls
 *   stack-align threads N  N threads whose first traced call (the one that
 *                       makes the thread's shadow stack and ring buffer:
 *                       mmap) is misaligned, then more calls both ways;
 *                       run under `dynftrace record`
 *
 * The runtime's own C code is checked through mmap, which this program
 * defines (it comes before the C library's): a frame of the runtime's that
 * calls mmap from a misaligned entry is a misaligned frame here.
 * Prints "misaligned N" (N must be 0) and the calls made.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <dynftrace/dynftrace.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long misaligned, frames_checked;

/* Counts a frame whose entry stack pointer was off the ABI's alignment:
 * its frame address is then not 0 mod 16 (x86-64: the entry %rsp, 8 mod
 * 16, less the saved %rbp; riscv64: s0, the entry sp). */
static NOINLINE void check_frame(uintptr_t fp)
{
	__atomic_fetch_add(&frames_checked, 1, __ATOMIC_RELAXED);
	if (fp & 15)
		__atomic_fetch_add(&misaligned, 1, __ATOMIC_RELAXED);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	check_frame((uintptr_t)__builtin_frame_address(0));
	long r = syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	return r < 0 && r > -4096 ? MAP_FAILED : (void *)r;
}

NOINLINE long sa_leaf(long x)
{
	return x * 3 + 1;
}

NOINLINE long sa_mid(long x)
{
	return sa_leaf(x) + 1;
}

#if defined(__x86_64__)
/* skewed_call(fn, arg): fn(arg) entered with %rsp 0 mod 16 (the ABI says
 * 8). */
long skewed_call(long (*fn)(long), long arg);
__asm__(".text\n"
	".globl skewed_call\n"
	".type skewed_call, @function\n"
	"skewed_call:\n"
	"	.cfi_startproc\n"
	"	movq %rdi, %rax\n"
	"	movq %rsi, %rdi\n"
	"	call *%rax\n" /* %rsp was 8 mod 16 here: fn's entry sees 0 */
	"	ret\n"
	"	.cfi_endproc\n"
	".size skewed_call, . - skewed_call\n");
#else
/* No misaligned entry exists here (see above): an ordinary call, not
 * traced itself (the callee's is the call checked). */
__attribute__((patchable_function_entry(0, 0))) static NOINLINE long skewed_call(long (*fn)(long),
										 long arg)
{
	long (*volatile f)(long) = fn;
	return f(arg);
}
#endif

static NOINLINE long call_twice(long x)
{
	long (*volatile f)(long) = sa_leaf;
	return skewed_call(f, x) + f(x);
}

static void cb(unsigned long ip, unsigned long parent, struct dynftrace_ops *op,
	       struct dynftrace_regs *regs)
{
	(void)ip, (void)parent, (void)op, (void)regs;
	check_frame((uintptr_t)__builtin_frame_address(0));
}

static int run_ops(void)
{
	static const struct {
		unsigned routes;
		unsigned long flags;
		const char *name;
	} cases[] = {
	    {DYNFTRACE_ROUTE_LIST, 0, "list"},
	    {DYNFTRACE_ROUTE_TRAMP, 0, "per-ops trampoline"},
	    {DYNFTRACE_ROUTE_TRAMP, DYNFTRACE_OPS_FL_GPR_ONLY, "light per-ops body"},
	};
	int bad = 0;
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct dynftrace_ops ops = {.func = cb, .flags = cases[i].flags};
		int err = dynftrace_set_routes(cases[i].routes);
		if (!err)
			err = dynftrace_set_filter(&ops, "sa_leaf", 1);
		if (!err)
			err = dynftrace_register_ops(&ops);
		if (err) {
			printf("%s: cannot trace sa_leaf: %s\n", cases[i].name, strerror(-err));
			return 1;
		}
		unsigned long before = frames_checked, mis = misaligned;
		long sum = 0;
		for (int k = 0; k < 100; k++)
			sum += call_twice(k);
		dynftrace_unregister_ops(&ops);
		dynftrace_free_filter(&ops);
		unsigned long n = frames_checked - before, m = misaligned - mis;
		printf("%s: %lu callbacks, %lu misaligned, sum %ld\n", cases[i].name, n, m, sum);
		bad |= n != 200 || m || sum != 29900;
	}
	dynftrace_set_routes(DYNFTRACE_ROUTE_TRAMP | DYNFTRACE_ROUTE_CALL_OPS);
	return bad;
}

/* Not traced itself: the thread's first traced call is the misaligned one. */
__attribute__((patchable_function_entry(0, 0))) static void *worker(void *arg)
{
	long n = (long)arg, sum = skewed_call(sa_leaf, n); /* the first traced call */
	long (*volatile mid)(long) = sa_mid;
	for (long k = 0; k < 50; k++)
		sum += skewed_call(mid, k) + call_twice(k);
	return (void *)sum;
}

static int run_threads(int n)
{
	long total = 0;
	for (int i = 0; i < n; i++) {
		pthread_t t;
		void *r;
		if (pthread_create(&t, NULL, worker, (void *)(long)i) || pthread_join(t, &r)) {
			printf("cannot run thread %d\n", i);
			return 1;
		}
		total += (long)r;
	}
	printf("threads %d sum %ld\n", n, total);
	return 0;
}

int main(int argc, char **argv)
{
	int bad;
	if (argc > 1 && !strcmp(argv[1], "ops"))
		bad = run_ops();
	else if (argc > 2 && !strcmp(argv[1], "threads"))
		bad = run_threads(atoi(argv[2]));
	else {
		fprintf(stderr, "usage: stack-align ops | threads N\n");
		return 2;
	}
	printf("misaligned %lu of %lu frames\n", misaligned, frames_checked);
	return bad || misaligned;
}
