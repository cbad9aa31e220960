// SPDX-License-Identifier: MIT
/*
 * cmd_ctl.c - `dynftrace ctl PID [FILE [VALUE]]`: read or write a file of a
 * running process's control namespace (docs/CONTROL.md), as `cat` and
 * `echo` do in the kernel's tracefs. Also the client side of the control
 * protocol for `ps` and `pipe` (ctl_client.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "ctl_client.h"

static const char usage_text[] =
    "usage: dynftrace ctl [-a] PID [FILE [VALUE]]\n"
    "\n"
    "Read or change the tracing of the running process PID through its\n"
    "control socket (a process started by `dynftrace record`, or with\n"
    "libdynftrace.so and DYNFTRACE_CONTROL=1). Without FILE, list the files;\n"
    "with FILE, print it; with VALUE, write VALUE to it, as `echo VALUE >\n"
    "FILE` does in the kernel's tracefs. An empty VALUE clears a list\n"
    "(`dynftrace ctl PID set_ftrace_filter ''`). Every change takes effect at\n"
    "once: the process is re-patched while it runs.\n"
    "\n"
    "  -a, --append   add to the file (`echo VALUE >> FILE`): for the function\n"
    "                 lists, `!glob` removes.\n"
    "  -h, --help     show this help.\n"
    "\n"
    "Files: available_tracers, current_tracer, tracing_on,\n"
    "available_filter_functions, set_ftrace_filter, set_ftrace_notrace,\n"
    "set_graph_function, set_graph_notrace, max_graph_depth, tracing_thresh,\n"
    "buffer_size_kb, trace, trace_pipe, trace_marker, enabled_functions,\n"
    "trace_stat/function, per_thread/TID/stats (see docs/CONTROL.md).\n"
    "\n"
    "Exit status: 0, 1 when the process refused the request or cannot be\n"
    "reached (the reason is printed), 2 on a usage error.\n";

/* ---- client side of the protocol ------------------------------------------ */

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

int ctl_connect_path(pid_t pid, const char *path, struct ctl_conn *c, char *err, size_t errlen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "the socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errlen, "cannot make a socket: %s", strerror(errno));
		return -errno;
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int e = errno;
		close(fd);
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
		close(fd);
		snprintf(err, errlen, "the control socket %s is not served by process %d", path,
			 (int)pid);
		return -EPROTO;
	}
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->pid = pid;
	return 0;
}

int ctl_connect(pid_t pid, struct ctl_conn *c, char *err, size_t errlen, char *stale,
		size_t stalelen)
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
		if (!r)
			return 0;
		if (r == -ECONNREFUSED && stale)
			snprintf(stale, stalelen, "%s", path);
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

static int write_all(int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n) {
		ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

int ctl_send(struct ctl_conn *c, const char *verb, const char *file, const void *data, size_t len)
{
	char line[1200];
	int n;
	if (!strcmp(verb, "WRITE") || !strcmp(verb, "APPEND"))
		n = snprintf(line, sizeof(line), "%s %s %zu\n", verb, file, len);
	else
		n = snprintf(line, sizeof(line), "%s %s\n", verb, file);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -ENAMETOOLONG;
	int err = write_all(c->fd, line, (size_t)n);
	if (!err && len)
		err = write_all(c->fd, data, len);
	return err;
}

/* Next byte, or -1 at the end (-2 on EINTR). */
static int conn_getc(struct ctl_conn *c)
{
	if (c->off == c->len) {
		ssize_t r = read(c->fd, c->buf, sizeof(c->buf));
		if (r < 0 && errno == EINTR)
			return -2;
		if (r <= 0)
			return -1;
		c->off = 0;
		c->len = (size_t)r;
	}
	return (unsigned char)c->buf[c->off++];
}

/* A line without its newline: its length, -1 at the end, -2 on EINTR. */
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

int ctl_response(struct ctl_conn *c, int (*sink)(const char *p, size_t n, void *data), void *data,
		 char *err, size_t errlen)
{
	char line[1024];
	long r = conn_line(c, line, sizeof(line));
	if (r == -2)
		return -EINTR;
	if (r < 0) {
		snprintf(err, errlen, "the process closed the connection");
		return -1;
	}
	if (!strncmp(line, "ERR ", 4)) {
		snprintf(err, errlen, "%s", line + 4);
		return 1;
	}
	if (strcmp(line, "OK")) {
		snprintf(err, errlen, "unexpected response '%.60s'", line);
		return -1;
	}
	for (;;) {
		r = conn_line(c, line, sizeof(line));
		if (r == -2)
			return -EINTR;
		char *end;
		unsigned long long len = r >= 0 ? strtoull(line, &end, 10) : 0;
		if (r <= 0 || *end) {
			snprintf(err, errlen,
				 r == -1 ? "the process closed the connection"
					 : "malformed response");
			return -1;
		}
		if (len == 0)
			return 0;
		while (len) {
			if (c->off == c->len) {
				ssize_t k = read(c->fd, c->buf, sizeof(c->buf));
				if (k < 0 && errno == EINTR)
					return -EINTR;
				if (k <= 0) {
					snprintf(err, errlen, "the process closed the connection");
					return -1;
				}
				c->off = 0;
				c->len = (size_t)k;
			}
			size_t k = c->len - c->off;
			if (k > len)
				k = (size_t)len;
			if (sink(c->buf + c->off, k, data)) {
				snprintf(err, errlen, "cannot write the output: %s",
					 strerror(errno));
				return -2;
			}
			c->off += k;
			len -= k;
		}
	}
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

/* ---- the command ---------------------------------------------------------- */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Parse PID (a positive number). */
static int parse_pid(const char *s, pid_t *pid)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		return -1;
	*pid = (pid_t)v;
	return 0;
}

/* Stream trace_pipe of PID to stdout until interrupted or the process ends.
 * Shared with `dynftrace pipe`. */
int ctl_stream_pipe(struct ctl_conn *c, const char *what)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: read() returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	char err[512];
	int r = ctl_send(c, "READ", what, NULL, 0);
	if (r) {
		cli_err("%d: cannot send the request: %s", (int)c->pid, strerror(-r));
		return 1;
	}
	if (interrupted)
		return 0;
	r = ctl_response(c, ctl_sink_file, stdout, err, sizeof(err));
	if (r == -EINTR || interrupted)
		return 0;
	if (r == 1) {
		cli_err("%d: %s: %s", (int)c->pid, what, err);
		return 1;
	}
	if (r == -2) {
		cli_err("%s", err);
		return 1;
	}
	if (r < 0) {
		fprintf(stderr, "dynftrace: %d: the stream ended (the process exited)\n",
			(int)c->pid);
		return 0;
	}
	return 0;
}

int cmd_ctl(int argc, char **argv)
{
	int append = 0, npos = 0, dashdash = 0;
	char *pos[3];
	/* Options may come before PID or FILE; what follows FILE is VALUE
	 * (which may start with '-'). */
	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];
		if (!dashdash && npos < 2 && a[0] == '-' && a[1]) {
			if (cli_is_help(a)) {
				fputs(usage_text, stdout);
				return 0;
			}
			if (cli_flag(a, "-a", "--append")) {
				append = 1;
			} else if (!strcmp(a, "--")) {
				dashdash = 1;
			} else {
				cli_err("ctl: unknown option '%s'; see 'dynftrace ctl --help'", a);
				return 2;
			}
			continue;
		}
		if (npos == 3) {
			cli_err("ctl: too many arguments; see 'dynftrace ctl --help'");
			return 2;
		}
		pos[npos++] = argv[k];
	}
	if (npos < 1) {
		cli_err("ctl: no PID given; see 'dynftrace ctl --help'");
		return 2;
	}
	int nargs = npos, i = 0;
	argv = pos;
	pid_t pid;
	if (parse_pid(argv[i], &pid)) {
		cli_err("ctl: '%s' is not a process id", argv[i]);
		return 2;
	}
	const char *file = nargs >= 2 ? argv[i + 1] : "";
	const char *value = nargs == 3 ? argv[i + 2] : NULL;
	if (append && !value) {
		cli_err("ctl: -a needs a VALUE to append");
		return 2;
	}
	struct ctl_conn c;
	char err[512];
	if (ctl_connect(pid, &c, err, sizeof(err), NULL, 0)) {
		cli_err("%s", err);
		return 1;
	}
	int rc = 0;
	if (!value && (!strcmp(file, "trace_pipe") || !strcmp(file, "/trace_pipe"))) {
		rc = ctl_stream_pipe(&c, "trace_pipe");
		ctl_close(&c);
		return rc;
	}
	int r;
	if (value) {
		/* Like echo: the value and a newline. */
		size_t n = strlen(value);
		char *buf = malloc(n + 2);
		if (!buf) {
			cli_err("out of memory");
			ctl_close(&c);
			return 1;
		}
		memcpy(buf, value, n);
		buf[n] = '\n';
		r = ctl_send(&c, append ? "APPEND" : "WRITE", file, buf, n + 1);
		free(buf);
	} else {
		r = ctl_send(&c, "READ", file, NULL, 0);
	}
	int sent = r;
	/* Even when sending failed: the process may have refused the request
	 * (and closed) before taking all of it; its reason is readable. */
	r = ctl_response(&c, ctl_sink_file, stdout, err, sizeof(err));
	if (sent && r != 1) {
		cli_err("%d: cannot send the request: %s", (int)pid, strerror(-sent));
		ctl_close(&c);
		return 1;
	}
	if (r == 1) {
		cli_err("%d: %s: %s", (int)pid, *file ? file : "/", err);
		rc = 1;
	} else if (r) {
		cli_err("%d: %s", (int)pid, err);
		rc = 1;
	}
	ctl_close(&c);
	return rc;
}
