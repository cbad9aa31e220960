/*
 * sigframe-target: threads that sit inside signal handlers while `dynftrace
 * attach` and `detach` stop them (built with entry sites, not linked with
 * the runtime), for tests/cross/system/guest.sh (aarch64: a signal frame
 * there holds no restorer address, the agent finds it by its records).
 *
 *  - The parker calls park_svc (tgkill of itself, SIGUSR2); the handler
 *    rewrites the interrupted pc saved in its signal frame to sf_entry + 4,
 *    between the two NOPs of sf_entry's site (x30 still returns to the
 *    parker; once an attach made the first `mov x9, x30`, x9 as if it ran), prints "parked N" and
 * waits in read() for a byte. An attach must move that saved pc past the site: once tracing patches
 * the site
 *    (`mov x9, x30; bl`), resuming between its instructions would run the
 *    `bl` with a stale x9. The handler returns (the test writes 'w'): sf_entry's body runs as if
 *    park_svc had called it and returns 42 ("park N 42"). Then the parker
 *    calls sf_entry once itself, which a trace sees ("call N 42 spins S
 *    ticks T"), and waits in read() for a 'g' before parking again.
 *  - Two spinners enter a SIGUSR1 handler that never returns: it calls the
 *    traced sf_round in a loop (1 ms apart) and checks its result.
 *  - A ticker calls sf_round in a loop, interrupted every millisecond of
 *    its CPU time by SIGALRM, whose handler calls sf_leaf: a stop may
 *    find a frame whose saved pc is anywhere, in trampolines too.
 *  - The holder waits for an 'h', then calls sf_hold, which calls the leaf
 *    sf_hold_leaf, which waits in read(2) for an 'x' ("held N 1"): under
 *    function_graph both returns are hooked, sf_hold's in its frame
 *    record, the leaf's in x30, and a detach must put both back.
 * Anything wrong prints "BAD ..."; "ready PID PFD HFD" once the parker
 * parked and every other thread runs (PFD, HFD: the write ends of the
 * parker's and the holder's pipes, for the test to open in /proc/PID/fd).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define NOSITE	 __attribute__((patchable_function_entry(0, 0)))

static volatile unsigned long zero;
static unsigned long spins, ticks;
static int pfd[2], hfd[2];

NOINLINE unsigned long sf_leaf(unsigned long x)
{
	return x * 3 + 1;
}

NOINLINE unsigned long sf_round(unsigned long base)
{
	unsigned long s = 0;
	for (unsigned long x = base; x < base + 100; x++)
		s += sf_leaf(x);
	return s;
}
/* sum over x < 100 of 3x + 1 */
#define ROUND 14950ul

NOINLINE long sf_entry(void)
{
	return 42;
}

/* A leaf that waits in read(2) by itself: its return address stays in
 * x30 while it waits. */
NOINLINE long sf_hold_leaf(int fd, char *c)
{
	register long x0 __asm__("x0") = fd;
	register long x1 __asm__("x1") = (long)c;
	register long x2 __asm__("x2") = 1;
	register long x8 __asm__("x8") = SYS_read;
	__asm__ volatile("svc #0" : "+r"(x0) : "r"(x1), "r"(x2), "r"(x8) : "memory");
	return x0;
}

/* Not a leaf: its return address waits in its frame record. */
NOINLINE long sf_hold(int fd)
{
	char c = 0;
	long r = sf_hold_leaf(fd, &c);
	return r == 1 && c == 'x' ? 1 : -1;
}

static void bad(const char *what, long v)
{
	printf("BAD %s: %ld\n", what, v);
	fflush(stdout);
}

#ifdef __aarch64__
/* tgkill(x0, x1, x2), returning where the caller's x30 says */
long park_svc(long pid, long tid, long sig);
__asm__(".text\n.globl park_svc\n.type park_svc,%function\n"
	"park_svc:\n"
	"	mov x8, #131\n" /* __NR_tgkill */
	"	svc #0\n"
	"	ret\n"
	".size park_svc,.-park_svc\n");
#define SET_PC(uc, to) ((ucontext_t *)(uc))->uc_mcontext.pc = (to)
#define SET_X9(uc)                                                                                 \
	((ucontext_t *)(uc))->uc_mcontext.regs[9] = ((ucontext_t *)(uc))->uc_mcontext.regs[30]
#else
#error "sigframe-target parks a thread between the NOPs of an aarch64 site"
#endif

static volatile int parked;

/* sf_entry's first instruction: a NOP until an attach makes it
 * `mov x9, x30` (for good), its second a NOP whenever tracing is off. */
#define A64_NOP	   0xd503201fu
#define A64_MOV_X9 0xaa1e03e9u /* mov x9, x30 */

NOSITE static void on_park(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si;
	uint32_t w[2];
	memcpy(w, (const void *)(uintptr_t)sf_entry, sizeof(w));
	if ((w[0] != A64_NOP && w[0] != A64_MOV_X9) || w[1] != A64_NOP) {
		bad("sf_entry's site is not as parked", (long)w[0]);
		return; /* park_svc returns 0: BAD again */
	}
	/* as if the thread had run the first instruction */
	SET_PC(uc, (uintptr_t)sf_entry + 4);
	if (w[0] == A64_MOV_X9)
		SET_X9(uc);
	char line[32];
	int n = snprintf(line, sizeof(line), "parked %d\n", ++parked);
	if (write(1, line, (size_t)n) != n)
		bad("write", n);
	char c;
	if (read(pfd[0], &c, 1) != 1 || c != 'w')
		bad("read in the handler", c);
}

static void *parker(void *arg)
{
	(void)arg;
	for (int n = 1;; n++) {
		long r = park_svc(getpid(), syscall(SYS_gettid), SIGUSR2);
		printf("park %d %ld\n", n, r);
		fflush(stdout);
		if (r != 42)
			bad("park", r);
		r = sf_entry();
		printf("call %d %ld spins %lu ticks %lu\n", n, r,
		       __atomic_load_n(&spins, __ATOMIC_RELAXED),
		       __atomic_load_n(&ticks, __ATOMIC_RELAXED));
		fflush(stdout);
		char c;
		if (read(pfd[0], &c, 1) != 1 || c != 'g')
			bad("read", c);
	}
	return NULL;
}

NOSITE static void on_spin(int sig)
{
	(void)sig;
	for (;;) {
		if (sf_round(zero) != ROUND)
			bad("wrong result in a handler", 0);
		__atomic_add_fetch(&spins, 1, __ATOMIC_RELAXED);
		struct timespec ts = {0, 1000000}; /* leave the emulated CPUs some time */
		nanosleep(&ts, NULL);
	}
}

static void *spinner(void *arg)
{
	(void)arg;
	raise(SIGUSR1); /* this thread's own: never comes back */
	bad("the spinning handler returned", 0);
	return NULL;
}

NOSITE static void on_tick(int sig)
{
	(void)sig;
	if (sf_leaf(zero) != 1)
		bad("wrong result in the tick handler", 0);
	__atomic_add_fetch(&ticks, 1, __ATOMIC_RELAXED);
}

static void *holder(void *arg)
{
	(void)arg;
	for (int n = 1;; n++) {
		char c;
		if (read(hfd[0], &c, 1) != 1 || c != 'h')
			bad("read", c);
		long r = sf_hold(hfd[0]);
		printf("held %d %ld\n", n, r);
		fflush(stdout);
		if (r != 1)
			bad("hold", r);
	}
	return NULL;
}

static void *ticker(void *arg)
{
	(void)arg;
	timer_t tm;
	struct sigevent ev;
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD_ID;
	ev.sigev_signo = SIGALRM;
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	struct itimerspec its = {{0, 1000000}, {0, 1000000}};
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &tm) || timer_settime(tm, 0, &its, NULL))
		bad("timer", 0);
	for (;;)
		if (sf_round(zero) != ROUND)
			bad("wrong result", 0);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sa.sa_sigaction = on_park;
	sigaction(SIGUSR2, &sa, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_spin;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_tick;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	if (pipe(pfd) || pipe(hfd))
		return 1;
	pthread_t t;
	void *(*fns[])(void *) = {parker, spinner, spinner, ticker, holder};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (pthread_create(&t, NULL, fns[i], NULL))
			return 1;
	while (!__atomic_load_n(&parked, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&spins, __ATOMIC_RELAXED) ||
	       !__atomic_load_n(&ticks, __ATOMIC_RELAXED))
		usleep(1000);
	printf("ready %d %d %d\n", (int)getpid(), pfd[1], hfd[1]);
	fflush(stdout);
	for (;;)
		pause();
}
