/* SPDX-License-Identifier: MIT */
/*
 * silent.c - a control socket that never answers, for the control tests:
 * listens on DIR/PID.sock (its own pid, as the runtime names its socket)
 * and then does nothing until it is killed.
 *
 *   silent [-f] DIR
 *
 * Without -f it takes every connection and reads nothing: a client's
 * connect and send succeed and its answer never comes. With -f it never
 * takes one and its queue is full (a backlog of 0 holds the one connection
 * it makes to itself): a client's connect cannot complete. Prints
 * "ready PID" once listening.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int full = argc == 3 && !strcmp(argv[1], "-f");
	if (argc != 2 + full) {
		fprintf(stderr, "usage: silent [-f] DIR\n");
		return 2;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", argv[argc - 1], (int)getpid());
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	unlink(sa.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, full ? 0 : 16)) {
		fprintf(stderr, "silent: %s: %s\n", sa.sun_path, strerror(errno));
		return 1;
	}
	int self = -1;
	if (full) {
		self = socket(AF_UNIX, SOCK_STREAM, 0);
		if (self < 0 || connect(self, (struct sockaddr *)&sa, sizeof(sa))) {
			fprintf(stderr, "silent: filling the queue: %s\n", strerror(errno));
			return 1;
		}
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	int conns = 0;
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (full || poll(&p, 1, -1) < 0)
			pause();
		else if (accept(fd, NULL, NULL) >= 0)
			conns++; /* kept open, never read */
	}
	(void)conns;
}
