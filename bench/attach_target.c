/*
 * attach_target THREADS: a service for bench/attach.sh, not linked with the
 * runtime: THREADS threads call every generated function (tests/gen) in
 * turn, without end; half of them sleep 1 ms between rounds (a service's
 * mix of busy and waiting threads). Prints "ready".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

extern const unsigned long gen_nfuncs;
extern unsigned long (*const gen_funcs[])(unsigned long);
static volatile unsigned long sink;

static void *run(void *arg)
{
	int sleeper = (int)(long)arg & 1;
	for (unsigned long r = 0;; r++) {
		for (unsigned long i = 0; i < gen_nfuncs; i++)
			sink += gen_funcs[i](r);
		if (sleeper) {
			struct timespec ts = {0, 1000000};
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t t;
	for (int i = 1; i < n; i++)
		pthread_create(&t, NULL, run, (void *)(long)i);
	printf("ready\n");
	fflush(stdout);
	run((void *)0L); /* the main thread is one of them */
	return 0;
}
