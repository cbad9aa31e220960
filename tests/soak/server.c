/* SPDX-License-Identifier: MIT */
/*
 * server.c - the soak test's service (tests/sh/soak.sh): a loopback TCP
 * server whose worker threads answer GET requests (proto.h) through a few
 * traced functions per request. Built with the trace flags and linked with
 * the runtime; live control switches its tracing while it serves.
 *
 *   server [-w WORKERS]    prints "port N" and "ready PID", serves until
 *                          SIGTERM or SIGINT, then exits normally.
 *
 * Per request: handle_request -> parse_request -> lookup_key -> hash_round
 * (x4) -> mix -> format_response.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"

#define NOINLINE __attribute__((noinline))

static int lfd;
static volatile sig_atomic_t stopping;

NOINLINE uint64_t hash_round(const char *key, size_t len, int round)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t)round;
	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

NOINLINE uint64_t mix(uint64_t v, uint64_t h)
{
	return v ^ (h + (v << 6) + (v >> 2));
}

NOINLINE uint64_t lookup_key(const char *key, size_t len)
{
	uint64_t v = 0;
	for (int round = 0; round < 4; round++)
		v = mix(v, hash_round(key, len, round));
	return v;
}

/* "GET <seq> <key>": 0 with *SEQ, *KEY, *LEN set, or -1. */
NOINLINE int parse_request(char *line, unsigned long *seq, char **key, size_t *len)
{
	char *end;
	if (strncmp(line, "GET ", 4))
		return -1;
	*seq = strtoul(line + 4, &end, 10);
	if (end == line + 4 || *end != ' ')
		return -1;
	*key = end + 1;
	*len = strlen(*key);
	if (*len == 0 || *len > 64)
		return -1;
	for (size_t i = 0; i < *len; i++)
		if (!((*key)[i] >= 'a' && (*key)[i] <= 'z') &&
		    !((*key)[i] >= '0' && (*key)[i] <= '9'))
			return -1;
	return 0;
}

NOINLINE int format_response(char *out, size_t n, unsigned long seq, uint64_t v)
{
	return snprintf(out, n, "VAL %lu %016llx\n", seq, (unsigned long long)v);
}

NOINLINE int handle_request(char *line, char *out, size_t n)
{
	unsigned long seq = 0;
	char *key;
	size_t len;
	if (parse_request(line, &seq, &key, &len))
		return snprintf(out, n, "ERR %lu\n", seq);
	return format_response(out, n, seq, lookup_key(key, len));
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

NOINLINE static void serve_conn(int fd)
{
	char in[4096], out[8192];
	size_t have = 0;
	for (;;) {
		ssize_t r = recv(fd, in + have, sizeof(in) - 1 - have, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		size_t used = 0, olen = 0;
		char *nl;
		while ((nl = memchr(in + used, '\n', have - used))) {
			*nl = 0;
			olen += (size_t)handle_request(in + used, out + olen, sizeof(out) - olen);
			used = (size_t)(nl - in) + 1;
			if (sizeof(out) - olen < 128) {
				if (write_all(fd, out, olen))
					goto done;
				olen = 0;
			}
		}
		if (olen && write_all(fd, out, olen))
			break;
		memmove(in, in + used, have - used);
		have -= used;
		if (have == sizeof(in) - 1)
			break; /* a line too long: drop the client */
	}
done:
	close(fd);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			if (stopping)
				return NULL;
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
				continue;
			return NULL;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		serve_conn(fd);
	}
}

static void on_term(int sig)
{
	(void)sig;
	stopping = 1;
}

int main(int argc, char **argv)
{
	int nw = 4;
	if (argc == 3 && !strcmp(argv[1], "-w"))
		nw = atoi(argv[2]);
	setvbuf(stdout, NULL, _IOLBF, 0);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof(sa);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 128) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		perror("server");
		return 1;
	}
	struct sigaction act = {.sa_handler = on_term};
	sigaction(SIGTERM, &act, NULL);
	sigaction(SIGINT, &act, NULL);
	pthread_t *t = calloc((size_t)nw, sizeof(*t));
	for (int i = 0; i < nw; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	printf("port %d\nready %d\n", ntohs(sa.sin_port), (int)getpid());
	sigset_t none;
	sigemptyset(&none);
	while (!stopping)
		sigsuspend(&none);
	shutdown(lfd, SHUT_RDWR); /* wakes the workers in accept */
	for (int i = 0; i < nw; i++)
		pthread_join(t[i], NULL);
	free(t);
	printf("stopped\n");
	return 0;
}
