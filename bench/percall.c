/* SPDX-License-Identifier: MIT */
/*
 * percall - cost of one traced call, measured inside the process so that a
 * busy machine does not blur it: W windows of K calls of leaf(), each window
 * timed with CLOCK_MONOTONIC; the fastest window is the figure (a window
 * that was preempted or shared the core is slower, never faster). Prints
 * "percall NS" (ns per call of the loop, tracer included) and the checksum.
 * Run untraced and under a tracer on the same binary; the difference is the
 * tracer's cost per call (entry + exit for a graph tracer). With
 * PERCALL_GO=FIFO it waits for a line on FIFO first (a tracer switched on
 * live, bench/percall.sh); "percall W K wait" prints "ready" and measures
 * only after SIGUSR1 (a tracer attaches meanwhile, bench/attach.sh).
 * "percall W K rdtsc" times K bare rdtsc instead of K calls: the floor of
 * one timestamp, the yardstick of a graph tracer's two per call.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
static volatile long sink;

NOINLINE long leaf(long x)
{
	return x * 3 + sink;
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	long windows = argc > 1 ? atol(argv[1]) : 200;
	long k = argc > 2 ? atol(argv[2]) : 20000;
	if (argc > 3 && !strcmp(argv[3], "wait")) {
		sigset_t usr1;
		int sig;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		printf("ready\n");
		fflush(stdout);
		sigwait(&usr1, &sig);
	}
	double best = 1e30;
	long s = 0;
	if (argc > 3 && !strcmp(argv[3], "rdtsc")) {
		for (long w = 0; w < windows; w++) {
			double t0 = now_ns();
			for (long i = 0; i < k; i++)
				s += (long)__builtin_ia32_rdtsc();
			double t = (now_ns() - t0) / (double)k;
			if (t < best)
				best = t;
		}
		printf("percall %.2f\nchecksum %ld\n", best, s & 1);
		return 0;
	}
	const char *go = getenv("PERCALL_GO");
	if (go) {
		char c;
		int fd = open(go, O_RDONLY);
		if (fd < 0 || read(fd, &c, 1) != 1)
			return 1;
		close(fd);
	}
	for (long w = 0; w < windows; w++) {
		double t0 = now_ns();
		for (long i = 0; i < k; i++)
			s += leaf(i);
		double t = (now_ns() - t0) / (double)k;
		if (t < best)
			best = t;
	}
	printf("percall %.2f\nchecksum %ld\n", best, s);
	return 0;
}
