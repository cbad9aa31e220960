/* SPDX-License-Identifier: MIT */
/*
 * ctl.c - live control of the running process: a tracefs for
 * every traced process, served by one thread on a Unix socket.
 *
 * Endpoint
 * --------
 *   $XDG_RUNTIME_DIR/dynftrace/PID.sock, else /tmp/dynftrace-UID/PID.sock
 *
 * The directory is created with mode 0700 and then checked with lstat: it
 * must be a directory (not a symlink) owned by our uid with mode 0700, else
 * control stays off (logged once). The socket is made 0600 before listen().
 * Something already at the socket path is only replaced when it is a socket
 * of ours that refuses connections (a stale socket of an earlier process
 * with this pid); a symlink, a file or a live socket is left alone and
 * control stays off. Stale sockets of dead pids in the directory are removed
 * at start. Every connection's peer credentials (SO_PEERCRED) must be our
 * uid or root; others get one error line, are closed and logged (the first).
 *
 * The thread ("dynftrace-ctl") blocks every signal, never writes with
 * SIGPIPE (MSG_NOSIGNAL), and serves up to CTL_CLIENTS connections with one
 * poll() loop: bounded memory, no client can block another for longer than
 * one request takes, and the traced threads never wait for it (they write
 * into their rings, which it reads: ctl_live.c). Its file descriptors are the
 * runtime's own (close-on-exec, moved above the program's usual range);
 * before each use it checks with fstat that the descriptor still is the
 * socket it made, so a program that closes it (closefrom) and reuses the
 * number never has its file read or written by us.
 *
 * fork: the child gets its own endpoint (the atfork child handler closes the
 * parent's descriptors without touching the parent's socket file and starts
 * a new thread). exit: the socket is removed by a destructor. exec: the
 * descriptors close; the new image (or `dynftrace ps`) removes the stale
 * socket.
 *
 * Protocol (docs/CONTROL.md): requests are one line, responses a status
 * line and length-prefixed chunks:
 *
 *   READ FILE\n                    -> OK\n  {LEN\n DATA}...  0\n
 *   WRITE FILE LEN\n DATA          -> OK\n 0\n        | ERR message\n
 *   APPEND FILE LEN\n DATA         -> same
 *   READ trace_pipe\n (or STREAM)  -> OK\n  {LEN\n DATA}... (until closed)
 *
 * Concurrency: everything in `srv` and the clients belongs to the control
 * thread, which holds srv_lock while it works (not while it polls). The fork
 * handlers take srv_lock, so a fork never copies a half-done request; the
 * destructor and the exec hook (ctl_drain_streams) take it to send the
 * streams' last events in the thread's place; ctl_owned_* are written
 * before the thread starts.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dynftrace/dynftrace.h"
#include "hooks.h"
#include "ctl.h"
#include "ring.h"
#include "trace.h"

#define CTL_CLIENTS	   16
#define CTL_LINE_MAX	   1024	 /* request line */
#define CTL_WRITE_MAX	   65536 /* bytes of one WRITE/APPEND */
#define CTL_CHUNK	   32768 /* generated text per chunk */
#define CTL_STREAM_POLL_MS 50	 /* trace_pipe: look for new records this often */
#define CTL_IDLE_POLL_MS   1000	 /* housekeeping (descriptors closed under us) */
#define CTL_RESTARTS_MAX   3	 /* endpoint re-made after the program closed it */
#define CTL_DRAIN_MS	   1000	 /* exit, exec: the most trace_pipe readers are waited for */

/* ---- server state --------------------------------------------------------- */

enum client_state {
	C_FREE = 0,
	C_LINE,	  /* reading a request line */
	C_BODY,	  /* reading the bytes of a WRITE/APPEND */
	C_OUT,	  /* sending a response (maybe generating it: trace) */
	C_STREAM, /* trace_pipe */
};

struct client {
	enum client_state st;
	int fd;
	dev_t dev;
	ino_t ino;
	int close_after; /* close once the output is sent */
	char line[CTL_LINE_MAX + 1];
	size_t line_len;
	char *body; /* WRITE/APPEND data */
	size_t body_len, body_want;
	int append;
	char file[CTL_LINE_MAX + 1];
	struct sbuf out; /* response bytes not yet sent, from out_off */
	size_t out_off;
	struct live_cursor *cur; /* trace / trace_pipe */
};

static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static int ctl_pending; /* the thread created, not yet running: dft_await_started */
static struct {
	int up; /* the thread runs (in this process) */
	int lfd;
	dev_t ldev;
	ino_t lino;
	int restarts;
	int stopping; /* ctl_stop: the thread ends, nothing restarts */
	pid_t tid;    /* the thread's, while it runs (atomic) */
	pthread_t th; /* its handle, for dft_thread_reap (srv_lock) */
	struct client cl[CTL_CLIENTS];
} srv = {.lfd = -1};

/* The socket file this process made (the destructor removes it). Written
 * before the thread starts (and in the fork child), read by the destructor. */
static char ctl_owned_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static pid_t ctl_owned_pid;
static char ctl_gen_buf[CTL_CHUNK]; /* control thread: text of one chunk */
static size_t ctl_buffer_kb;	    /* DYNFTRACE_BUFFER_KB (ctl_init), 0: default */

/* ---- descriptors ---------------------------------------------------------- */

/* Move FD out of the program's usual range (it may expect low numbers). */
static int fd_high(int fd)
{
	struct rlimit rl;
	long lim = 1024;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)lim)
		lim = (long)rl.rlim_cur;
	if (lim < 256)
		return fd;
	int nfd = fcntl(fd, F_DUPFD_CLOEXEC, (int)(lim - 96));
	if (nfd < 0)
		return fd;
	close(fd);
	return nfd;
}

static int fd_ident(int fd, dev_t *dev, ino_t *ino)
{
	struct stat st;
	if (fstat(fd, &st))
		return -errno;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return 0;
}

/* Is FD still the socket we made? */
static int fd_is(int fd, dev_t dev, ino_t ino)
{
	struct stat st;
	return fd >= 0 && !fstat(fd, &st) && S_ISSOCK(st.st_mode) && st.st_dev == dev &&
	       st.st_ino == ino;
}

/* ---- endpoint ------------------------------------------------------------- */

/* The directory, created if needed and checked. 0 or -errno with WHY. */
static int ctl_dir(char *dir, size_t n, char *why, size_t whylen)
{
	const char *x = dft_getenv("XDG_RUNTIME_DIR");
	uid_t uid = geteuid();
	int made = 0;
	struct stat st;
	if (x && x[0] == '/' && !stat(x, &st) && S_ISDIR(st.st_mode) &&
	    (size_t)snprintf(dir, n, "%s/dynftrace", x) < n) {
		/* under the user's runtime dir */
	} else {
		snprintf(dir, n, "/tmp/dynftrace-%u", (unsigned)uid);
	}
	if (!mkdir(dir, 0700))
		made = 1;
	else if (errno != EEXIST) {
		snprintf(why, whylen, "cannot create %.200s: %s", dir, strerror(errno));
		return -errno;
	}
	if (made)
		chmod(dir, 0700); /* whatever the umask */
	if (lstat(dir, &st)) {
		snprintf(why, whylen, "cannot check %.200s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 07777) != 0700) {
		snprintf(why, whylen,
			 "%.200s is not a private directory of uid %u (%s, owner %u, mode %04o); "
			 "control is off",
			 dir, (unsigned)uid,
			 S_ISLNK(st.st_mode)   ? "a symbolic link"
			 : S_ISDIR(st.st_mode) ? "a directory"
					       : "not a directory",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* Remove the sockets of processes that are gone. */
static void sweep_stale(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	pid_t self = getpid();
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || pid == self || strcmp(end, ".sock"))
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		struct stat st;
		char path[PATH_MAX + 256];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!lstat(path, &st) && S_ISSOCK(st.st_mode) && st.st_uid == geteuid())
			unlink(path);
	}
	closedir(d);
}

/* Something is at PATH already: is it a stale socket of ours? */
static int path_is_stale(const char *path, char *why, size_t whylen)
{
	struct stat st;
	if (lstat(path, &st))
		return errno == ENOENT; /* gone meanwhile */
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		snprintf(why, whylen,
			 "%.200s exists and is not a socket of ours (%s); control is off", path,
			 S_ISLNK(st.st_mode) ? "a symbolic link" : "left alone");
		return 0;
	}
	/* Non-blocking: a listener that does not take connections (stopped,
	 * say) would otherwise hold the program's start for ever; its full
	 * queue (EAGAIN) means somebody serves the path. */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return 0;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	int e = errno;
	close(fd);
	if (r == 0 || e != ECONNREFUSED) {
		snprintf(why, whylen, "%.200s is served by another process; control is off", path);
		return 0;
	}
	return 1;
}

/* Make the listening socket. 0 or -errno with WHY. */
static int endpoint_create(char *why, size_t whylen)
{
	char dir[PATH_MAX];
	int err = ctl_dir(dir, sizeof(dir), why, whylen);
	if (err)
		return err;
	sweep_stale(dir);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", dir, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path)) {
		snprintf(why, whylen, "the socket path under %.200s is too long; control is off",
			 dir);
		return -ENAMETOOLONG;
	}
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(why, whylen, "socket: %s", strerror(errno));
		return -errno;
	}
	fd = fd_high(fd);
	for (int tries = 0;; tries++) {
		if (!bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		err = -errno;
		if (err != -EADDRINUSE || tries || !path_is_stale(sa.sun_path, why, whylen)) {
			if (err != -EADDRINUSE || tries)
				snprintf(why, whylen, "cannot bind %.200s: %s", sa.sun_path,
					 strerror(-err));
			close(fd);
			return err;
		}
		unlink(sa.sun_path);
	}
	if (chmod(sa.sun_path, 0600) || listen(fd, CTL_CLIENTS) ||
	    fd_ident(fd, &srv.ldev, &srv.lino)) {
		err = -errno;
		snprintf(why, whylen, "cannot listen on %.200s: %s", sa.sun_path, strerror(errno));
		unlink(sa.sun_path);
		close(fd);
		return err;
	}
	srv.lfd = fd;
	memcpy(ctl_owned_path, sa.sun_path, sizeof(ctl_owned_path));
	__atomic_store_n(&ctl_owned_pid, getpid(), __ATOMIC_RELEASE);
	return 0;
}

/* ---- responses ------------------------------------------------------------ */

static void out_ok(struct client *c)
{
	sb_put(&c->out, "OK\n", 3);
}

static void out_chunk(struct client *c, const char *p, size_t n)
{
	if (!n)
		return;
	sb_printf(&c->out, "%zu\n", n);
	sb_put(&c->out, p, n);
}

static void out_end(struct client *c)
{
	sb_put(&c->out, "0\n", 2);
}

static void out_err(struct client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_err(struct client *c, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	sb_printf(&c->out, "ERR %s\n", msg);
}

/* A whole response from a text buffer. */
static void out_text(struct client *c, struct sbuf *t)
{
	if (t->oom) {
		out_err(c, "out of memory");
		return;
	}
	out_ok(c);
	out_chunk(c, t->p, t->len);
	out_end(c);
}

#include "ctl_files.h"

/* ---- requests ------------------------------------------------------------- */

static void trace_header(struct sbuf *h, int graph)
{
	uint64_t in, written;
	ring_counts(&in, &written);
	sb_printf(h, "# tracer: %s\n#\n", trace_get_tracer());
	sb_printf(h, "# entries-in-buffer/entries-written: %llu/%llu   #P:%ld\n#\n",
		  (unsigned long long)in, (unsigned long long)written,
		  sysconf(_SC_NPROCESSORS_ONLN));
	if (graph)
		sb_printf(h, "#     TID     DURATION          FUNCTION CALLS\n"
			     "#      |      |   |               |   |   |   |\n");
	else
		sb_printf(h, "#           TASK-TID         TIMESTAMP  FUNCTION\n"
			     "#              | |               |         |\n");
}

static int graph_layout(void)
{
	return !strcmp(trace_get_tracer(), "function_graph");
}

static void do_read(struct client *c, const char *name)
{
	struct sbuf t = {0};
	char why[512] = "";
	const char *arg = "";
	const struct ctl_file *f = *name ? file_find(name, &arg) : NULL;
	if (!*name) {
		list_root(&t);
		out_text(c, &t);
	} else if (!f) {
		out_err(c, "no such file '%s'", name);
	} else if (f->flags & F_TRACE) {
		int graph = graph_layout();
		c->cur = live_open(0, graph);
		if (!c->cur) {
			out_err(c, "out of memory");
		} else {
			trace_header(&t, graph);
			out_ok(c);
			out_chunk(c, t.p, t.len);
		}
	} else if (f->flags & F_PIPE) {
		c->cur = live_open(1, graph_layout());
		if (!c->cur) {
			out_err(c, "out of memory");
		} else {
			out_ok(c);
			c->st = C_STREAM;
		}
	} else if (!f->read) {
		out_err(c, "%s is write-only", name);
	} else {
		int err = f->read(f, arg, &t, why, sizeof(why));
		if (err)
			out_err(c, "%s", why[0] ? why : strerror(-err));
		else
			out_text(c, &t);
	}
	sb_free(&t);
}

static void do_write(struct client *c)
{
	char why[512] = "";
	const char *arg = "";
	const struct ctl_file *f = file_find(c->file, &arg);
	char *val = c->body ? c->body : (char *)"";
	size_t len = c->body_len;
	if (!f) {
		out_err(c, "no such file '%s'", c->file);
	} else if (!f->write) {
		out_err(c, "%s is read-only", c->file);
	} else if (memchr(val, 0, len)) {
		out_err(c, "the value for %s contains a NUL byte", c->file);
	} else {
		int err = f->write(f, arg, val, len, c->append, why, sizeof(why));
		if (err) {
			out_err(c, "%s", why[0] ? why : strerror(-err));
		} else {
			out_ok(c);
			out_end(c);
		}
	}
	free(c->body);
	c->body = NULL;
	c->body_len = c->body_want = 0;
}

/* A complete request line (NUL-terminated, without its newline). */
static void do_line(struct client *c)
{
	char *save, *verb = strtok_r(c->line, " ", &save);
	char *file = verb ? strtok_r(NULL, " ", &save) : NULL;
	char *len = file ? strtok_r(NULL, " ", &save) : NULL;
	char *extra = len ? strtok_r(NULL, " ", &save) : NULL;
	if (!verb) {
		out_err(c, "empty request (expected READ FILE, WRITE FILE LEN or APPEND FILE LEN)");
		c->close_after = 1;
		return;
	}
	int rd = !strcmp(verb, "READ") || !strcmp(verb, "STREAM");
	int wr = !strcmp(verb, "WRITE") || !strcmp(verb, "APPEND");
	if (!rd && !wr) {
		out_err(c, "unknown request '%.32s' (expected READ, WRITE or APPEND)", verb);
		c->close_after = 1;
		return;
	}
	if (!file)
		file = (char *)"";
	while (*file == '/')
		file++;
	size_t fl = strlen(file);
	while (fl && file[fl - 1] == '/')
		file[--fl] = 0;
	if (!name_ok(file)) {
		out_err(c, "bad file name '%.64s'", file);
		c->close_after = 1;
		return;
	}
	if (rd) {
		if (len) {
			out_err(c, "%s takes one file name", verb);
			c->close_after = 1;
			return;
		}
		if (!strcmp(verb, "STREAM") && strcmp(file, "trace_pipe")) {
			out_err(c, "only trace_pipe can be streamed");
			return;
		}
		do_read(c, file);
		return;
	}
	uint64_t n;
	int err = len && !extra ? parse_num(len, UINT64_MAX / 2, &n) : -EINVAL;
	if (err || !*file) {
		out_err(c, "malformed request: expected %s FILE LEN", verb);
		c->close_after = 1;
		return;
	}
	if (n > CTL_WRITE_MAX) {
		out_err(c, "a write of %llu bytes is larger than the limit of %d bytes",
			(unsigned long long)n, CTL_WRITE_MAX);
		c->close_after = 1; /* its bytes are not read */
		return;
	}
	snprintf(c->file, sizeof(c->file), "%s", file);
	c->append = !strcmp(verb, "APPEND");
	c->body = malloc((size_t)n + 1);
	if (!c->body) {
		out_err(c, "out of memory");
		c->close_after = 1;
		return;
	}
	c->body_len = 0;
	c->body_want = (size_t)n;
	c->body[n] = 0;
	if (n == 0)
		do_write(c);
	else
		c->st = C_BODY;
}

/* ---- connections ---------------------------------------------------------- */

static void client_close(struct client *c, int close_fd)
{
	if (close_fd && fd_is(c->fd, c->dev, c->ino))
		close(c->fd);
	/* else: not ours any more; leave the program's descriptor alone */
	live_close(c->cur);
	free(c->body);
	sb_free(&c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Take one connection off the queue: 1, or 0 when there is none. */
static int accept_one(void)
{
	struct client *c = NULL;
	for (size_t i = 0; i < CTL_CLIENTS && !c; i++)
		if (srv.cl[i].st == C_FREE)
			c = &srv.cl[i];
	int fd = accept4(srv.lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return 0;
	fd = fd_high(fd);
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	const char *busy = "ERR too many control clients; try again later\n";
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) || cl != sizeof(cr)) {
		close(fd);
		return 1;
	}
	if (cr.uid != geteuid() && cr.uid != 0) {
		char msg[160];
		int n = snprintf(msg, sizeof(msg),
				 "ERR permission denied: uid %u may not control process %d\n",
				 (unsigned)cr.uid, (int)getpid());
		ssize_t w = send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		close(fd);
		dft_log("control: refused a connection from uid %u (pid %d): only uid %u and root "
			"may control this process",
			(unsigned)cr.uid, (int)cr.pid, (unsigned)geteuid());
		return 1;
	}
	if (!c) {
		ssize_t w = send(fd, busy, strlen(busy), MSG_NOSIGNAL | MSG_DONTWAIT);
		(void)w;
		close(fd);
		return 1;
	}
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	if (fd_ident(fd, &c->dev, &c->ino)) {
		close(fd);
		c->fd = -1;
		return 1;
	}
	c->st = C_LINE;
	return 1;
}

/* Generate more output when there is room for it. */
static void client_pump(struct client *c)
{
	size_t pending = c->out.len - c->out_off;
	if (!c->cur || pending >= CTL_CHUNK)
		return;
	size_t n = live_read(c->cur, ctl_gen_buf, sizeof(ctl_gen_buf));
	if (n) {
		out_chunk(c, ctl_gen_buf, n);
	} else if (c->st == C_OUT) { /* the snapshot is complete */
		out_end(c);
		live_close(c->cur);
		c->cur = NULL;
	}
}

/* Send what we can. 0, or -1 when the client is gone. */
static int client_flush(struct client *c)
{
	while (c->out_off < c->out.len) {
		ssize_t w = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		}
		c->out_off += (size_t)w;
	}
	if (c->out.oom)
		return -1;
	c->out.len = c->out_off = 0;
	return 0;
}

/* Read request bytes; process what is complete. 0, or -1 to close. */
static int client_input(struct client *c)
{
	for (;;) {
		if (c->st == C_BODY) {
			ssize_t r = recv(c->fd, c->body + c->body_len, c->body_want - c->body_len,
					 MSG_DONTWAIT);
			if (r == 0)
				return -1;
			if (r < 0)
				return errno == EAGAIN || errno == EINTR ? 0 : -1;
			c->body_len += (size_t)r;
			if (c->body_len < c->body_want)
				continue;
			c->st = C_OUT;
			do_write(c);
			return 0;
		}
		if (c->st != C_LINE)
			return 0;
		/* Take bytes up to the newline only: what follows (a body, a
		 * next request) stays in the socket. */
		char *dst = c->line + c->line_len;
		size_t room = CTL_LINE_MAX - c->line_len;
		ssize_t r = recv(c->fd, dst, room + 1, MSG_PEEK | MSG_DONTWAIT);
		if (r == 0)
			return -1;
		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		char *nl = memchr(dst, '\n', (size_t)r);
		size_t take = nl ? (size_t)(nl - dst) + 1 : (size_t)r;
		if (!nl && (size_t)r > room) {
			out_err(c, "request line longer than %d bytes", CTL_LINE_MAX);
			c->close_after = 1;
			c->st = C_OUT;
			return 0;
		}
		r = recv(c->fd, dst, take, MSG_DONTWAIT);
		if (r != (ssize_t)take)
			return -1;
		if (!nl) {
			c->line_len += take;
			continue;
		}
		c->line_len += take - 1;
		c->line[c->line_len] = 0;
		c->line_len = 0;
		c->st = C_OUT;
		do_line(c);
		if (c->st != C_BODY)
			return 0;
	}
}

/* Poll events of client C. POLLHUP (the peer closed) comes anyway; a
 * half-closed peer (shutdown(SHUT_WR) after its request) still gets its
 * response, so POLLRDHUP is not asked for.
 *
 * No wakeup can be lost: poll() is level-triggered, these events are
 * computed again from the state before every poll() (the listening socket
 * always asks for POLLIN), and each state with work left asks for the event
 * that lets it go on: C_LINE and C_BODY for input (bytes already read stay
 * in c->line or c->body; what was only peeked stays in the socket and keeps
 * POLLIN up), C_OUT for room to write (an answer not all sent: the socket
 * is full, and the client's reads make room; or `trace` has more to
 * generate: POLLOUT is then up at once), C_STREAM for room or the timer.
 *
 * So this thread sleeps in poll() while a client waits for an answer only
 * when that client does not read, or has not sent its request. The next
 * request is taken once the previous answer has left (bounded memory): a
 * client that sends a batch larger than the socket buffers before reading
 * anything deadlocks itself (docs/CONTROL.md, "Protocol"; tests/ctl/peer.c
 * once did so; tests/ctl/pipeline.tc drives a connection into the
 * full-socket state and out of it). The soak test's stall with this thread
 * idle was of the second kind: the test's shell, which was to start the
 * client, waited for the disk (tests/sh/soak.sh). */
static short client_events(const struct client *c, int *stream_wait)
{
	short ev = 0;
	switch (c->st) {
	case C_LINE:
	case C_BODY:
		ev |= POLLIN;
		break;
	case C_OUT:
		ev |= POLLOUT;
		break;
	case C_STREAM:
		if (c->out_off < c->out.len)
			ev |= POLLOUT;
		else
			*stream_wait = 1;
		break;
	default:
		break;
	}
	return ev;
}

/* Handle REVENTS (or a timer tick: 0) for client C. */
static void client_io(struct client *c, short revents)
{
	if ((revents & POLLNVAL) || !fd_is(c->fd, c->dev, c->ino)) {
		client_close(c, 0);
		return;
	}
	if (revents & (POLLERR | POLLHUP)) {
		if (c->st != C_LINE && c->st != C_BODY) {
			client_close(c, 1); /* gone mid-response or mid-stream: fine */
			return;
		}
	}
	if ((revents & (POLLIN | POLLHUP | POLLERR)) && (c->st == C_LINE || c->st == C_BODY) &&
	    client_input(c)) {
		client_close(c, 1);
		return;
	}
	/* Respond, generating as the socket takes it. */
	for (int round = 0; round < 8; round++) {
		size_t before = c->out.len;
		int had_cur = c->cur != NULL;
		client_pump(c);
		int progressed = c->out.len != before || (had_cur && !c->cur);
		if (client_flush(c)) {
			client_close(c, 1);
			return;
		}
		if (c->out_off < c->out.len)
			break; /* the socket is full: POLLOUT later */
		if (c->st == C_OUT && !c->cur) {
			if (c->close_after) {
				client_close(c, 1);
				return;
			}
			c->st = C_LINE; /* ready for the next request */
			if (client_input(c)) {
				client_close(c, 1);
				return;
			}
			if (c->st == C_LINE || c->st == C_BODY)
				break;
			continue;
		}
		if (!progressed)
			break; /* trace_pipe: nothing new, the timer looks again */
	}
}

/* ---- the thread ----------------------------------------------------------- */

static int endpoint_restart(void)
{
	/* The program closed our socket (closefrom, dup2 over it). */
	if (srv.restarts++ >= CTL_RESTARTS_MAX) {
		dft_log("control: the control socket was closed by the program %d times; "
			"control stops",
			CTL_RESTARTS_MAX);
		return -1;
	}
	for (size_t i = 0; i < CTL_CLIENTS; i++)
		if (srv.cl[i].st != C_FREE)
			client_close(&srv.cl[i], 1);
	srv.lfd = -1;
	char why[512];
	if (endpoint_create(why, sizeof(why))) {
		dft_log("control: %s", why);
		return -1;
	}
	return 0;
}

static void *ctl_main(void *arg)
{
	(void)arg;
	dft_thread_started(&ctl_pending);
	pthread_setname_np(pthread_self(), "dynftrace-ctl");
	__atomic_store_n(&srv.tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	struct pollfd pfd[1 + CTL_CLIENTS];
	struct client *who[1 + CTL_CLIENTS];
	for (;;) {
		int n = 0, stream_wait = 0;
		pthread_mutex_lock(&srv_lock);
		if (srv.lfd < 0 || srv.stopping) {
			pthread_mutex_unlock(&srv_lock);
			break;
		}
		pfd[n] = (struct pollfd){.fd = srv.lfd, .events = POLLIN};
		who[n++] = NULL;
		for (size_t i = 0; i < CTL_CLIENTS; i++) {
			struct client *c = &srv.cl[i];
			if (c->st == C_FREE)
				continue;
			pfd[n] =
			    (struct pollfd){.fd = c->fd, .events = client_events(c, &stream_wait)};
			who[n++] = c;
		}
		pthread_mutex_unlock(&srv_lock);

		int r = poll(pfd, (nfds_t)n, stream_wait ? CTL_STREAM_POLL_MS : CTL_IDLE_POLL_MS);

		pthread_mutex_lock(&srv_lock);
		if (srv.stopping) {
			pthread_mutex_unlock(&srv_lock);
			break;
		}
		if (r < 0 && errno != EINTR)
			r = 0;
		for (int i = 1; i < n; i++) {
			struct client *c = who[i];
			if (c->st == C_FREE || c->fd != pfd[i].fd)
				continue;
			if (r > 0 && pfd[i].revents)
				client_io(c, pfd[i].revents);
			else if (c->st == C_STREAM)
				client_io(c, 0); /* the tick: new records? */
		}
		if ((pfd[0].revents & POLLNVAL) || !fd_is(srv.lfd, srv.ldev, srv.lino)) {
			if (endpoint_restart()) {
				srv.lfd = -1;
				pthread_mutex_unlock(&srv_lock);
				break;
			}
		} else if (r > 0 && (pfd[0].revents & POLLIN)) {
			for (int k = 0; k < 2 * CTL_CLIENTS && accept_one(); k++)
				;
		}
		pthread_mutex_unlock(&srv_lock);
	}
	return NULL;
}

/* Start the endpoint and the thread (srv_lock held or single-threaded). */
static int ctl_start(void)
{
	char why[512];
	int err = endpoint_create(why, sizeof(why));
	if (err) {
		dft_log("control: %s", why);
		return err;
	}
	ssize_t k = readlink("/proc/self/exe", ctl_exe, sizeof(ctl_exe) - 1);
	ctl_exe[k > 0 ? k : 0] = 0;
	for (size_t i = 0; i < CTL_CLIENTS; i++)
		srv.cl[i].fd = -1;
	trace_ctl_start(ctl_buffer_kb);
	__atomic_store_n(&ctl_pending, 1, __ATOMIC_RELEASE);
	err = -dft_thread_create(&srv.th, ctl_main, NULL, 1);
	if (err) {
		dft_pending_clear(&ctl_pending);
		dft_log("control: cannot start the control thread: %s", strerror(err));
		unlink(ctl_owned_path);
		ctl_owned_path[0] = 0;
		close(srv.lfd);
		srv.lfd = -1;
		return -err;
	}
	srv.up = 1;
	return 0;
}

/* fork: a request is never half done in the copy. Called by the runtime's
 * fork handlers (init.c), inside their api_depth bracket: the calls made
 * here (libc's functions, once patched by relocation) are the runtime's. */
void ctl_atfork_prepare(void)
{
	pthread_mutex_lock(&srv_lock);
	dft_await_started(&ctl_pending);
}

void ctl_atfork_parent(void)
{
	pthread_mutex_unlock(&srv_lock);
}

/* Restarts the endpoint where the parent had one. */
void ctl_atfork_child(void)
{
	pthread_mutex_unlock(&srv_lock);
	if (!srv.up)
		return;
	/* The parent's thread is not here; its descriptors are copies, and
	 * its socket file is the parent's to remove. */
	srv.up = 0;
	for (size_t i = 0; i < CTL_CLIENTS; i++)
		if (srv.cl[i].st != C_FREE)
			client_close(&srv.cl[i], 1);
	if (fd_is(srv.lfd, srv.ldev, srv.lino))
		close(srv.lfd);
	srv.lfd = -1;
	srv.restarts = 0;
	ctl_owned_path[0] = 0;
	__atomic_store_n(&ctl_owned_pid, 0, __ATOMIC_RELEASE);
	ctl_start();
}

/* One trace_pipe stream, at the image's end: send what is formatted,
 * format and send what the rings hold. 1: all sent (or the reader is
 * gone); 0: its socket is full. srv_lock held. */
static int stream_drain_step(struct client *c)
{
	for (;;) {
		if (client_flush(c)) {
			client_close(c, 1);
			return 1;
		}
		if (c->out_off < c->out.len)
			return 0;
		size_t n = live_read(c->cur, ctl_gen_buf, sizeof(ctl_gen_buf));
		if (!n)
			return 1;
		out_chunk(c, ctl_gen_buf, n);
	}
}

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The image ends (exit, exec: WHAT): the control thread looks for new
 * records only every CTL_STREAM_POLL_MS, and the process would be gone
 * before its next look, with the last events. So the ending thread does
 * its work for every trace_pipe stream itself, under srv_lock (the control
 * thread waits meanwhile): format and send all the rings hold, waiting for
 * room while a reader reads, CTL_DRAIN_MS at most in all. What a reader
 * did not take by then is lost: counted and said.
 */
static void ctl_drain_streams(const char *what)
{
	/* Not this process's endpoint (none, a fork child's parent's, a vfork
	 * child sharing its parent's memory): its lock is not to be taken. */
	if (__atomic_load_n(&ctl_owned_pid, __ATOMIC_ACQUIRE) != getpid())
		return;
	int64_t end = mono_ms() + CTL_DRAIN_MS;
	struct timespec lim;
	clock_gettime(CLOCK_REALTIME, &lim);
	lim.tv_sec += CTL_DRAIN_MS / 1000;
	if (pthread_mutex_timedlock(&srv_lock, &lim))
		return; /* the control thread is stuck in a request */
	if (!srv.up || srv.stopping) {
		pthread_mutex_unlock(&srv_lock);
		return;
	}
	for (;;) {
		struct pollfd pfd[CTL_CLIENTS];
		nfds_t n = 0;
		for (size_t i = 0; i < CTL_CLIENTS; i++) {
			struct client *c = &srv.cl[i];
			if (c->st != C_STREAM || !c->cur)
				continue;
			if (!fd_is(c->fd, c->dev, c->ino))
				client_close(c, 0); /* not ours any more */
			else if (!stream_drain_step(c))
				pfd[n++] = (struct pollfd){.fd = c->fd, .events = POLLOUT};
		}
		int64_t left = end - mono_ms();
		if (!n || left <= 0)
			break;
		poll(pfd, n, (int)left);
	}
	size_t lost = 0, bytes = 0;
	for (size_t i = 0; i < CTL_CLIENTS; i++) {
		struct client *c = &srv.cl[i];
		if (c->st != C_STREAM || !c->cur)
			continue;
		lost += live_discard(c->cur);
		bytes += c->out.len - c->out_off;
	}
	pthread_mutex_unlock(&srv_lock);
	if (lost || bytes)
		dft_log("trace_pipe: a reader did not take the last %zu events (and %zu bytes of "
			"text) within %d ms before the process %s: they are lost",
			lost, bytes, CTL_DRAIN_MS, what);
}

static void ctl_exec_drain(void)
{
	ctl_drain_streams("exec'd");
}

__attribute__((destructor)) static void ctl_fini(void)
{
	dft_own_enter();
	ctl_drain_streams("exited");
	if (__atomic_load_n(&ctl_owned_pid, __ATOMIC_ACQUIRE) == getpid() && ctl_owned_path[0])
		unlink(ctl_owned_path);
	dft_own_leave();
}

/*
 * Close the endpoint and end the control thread (a detach). The thread is
 * detached (nobody joins it at exit), so wait until the kernel says it is
 * gone: after that no code of ours runs on it.
 */
int ctl_stop(void)
{
	pthread_mutex_lock(&srv_lock);
	if (!srv.up) {
		pthread_mutex_unlock(&srv_lock);
		return 0;
	}
	srv.stopping = 1;
	for (size_t i = 0; i < CTL_CLIENTS; i++)
		if (srv.cl[i].st != C_FREE)
			client_close(&srv.cl[i], 1);
	if (fd_is(srv.lfd, srv.ldev, srv.lino)) {
		shutdown(srv.lfd, SHUT_RDWR); /* wakes its poll() */
		close(srv.lfd);
	}
	srv.lfd = -1;
	if (ctl_owned_path[0] && __atomic_load_n(&ctl_owned_pid, __ATOMIC_ACQUIRE) == getpid())
		unlink(ctl_owned_path);
	ctl_owned_path[0] = 0;
	srv.up = 0;
	pthread_mutex_unlock(&srv_lock);
	char path[64];
	for (int ms = 0; ms < 10000; ms++) {
		pid_t tid = __atomic_load_n(&srv.tid, __ATOMIC_ACQUIRE);
		snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
		if (tid && access(path, F_OK)) {
			dft_thread_reap(srv.th); /* gone: its stack may go */
			return 0;
		}
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	return -ETIMEDOUT;
}

void ctl_init(void)
{
	const char *v = dft_getenv("DYNFTRACE_CONTROL");
	if (!v || !*v || !strcmp(v, "0"))
		return;
	v = dft_getenv("DYNFTRACE_BUFFER_KB");
	if (v && *v && !trace_recording()) {
		uint64_t kb;
		if (parse_num(v, UINT32_MAX, &kb) || kb < RING_KB_MIN || kb > RING_KB_MAX)
			dft_log("control: DYNFTRACE_BUFFER_KB=%s: expected %d to %d; using %d", v,
				RING_KB_MIN, RING_KB_MAX, RING_KB_DEFAULT);
		else
			ctl_buffer_kb = (size_t)kb;
	}
	core_hooks_set(&(struct core_hooks){.exec_readers = ctl_exec_drain});
	pthread_mutex_lock(&srv_lock);
	if (!srv.up)
		ctl_start();
	pthread_mutex_unlock(&srv_lock);
}
