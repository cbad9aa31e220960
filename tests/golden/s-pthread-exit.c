// SPDX-License-Identifier: MIT
/*
 * s-pthread-exit: a thread leaves with pthread_exit() from a nested
 * function: its open frames end there, unwound (unlike exit(), s-exit).
 */
#include <pthread.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void leave_thread(void)
{
	sink++;
	pthread_exit(0);
}
NOINLINE void nested(void)
{
	leave_thread();
	sink++;
}
NOINLINE void *thread_main(void *arg)
{
	(void)arg;
	nested();
	sink++;
	return 0;
}
NOINLINE void after_join(void)
{
	sink++;
}

int main(void)
{
	pthread_t t;

	pthread_create(&t, 0, thread_main, 0);
	pthread_join(t, 0);
	after_join();
	return 0;
}
