/*
 * libc_calls: THREADS threads each call malloc, free and read COUNT times
 * (read: one byte of /dev/zero), then the process prints the calls it made
 * with write(2): no stdio, whose buffers would call malloc and read too.
 * Built with plain gcc (no dynftrace flags): libc's functions are traced
 * through relocated entries (tests/sh/entries.sh).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long count;
static int zero_fd;

static void *worker(void *arg)
{
	uintptr_t sum = (uintptr_t)arg;
	for (long i = 0; i < count; i++) {
		char *p = malloc(24 + (size_t)(i & 7));
		char c = 1;
		if (!p || read(zero_fd, &c, 1) != 1 || c)
			abort();
		p[0] = (char)i;
		sum += (unsigned char)p[0];
		free(p);
	}
	return (void *)sum;
}

static void put_num(char **p, long v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*(*p)++ = tmp[--n];
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	count = argc > 2 ? atol(argv[2]) : 1000;
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (zero_fd < 0 || threads < 1 || threads > 64)
		return 2;
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	char line[64], *p = line;
	memcpy(p, "calls ", 6);
	p += 6;
	put_num(&p, threads * count);
	*p++ = '\n';
	return write(1, line, (size_t)(p - line)) == p - line ? 0 : 1;
}
