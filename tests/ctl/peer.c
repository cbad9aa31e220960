/* SPDX-License-Identifier: MIT */
/*
 * peer.c - a raw control-socket client for the control tests: sends its
 * standard input to the socket PATH as is, closes its writing side and
 * prints every byte of the answer, until the runtime closes.
 *
 *   peer [-u UID] [-t SECONDS] [-H] PATH
 *
 * It reads the answers while it sends. The runtime answers requests in
 * order and takes the next request only once the previous answer has left
 * (docs/CONTROL.md, "Protocol"), so a client that sends a whole batch
 * before reading anything deadlocks as soon as the batch outgrows the
 * socket buffers: the client blocks in send() because the runtime no longer
 * reads, the runtime waits in poll() for room to write, and nothing moves.
 * Only ~70 tiny answers fit (each send is one socket buffer of ~3 KB of
 * kernel accounting), so this needs a batch of a few hundred KB, not an
 * exotic one; tests/ctl/pipeline.tc sends such a batch.
 *
 * -u UID (root only): connect with effective uid UID, as another user
 * would, while path lookup still runs as root (setfsuid(0)): so the
 * runtime's SO_PEERCRED check, not the directory's mode, must refuse it.
 * -t SECONDS: give up when nothing could be sent or received for that long
 * (default 10; 0: never), with a message on stderr.
 * -H (hold): send the whole input without reading, then stop (SIGSTOP)
 * before reading anything: the test continues it (SIGCONT) once the runtime
 * is where it wants it. The input must fit in the socket buffers (a send
 * that would block ends the hold, with a message on stderr).
 * Exit status: 0 the runtime closed, 2 could not connect (reason on
 * stderr), 3 gave up after -t SECONDS without progress.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static char req[16 << 20];

int main(int argc, char **argv)
{
	int uid = -1, idle_s = 10, hold = 0, i = 1;
	for (; i + 1 < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-H"))
			hold = 1;
		else if (!strcmp(argv[i], "-u"))
			uid = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-t"))
			idle_s = atoi(argv[++i]);
		else
			break;
	}
	if (i + 1 != argc) {
		fprintf(stderr, "usage: peer [-u UID] [-t SECONDS] [-H] PATH\n");
		return 2;
	}
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
	int wr_open = 1;
	static char buf[65536];
	while (hold && off < n) {
		r = send(fd, req + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r > 0) {
			off += (size_t)r;
		} else if (r < 0 && errno == EINTR) {
			continue;
		} else {
			fprintf(stderr, "peer: -H: %zu of %zu bytes sent before %s; not holding\n",
				off, n, r < 0 ? strerror(errno) : "a zero send");
			hold = 0;
		}
	}
	if (hold) {
		shutdown(fd, SHUT_WR);
		wr_open = 0;
		raise(SIGSTOP); /* nothing read yet: the test continues us */
	}
	/* Send and receive at once (see above): never block in send(). */
	for (;;) {
		if (wr_open && off == n) {
			shutdown(fd, SHUT_WR);
			wr_open = 0;
		}
		struct pollfd p = {.fd = fd, .events = POLLIN | (wr_open ? POLLOUT : 0)};
		int k = poll(&p, 1, idle_s > 0 ? idle_s * 1000 : -1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k == 0) {
			fprintf(stderr,
				"peer: nothing sent or received for %d s (%zu of %zu bytes sent)\n",
				idle_s, off, n);
			return 3;
		}
		if (k < 0)
			break;
		if (wr_open && (p.revents & (POLLOUT | POLLERR | POLLHUP))) {
			r = send(fd, req + off, n - off, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (r > 0)
				off += (size_t)r;
			else if (r < 0 && errno != EAGAIN && errno != EINTR)
				off = n; /* the runtime closed early: print its answer */
		}
		if (p.revents & (POLLIN | POLLERR | POLLHUP)) {
			r = read(fd, buf, sizeof(buf));
			if (r < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (r <= 0)
				break;
			fwrite(buf, 1, (size_t)r, stdout);
		}
	}
	return 0;
}
