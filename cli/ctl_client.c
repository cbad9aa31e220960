// SPDX-License-Identifier: MIT
/*
 * ctl_client.c - the client side of the control protocol (docs/CONTROL.md)
 * for `dynftrace ctl`, `ps` and `pipe`: finding a process's socket,
 * connecting, requests and responses.
 *
 * Nothing here waits without a deadline. A process stopped by SIGSTOP,
 * Ctrl-Z or a debugger keeps its socket and its listen queue, so connecting
 * and sending succeed and only the answer never comes; a listener planted by
 * another user may do the same on purpose, and root's `ps` connects to every
 * user's endpoints. So the socket is non-blocking from the start and every
 * wait is a poll() against a CLOCK_MONOTONIC deadline (no signal, no alarm:
 * the commands' own signal handling stays as it is).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ctl_client.h"

/* ---- deadlines ------------------------------------------------------------ */

int64_t ctl_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t ctl_deadline(int64_t timeout_ns)
{
	return timeout_ns > 0 ? ctl_now_ns() + timeout_ns : 0;
}

int ctl_poll_ms(int64_t deadline)
{
	if (!deadline)
		return -1;
	int64_t left = deadline - ctl_now_ns();
	if (left <= 0)
		return 0;
	int64_t ms = (left + 999999) / 1000000; /* round up: never wake early */
	return ms > INT_MAX ? INT_MAX : (int)ms;
}

static int expired(int64_t deadline)
{
	return deadline && ctl_now_ns() >= deadline;
}

void ctl_timeout_msg(pid_t pid, int64_t timeout_ns, char *err, size_t errlen)
{
	snprintf(err, errlen, "process %d did not answer within %g s (stopped? use --timeout)",
		 (int)pid, (double)timeout_ns / 1e9);
}

/* Wait until FD is ready for EVENTS (an error or a hang-up counts: the next
 * call reports it) or DEADLINE (0: none) passes. 0, -ETIMEDOUT, -EINTR. */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = events};
		int r = poll(&p, 1, ctl_poll_ms(deadline));
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -errno;
		if (r < 0)
			return -EINTR; /* a handler ran (pipe's SIGINT): its caller decides */
		if (expired(deadline))
			return -ETIMEDOUT;
	}
}

/* ---- finding and connecting ----------------------------------------------- */

int ctl_socket_dirs(uid_t uid, const char *xdg, char dirs[][4096])
{
	int n = 0;
	if (xdg && xdg[0] == '/' && snprintf(dirs[n], 4096, "%s/dynftrace", xdg) < 4096)
		n++;
	snprintf(dirs[n++], 4096, "/tmp/dynftrace-%u", (unsigned)uid);
	return n;
}

/* XDG_RUNTIME_DIR in the environment PID started with (NULL if unknown). */
static char *proc_xdg(pid_t pid)
{
	char path[64], *buf = NULL, *res = NULL;
	size_t len = 0, cap = 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	for (;;) {
		if (len + 4096 > cap) {
			char *nb = realloc(buf, cap = cap ? 2 * cap : 8192);
			if (!nb)
				break;
			buf = nb;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	for (size_t i = 0; buf && i < len; i += strlen(buf + i) + 1) {
		buf[len] = 0;
		if (!strncmp(buf + i, "XDG_RUNTIME_DIR=", 16)) {
			res = strdup(buf + i + 16);
			break;
		}
	}
	free(buf);
	return res;
}

int ctl_connect_try(pid_t pid, const char *path, struct ctl_conn *c, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "the socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	int fd = c->fd;
	if (fd < 0)
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot make a socket: %s", strerror(errno));
		return -errno;
	}
	c->fd = fd;
	int e = 0;
	while (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && (e = errno) == EINTR)
		e = 0;
	if (e == EAGAIN) {
		snprintf(err, errlen, "the listen queue of %s is full", path);
		return -EAGAIN; /* keep the socket for the next try */
	}
	if (e) {
		ctl_close(c);
		if (e == ECONNREFUSED)
			snprintf(err, errlen,
				 "the control socket %s is stale: nothing serves it (the process "
				 "ended or exec'd a program without control)",
				 path);
		else if (e == EACCES || e == EPERM)
			snprintf(err, errlen, "permission denied: cannot reach %s", path);
		else
			snprintf(err, errlen, "cannot connect to %s: %s", path, strerror(e));
		return -e;
	}
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) || cr.pid != pid) {
		ctl_close(c);
		snprintf(err, errlen, "the control socket %s is not served by process %d", path,
			 (int)pid);
		return -EPROTO;
	}
	c->pid = pid;
	c->off = c->len = 0;
	return 0;
}

void ctl_conn_init(struct ctl_conn *c, int64_t timeout_ns)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->timeout_ns = timeout_ns;
}

int ctl_connect_path(pid_t pid, const char *path, struct ctl_conn *c, char *err, size_t errlen)
{
	int64_t deadline = ctl_deadline(c->timeout_ns);
	int64_t pause_ms = 1;
	for (;;) {
		int r = ctl_connect_try(pid, path, c, err, errlen);
		if (r != -EAGAIN)
			return r;
		/*
		 * The process has not taken the connections before ours (stopped,
		 * or a listener that never accepts). A Unix socket's full queue
		 * has no readiness event to poll for, so try again at growing
		 * intervals (1 ms to 50 ms) until the deadline.
		 */
		if (expired(deadline)) {
			ctl_close(c);
			ctl_timeout_msg(pid, c->timeout_ns, err, errlen);
			return -ETIMEDOUT;
		}
		int ms = ctl_poll_ms(deadline);
		if (ms < 0 || ms > pause_ms)
			ms = (int)pause_ms;
		poll(NULL, 0, ms);
		if (pause_ms < 50)
			pause_ms *= 2;
	}
}

int ctl_connect(pid_t pid, struct ctl_conn *c, char *err, size_t errlen)
{
	char proc[64];
	struct stat st;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (stat(proc, &st)) {
		snprintf(err, errlen, "no process %d", (int)pid);
		return -ESRCH;
	}
	if (st.st_uid != geteuid() && geteuid() != 0) {
		snprintf(err, errlen,
			 "permission denied: process %d belongs to uid %u (only that user and root "
			 "may control it)",
			 (int)pid, (unsigned)st.st_uid);
		return -EACCES;
	}
	/* Where the process made it: its runtime dir, else /tmp for its uid;
	 * ours too, in case its environment cannot be read. */
	char dirs[4][4096];
	int n = 0;
	char *xdg = proc_xdg(pid);
	n += ctl_socket_dirs(st.st_uid, xdg, dirs + n);
	free(xdg);
	if (st.st_uid == geteuid())
		n += ctl_socket_dirs(geteuid(), getenv("XDG_RUNTIME_DIR"), dirs + n);
	int first_err = 0;
	char first_msg[512] = "";
	for (int i = 0; i < n; i++) {
		char path[4200];
		struct stat ss;
		int dup = 0;
		for (int j = 0; j < i; j++)
			dup |= !strcmp(dirs[i], dirs[j]);
		snprintf(path, sizeof(path), "%s/%d.sock", dirs[i], (int)pid);
		if (dup)
			continue;
		if (lstat(path, &ss)) {
			if (errno == EACCES && !first_err) {
				first_err = -EACCES;
				snprintf(first_msg, sizeof(first_msg),
					 "permission denied: cannot reach the control socket of "
					 "process %d (uid %u)",
					 (int)pid, (unsigned)st.st_uid);
			}
			continue;
		}
		if (!S_ISSOCK(ss.st_mode))
			continue; /* not trusted: the runtime would not have made it */
		int r = ctl_connect_path(pid, path, c, err, errlen);
		if (!r || r == -ETIMEDOUT)
			return r; /* the process is there: no other socket is its */
		if (!first_err) {
			first_err = r;
			snprintf(first_msg, sizeof(first_msg), "%s", err);
		}
	}
	if (first_err) {
		snprintf(err, errlen, "%s", first_msg);
		return first_err;
	}
	snprintf(err, errlen,
		 "process %d has no control socket (start it with `dynftrace record` or with "
		 "DYNFTRACE_CONTROL=1)",
		 (int)pid);
	return -ENOENT;
}

void ctl_close(struct ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* ---- requests ------------------------------------------------------------- */

int ctl_request_line(char *line, size_t cap, const char *verb, const char *file, size_t len)
{
	int n;
	if (!strcmp(verb, "WRITE") || !strcmp(verb, "APPEND"))
		n = snprintf(line, cap, "%s %s %zu\n", verb, file, len);
	else
		n = snprintf(line, cap, "%s %s\n", verb, file);
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	return n;
}

static int send_all(int fd, const void *p, size_t n, int64_t deadline)
{
	const char *s = p;
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				return -errno;
			int r = wait_fd(fd, POLLOUT, deadline);
			if (r)
				return r;
			continue;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int ctl_send(struct ctl_conn *c, const char *verb, const char *file, const void *data, size_t len)
{
	char line[1200];
	int n = ctl_request_line(line, sizeof(line), verb, file, len);
	if (n < 0)
		return n;
	/* One deadline for the whole request: a write is at most 64 KiB. */
	int64_t deadline = ctl_deadline(c->timeout_ns);
	int err = send_all(c->fd, line, (size_t)n, deadline);
	if (!err && len)
		err = send_all(c->fd, data, len, deadline);
	return err;
}

/* ---- responses ------------------------------------------------------------ */

/* Refill the buffer, waiting at most the timeout (none once the body of an
 * untimed response began). Bytes read, 0 at the end, or -errno. */
static long conn_fill(struct ctl_conn *c)
{
	int64_t deadline = c->untimed ? 0 : ctl_deadline(c->timeout_ns);
	for (;;) {
		ssize_t r = recv(c->fd, c->buf, sizeof(c->buf), 0);
		if (r >= 0) {
			c->off = 0;
			c->len = (size_t)r;
			return (long)r;
		}
		if (errno == EINTR)
			return -EINTR;
		if (errno != EAGAIN)
			return -errno;
		int w = wait_fd(c->fd, POLLIN, deadline);
		if (w)
			return w;
	}
}

/* Next byte, or -errno (-EPIPE at the end). */
static int conn_getc(struct ctl_conn *c)
{
	if (c->off == c->len) {
		long r = conn_fill(c);
		if (r <= 0)
			return r ? (int)r : -EPIPE;
	}
	return (unsigned char)c->buf[c->off++];
}

/* A line without its newline: its length or -errno. */
static long conn_line(struct ctl_conn *c, char *line, size_t cap)
{
	size_t n = 0;
	for (;;) {
		int ch = conn_getc(c);
		if (ch < 0)
			return ch;
		if (ch == '\n')
			break;
		if (n + 1 < cap)
			line[n++] = (char)ch;
	}
	line[n] = 0;
	return (long)n;
}

/* ERR for a failed read R (negative errno). Returns the code to give back. */
static int read_failed(struct ctl_conn *c, long r, char *err, size_t errlen)
{
	if (r == -ETIMEDOUT)
		ctl_timeout_msg(c->pid, c->timeout_ns, err, errlen);
	else if (r == -EPIPE || r == -ECONNRESET)
		snprintf(err, errlen, "the process closed the connection");
	else if (r != -EINTR)
		snprintf(err, errlen, "cannot read the answer: %s", strerror((int)-r));
	return r == -ETIMEDOUT || r == -EINTR ? (int)r : -EPROTO;
}

int ctl_response(struct ctl_conn *c, int (*sink)(const char *p, size_t n, void *data), void *data,
		 char *err, size_t errlen)
{
	char line[1024];
	c->untimed = 0;
	long r = conn_line(c, line, sizeof(line));
	if (r < 0)
		return read_failed(c, r, err, errlen);
	if (!strncmp(line, "ERR ", 4)) {
		snprintf(err, errlen, "%s", line + 4);
		return 1;
	}
	if (strcmp(line, "OK")) {
		snprintf(err, errlen, "unexpected response '%.60s'", line);
		return -EPROTO;
	}
	/* A stream's data comes when the process has events: no deadline. */
	c->untimed = c->stream;
	for (;;) {
		r = conn_line(c, line, sizeof(line));
		if (r < 0)
			return read_failed(c, r, err, errlen);
		char *end;
		unsigned long long len = strtoull(line, &end, 10);
		if (r == 0 || *end) {
			snprintf(err, errlen, "malformed response");
			return -EPROTO;
		}
		if (len == 0)
			return 0;
		while (len) {
			if (c->off == c->len) {
				long k = conn_fill(c);
				if (k <= 0)
					return read_failed(c, k ? k : -EPIPE, err, errlen);
			}
			size_t k = c->len - c->off;
			if (k > len)
				k = (size_t)len;
			if (sink(c->buf + c->off, k, data)) {
				snprintf(err, errlen, "cannot write the output: %s",
					 strerror(errno));
				return -ECANCELED;
			}
			c->off += k;
			len -= k;
		}
	}
}

long ctl_parse_small(const char *p, size_t n, char *out, size_t outlen)
{
	const char *end = p + n, *nl = memchr(p, '\n', n);
	if (!nl)
		return n > 1024 ? -1 : 0;
	if (nl - p != 2 || memcmp(p, "OK", 2))
		return -1;
	size_t used = 0;
	const char *q = nl + 1;
	if (outlen)
		out[0] = 0;
	for (;;) {
		nl = memchr(q, '\n', (size_t)(end - q));
		if (!nl)
			return (size_t)(end - q) > 24 ? -1 : 0;
		char *e;
		unsigned long long len = strtoull(q, &e, 10);
		if (e != nl || e == q)
			return -1;
		q = nl + 1;
		if (len == 0)
			break;
		if (len > (size_t)(end - q))
			return 0;
		size_t k = len < outlen - 1 - used ? (size_t)len : outlen - 1 - used;
		memcpy(out + used, q, k);
		used += k;
		out[used] = 0;
		q += len;
	}
	out[strcspn(out, "\n")] = 0;
	return (long)(q - p);
}

int ctl_sink_file(const char *p, size_t n, void *data)
{
	FILE *f = data;
	if (fwrite(p, 1, n, f) != n)
		return -1;
	return fflush(f) ? -1 : 0;
}

int ctl_sink_text(const char *p, size_t n, void *data)
{
	struct ctl_text *t = data;
	char *np = realloc(t->p, t->len + n + 1);
	if (!np)
		return -1;
	memcpy(np + t->len, p, n);
	t->p = np;
	t->len += n;
	t->p[t->len] = 0;
	return 0;
}
