/* SPDX-License-Identifier: MIT */
/*
 * client.c - the soak test's load generator (tests/sh/soak.sh): C threads,
 * each with one connection to 127.0.0.1:PORT, send GET requests (proto.h)
 * in batches of B and check every answer against the reference. It stops
 * after N requests in all, after S seconds, or at SIGTERM/SIGINT, and
 * prints one line:
 *
 *   requests R failures F wrong W seconds T rps X
 *
 * failures: connection errors and missing answers; wrong: answers that
 * differ from the reference. Exit 0 when both are 0.
 *
 *   client -p PORT [-c CONNS] [-n TOTAL] [-t SECONDS] [-b BATCH]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

static int port, batch = 8;
static long total = 1000000000L;
static double seconds = 10;
static long issued, done_ok, failures, wrong; /* atomic */
static volatile sig_atomic_t stop;
static double t0;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void make_key(unsigned long seq, char *key, size_t *len)
{
	static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned long x = seq * 2654435761ul + 12345;
	*len = 8 + (size_t)(seq % 40);
	for (size_t i = 0; i < *len; i++) {
		x = x * 6364136223846793005ul + 1442695040888963407ul;
		key[i] = al[(x >> 33) % 36];
	}
	key[*len] = 0;
}

static void *conn_main(void *arg)
{
	long id = (long)arg;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int one = 1;
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "client %ld: connect: %s\n", id, strerror(errno));
		return NULL;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	char req[128 * 80], resp[128 * 80];
	unsigned long seqs[128];
	uint64_t want[128];
	for (;;) {
		if (stop || now() - t0 > seconds)
			break;
		long first = __atomic_fetch_add(&issued, batch, __ATOMIC_RELAXED);
		if (first >= total)
			break;
		int nb = (int)(total - first < batch ? total - first : batch);
		size_t rl = 0;
		for (int i = 0; i < nb; i++) {
			char key[80];
			size_t kl;
			seqs[i] = (unsigned long)(first + i);
			make_key(seqs[i], key, &kl);
			want[i] = soak_reference(key, kl);
			rl += (size_t)snprintf(req + rl, sizeof(req) - rl, "GET %lu %s\n", seqs[i],
					       key);
		}
		size_t off = 0;
		while (off < rl) {
			ssize_t w = send(fd, req + off, rl - off, MSG_NOSIGNAL);
			if (w <= 0 && errno != EINTR)
				goto broken;
			if (w > 0)
				off += (size_t)w;
		}
		/* nb answer lines */
		size_t have = 0;
		int lines = 0;
		while (lines < nb) {
			ssize_t r = recv(fd, resp + have, sizeof(resp) - 1 - have, 0);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				goto broken;
			for (ssize_t k = 0; k < r; k++)
				lines += resp[have + (size_t)k] == '\n';
			have += (size_t)r;
		}
		resp[have] = 0;
		char *p = resp;
		for (int i = 0; i < nb; i++) {
			unsigned long s;
			unsigned long long v;
			if (sscanf(p, "VAL %lu %llx", &s, &v) != 2 || s != seqs[i] ||
			    v != want[i]) {
				if (__atomic_fetch_add(&wrong, 1, __ATOMIC_RELAXED) < 5)
					fprintf(stderr, "wrong answer to %lu: %.60s\n", seqs[i], p);
			} else {
				__atomic_fetch_add(&done_ok, 1, __ATOMIC_RELAXED);
			}
			p = strchr(p, '\n') + 1;
		}
	}
	close(fd);
	return NULL;
broken:
	__atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
	fprintf(stderr, "client %ld: connection broken: %s\n", id, strerror(errno));
	close(fd);
	return NULL;
}

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	int conns = 4, opt;
	while ((opt = getopt(argc, argv, "p:c:n:t:b:")) != -1) {
		switch (opt) {
		case 'p':
			port = atoi(optarg);
			break;
		case 'c':
			conns = atoi(optarg);
			break;
		case 'n':
			total = atol(optarg);
			break;
		case 't':
			seconds = atof(optarg);
			break;
		case 'b':
			batch = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: client -p PORT [-c CONNS] [-n TOTAL] [-t SECONDS] "
					"[-b BATCH]\n");
			return 2;
		}
	}
	if (port <= 0 || conns < 1 || conns > 256 || batch < 1 || batch > 128) {
		fprintf(stderr, "client: bad arguments\n");
		return 2;
	}
	struct sigaction act = {.sa_handler = on_stop};
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	pthread_t t[256];
	t0 = now();
	for (long i = 0; i < conns; i++)
		pthread_create(&t[i], NULL, conn_main, (void *)i);
	for (int i = 0; i < conns; i++)
		pthread_join(t[i], NULL);
	double el = now() - t0;
	printf("requests %ld failures %ld wrong %ld seconds %.2f rps %.0f\n", done_ok, failures,
	       wrong, el, (double)done_ok / el);
	return failures || wrong ? 1 : 0;
}
