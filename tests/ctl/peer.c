/* SPDX-License-Identifier: MIT */
/*
 * peer.c - a raw control-socket client for the control tests: sends its
 * standard input to the socket PATH as is, closes its writing side and
 * prints every byte of the answer (until the runtime closes, or 10 s).
 *
 *   peer [-u UID] PATH
 *
 * -u UID (root only): connect with effective uid UID, as another user
 * would, while path lookup still runs as root (setfsuid(0)): so the
 * runtime's SO_PEERCRED check, not the directory's mode, must refuse it.
 * Exit status: 0 connected, 2 could not connect (reason on stderr).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int uid = -1, i = 1;
	if (argc >= 3 && !strcmp(argv[1], "-u")) {
		uid = atoi(argv[2]);
		i = 3;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: peer [-u UID] PATH\n");
		return 2;
	}
	static char req[1 << 20];
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(req) && (r = read(0, req + n, sizeof(req) - n)) > 0)
		n += (size_t)r;
	if (uid >= 0) {
		if (seteuid((uid_t)uid)) {
			perror("peer: seteuid");
			return 2;
		}
		setfsuid(0);
	}
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", argv[i]);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "peer: connect %s: %s\n", argv[i], strerror(errno));
		return 2;
	}
	size_t off = 0;
	while (off < n) {
		r = send(fd, req + off, n - off, MSG_NOSIGNAL);
		if (r <= 0)
			break; /* the runtime may close early: print its answer */
		off += (size_t)r;
	}
	shutdown(fd, SHUT_WR);
	char buf[65536];
	struct pollfd p = {.fd = fd, .events = POLLIN};
	while (poll(&p, 1, 10000) > 0 && (r = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)r, stdout);
	return 0;
}
