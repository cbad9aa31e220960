/*
 * stack-align: traced functions entered with %rsp 8 off the ABI's 16-byte
 * alignment, as gcc calls a local function that needs no alignment
 * (-fipa-stack-alignment, on by default: the caller pushes an odd number of
 * registers and calls). Code the runtime runs from such an entry must see
 * an aligned stack all the same, or the first movaps to its stack faults.
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

/* Counts a frame whose entry %rsp was not 8 mod 16 (its frame pointer, the
 * entry %rsp less the saved %rbp, is then not 0 mod 16). */
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

/* misaligned_call(fn, arg): fn(arg) entered with %rsp 0 mod 16 (the ABI
 * says 8). */
long misaligned_call(long (*fn)(long), long arg);
__asm__(".text\n"
	".globl misaligned_call\n"
	".type misaligned_call, @function\n"
	"misaligned_call:\n"
	"	.cfi_startproc\n"
	"	movq %rdi, %rax\n"
	"	movq %rsi, %rdi\n"
	"	call *%rax\n" /* %rsp was 8 mod 16 here: fn's entry sees 0 */
	"	ret\n"
	"	.cfi_endproc\n"
	".size misaligned_call, . - misaligned_call\n");

static NOINLINE long call_twice(long x)
{
	long (*volatile f)(long) = sa_leaf;
	return misaligned_call(f, x) + f(x);
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
	long n = (long)arg, sum = misaligned_call(sa_leaf, n); /* the first traced call */
	long (*volatile mid)(long) = sa_mid;
	for (long k = 0; k < 50; k++)
		sum += misaligned_call(mid, k) + call_twice(k);
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
