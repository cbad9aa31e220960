// SPDX-License-Identifier: MIT
/*
 * s-threads: two threads, one after the other (joined before the next one
 * starts, so the merged trace has one order), each calling traced code.
 */
#include <pthread.h>
#include "golden.h"

GOLDEN_SINK;

NOINLINE void work(int n)
{
	sink += n;
}
NOINLINE void *thread_main(void *arg)
{
	work((int)(long)arg);
	work(1);
	sink++;
	return 0;
}
NOINLINE void spawn(long n)
{
	pthread_t t;

	pthread_create(&t, 0, thread_main, (void *)n);
	pthread_join(t, 0);
	sink++;
}

int main(void)
{
	spawn(1);
	spawn(2);
	work(3);
	return 0;
}
