/*
 * attach-target: a service that was not started under dynftrace (built
 * with entry sites, not linked with the runtime), for tests/sh/attach.sh.
 * Workers compute a result whose exact value is known; other threads wait
 * in read, nanosleep, a futex, epoll_wait, or run with every signal
 * blocked. Anything wrong is printed as a line starting with "BAD"; "ready"
 * once everything runs. Options: --seccomp (an allow-all filter),
 * --nondumpable, --fork (a thread forks and execs every 100 ms).
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
static volatile unsigned long rounds;
static volatile unsigned long zero; /* read every round: no call can be hoisted */

NOINLINE unsigned long at_leaf(unsigned long x)
{
	return x * 3 + 1;
}

NOINLINE unsigned long at_mid(unsigned long x)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < 10; i++)
		s += at_leaf(x + i);
	return s;
}

NOINLINE unsigned long at_round(unsigned long base)
{
	unsigned long s = 0;
	for (unsigned long x = base; x < base + 1000; x++)
		s += at_mid(x);
	return s;
}

static void bad(const char *what)
{
	printf("BAD %s\n", what);
	fflush(stdout);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		/* sum over x < 1000 of 30x + 145 */
		if (at_round(zero) != 15130000ul)
			bad("wrong result");
		__atomic_add_fetch(&rounds, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *blocker(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		if (at_round(zero) != 15130000ul)
			bad("wrong result with all signals blocked");
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = {0, 20000000};
		if (nanosleep(&ts, NULL))
			bad(errno == EINTR ? "EINTR in nanosleep" : "nanosleep failed");
	}
	return NULL;
}

static int pfd[2];
static void *reader(void *arg)
{
	(void)arg;
	char c;
	for (;;) {
		ssize_t r = read(pfd[0], &c, 1);
		if (r < 0)
			bad(errno == EINTR ? "EINTR in read" : "read failed");
	}
	return NULL;
}

static int futex_word;
static void *futexer(void *arg)
{
	(void)arg;
	for (;;) {
		long r = syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		if (r < 0 && errno != EAGAIN)
			bad(errno == EINTR ? "EINTR in futex" : "futex failed");
	}
	return NULL;
}

static void *epoller(void *arg)
{
	(void)arg;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};
	int q[2];
	if (pipe(q) || epoll_ctl(ep, EPOLL_CTL_ADD, q[0], &ev))
		bad("epoll setup");
	for (;;) {
		struct epoll_event out;
		if (epoll_wait(ep, &out, 1, -1) < 0)
			bad(errno == EINTR ? "EINTR in epoll_wait" : "epoll_wait failed");
	}
	return NULL;
}

static void *forker(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
		pid_t p = fork();
		if (p == 0) {
			if (at_round(zero) != 15130000ul)
				_exit(3);
			execl("/bin/true", "true", (char *)NULL);
			_exit(4);
		}
		int st;
		if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
			bad("forked child failed");
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int do_fork = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seccomp")) {
			struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
			struct sock_fprog prog = {1, &allow};
			if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
			    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
				bad("seccomp");
		} else if (!strcmp(argv[i], "--nondumpable")) {
			prctl(PR_SET_DUMPABLE, 0);
		} else if (!strcmp(argv[i], "--fork")) {
			do_fork = 1;
		}
	}
	if (pipe(pfd))
		return 1;
	void *(*fns[])(void *) = {worker, worker, blocker, sleeper, reader, futexer, epoller};
	pthread_t t;
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		if (pthread_create(&t, NULL, fns[i], NULL))
			return 1;
	if (do_fork && pthread_create(&t, NULL, forker, NULL))
		return 1;
	while (__atomic_load_n(&rounds, __ATOMIC_RELAXED) < 4)
		usleep(1000);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
