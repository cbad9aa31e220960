/*
 * entry-waits: threads that wait inside the first bytes of a function
 * built without sites, for tests/sh/attach-entries.sh: when `attach -P
 * sys_fn` relocates sys_fn's entry, one thread is blocked in the system
 * call at sys_fn + 2 (its instruction pointer inside the replaced bytes),
 * another runs a signal handler that blocks, interrupted there (the
 * pointer saved in its signal frame). Both must be moved into the block,
 * and back at detach, and go on as if nothing happened.
 *
 * sys_fn(a, b, c, nr) is syscall nr(a, b, c): `mov %ecx,%eax; syscall;
 * mov %rax,%rdx; mov %rdx,%rax; ret`. The reader calls sys_fn(read) on a
 * pipe, the signaller sys_fn(tgkill) to itself, whose SIGUSR1 handler
 * reads another pipe. Each completed wait prints "read N" or "signal N";
 * anything wrong "BAD ..."; "ready PID RFD SFD" once both wait (RFD, SFD:
 * the pipes' write ends, for the test to open in /proc/PID/fd). Workers
 * call sys_fn(getpid) in a loop and check it. SIGUSR2: the main thread
 * prints "heap N", the bytes malloc has handed out. x86-64.
 */
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

long sys_fn(long a, long b, long c, long nr);
__asm__(".text\n"
	".globl sys_fn\n.type sys_fn,@function\n"
	"sys_fn:\n"
	"	mov %ecx,%eax\n"
	"	syscall\n"
	"	mov %rax,%rdx\n"
	"	mov %rdx,%rax\n"
	"	ret\n"
	".size sys_fn,.-sys_fn\n");

static int rp[2], sp[2];
static volatile int waiting;

static void bad(const char *what, long v)
{
	printf("BAD %s: %ld\n", what, v);
	fflush(stdout);
}

static void *reader(void *arg)
{
	(void)arg;
	for (int n = 1;; n++) {
		char c;
		__atomic_fetch_or(&waiting, 1, __ATOMIC_RELEASE);
		long r = sys_fn(rp[0], (long)&c, 1, SYS_read);
		if (r != 1 || c != 'r')
			bad("read", r);
		printf("read %d\n", n);
		fflush(stdout);
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	char c;
	__atomic_fetch_or(&waiting, 2, __ATOMIC_RELEASE);
	if (read(sp[0], &c, 1) != 1 || c != 's')
		bad("read in the handler", 0);
}

static void *signaller(void *arg)
{
	(void)arg;
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	for (int n = 1;; n++) {
		long r = sys_fn(getpid(), syscall(SYS_gettid), SIGUSR1, SYS_tgkill);
		if (r != 0)
			bad("tgkill", r);
		printf("signal %d\n", n);
		fflush(stdout);
	}
	return NULL;
}

static void *worker(void *arg)
{
	(void)arg;
	long pid = getpid();
	for (;;)
		if (sys_fn(0, 0, 0, SYS_getpid) != pid)
			bad("getpid", 0);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	/* Only the signaller takes SIGUSR1, only main's sigwait SIGUSR2. */
	sigset_t usr1, usr2;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigaddset(&usr1, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	if (pipe(rp) || pipe(sp))
		return 1;
	pthread_t t;
	void *(*fns[])(void *) = {reader, signaller, worker, worker};
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (pthread_create(&t, NULL, fns[i], NULL))
			return 1;
	while (__atomic_load_n(&waiting, __ATOMIC_ACQUIRE) != 3)
		usleep(1000);
	printf("ready %d %d %d\n", (int)getpid(), rp[1], sp[1]);
	fflush(stdout);
	for (;;) {
		int sig;
		if (sigwait(&usr2, &sig))
			continue;
		struct mallinfo2 mi = mallinfo2();
		printf("heap %zu\n", mi.uordblks + mi.hblkhd);
		fflush(stdout);
	}
}
