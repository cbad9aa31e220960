// SPDX-License-Identifier: MIT
/*
 * cmd_ps.c - `dynftrace ps`: the processes whose tracing can be controlled
 * (docs/CONTROL.md), with their tracer. Stale sockets (their process ended,
 * or exec'd a program without control) are removed on the way.
 *
 * Every endpoint is asked at once, and all of them share one deadline: a
 * process that does not answer (stopped, or a listener that never does) is
 * listed as "(not responding)" and costs no more than the deadline, however
 * many there are. Asking one after another with a short deadline each would
 * instead misreport a busy process as silent, and still add up.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ctl_client.h"

static const char usage_text[] =
    "usage: dynftrace ps [--timeout SECONDS]\n"
    "\n"
    "List the running processes you can control with `dynftrace ctl` and\n"
    "`dynftrace pipe`: PID, current tracer, tracing_on, command line. A process\n"
    "that does not answer in time (stopped by SIGSTOP, Ctrl-Z or a debugger)\n"
    "is listed as (not responding). Sockets left by processes that ended are\n"
    "removed. Root sees every user's.\n"
    "\n"
    "  --timeout SECONDS  how long to wait for the answers (all processes are\n"
    "                     asked at once; default 5, fractions allowed, 0: no\n"
    "                     limit).\n"
    "  -h, --help         show this help.\n"
    "\n"
    "Exit status: 0 (also when there is none), 2 on a usage error.\n";

/* The two requests of every probe, sent together (answers come in order). */
static const char probe_req[] = "READ current_tracer\nREAD tracing_on\n";

enum probe_state {
	PR_CONNECT,  /* to connect (again at retry_at: its listen queue was full) */
	PR_SEND,     /* connected, sending probe_req from SENT */
	PR_READ,     /* reading both answers into c.buf */
	PR_ANSWERED, /* a row */
	PR_SILENT,   /* a "(not responding)" row */
	PR_DROP,     /* not listed (stale, refused, not served by its pid) */
};

struct probe {
	pid_t pid;
	int dfd;	/* its directory, open until the end */
	uid_t sock_uid; /* the socket file's owner */
	char name[32];	/* PID.sock */
	enum probe_state st;
	int64_t retry_at, pause_ns;
	size_t sent;
	struct ctl_conn c;
	char tracer[32];
	char on[8];
	char cmd[120];
};

struct probes {
	struct probe *v;
	size_t n;
	int *dfds; /* directories kept open for the probes' paths */
	size_t ndfd;
};

/* The command line of PID, NULs as spaces, shortened. */
static void proc_cmdline(pid_t pid, char *out, size_t n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r = fd >= 0 ? read(fd, out, n - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (r <= 0) {
		snprintf(out, n, "?");
		return;
	}
	while (r > 0 && out[r - 1] == 0)
		r--;
	for (ssize_t i = 0; i < r; i++)
		if (out[i] == 0 || out[i] == '\n')
			out[i] = ' ';
	out[r] = 0;
}

static int have(const struct probes *ps, pid_t pid)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].pid == pid)
			return 1;
	return 0;
}

/* Note every PID.sock in DIR. DIR must be a private directory (not a
 * symbolic link, no access for group and others): root scans everybody's,
 * and works through a descriptor of it, so nobody can swap it meanwhile. */
static void scan_dir(const char *dir, struct probes *ps)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dfd < 0)
		return;
	int *nd = realloc(ps->dfds, (ps->ndfd + 1) * sizeof(*nd));
	if (fstat(dfd, &st) || !S_ISDIR(st.st_mode) || (st.st_mode & 077) || !nd) {
		if (nd)
			ps->dfds = nd;
		close(dfd);
		return;
	}
	ps->dfds = nd;
	ps->dfds[ps->ndfd++] = dfd;
	int lfd = dup(dfd);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		if (lfd >= 0)
			close(lfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || pid > INT_MAX || strcmp(end, ".sock") || have(ps, (pid_t)pid) ||
		    strlen(e->d_name) >= sizeof(ps->v->name))
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISSOCK(st.st_mode))
			continue;
		struct probe *nv = realloc(ps->v, (ps->n + 1) * sizeof(*nv));
		if (!nv)
			break;
		ps->v = nv;
		struct probe *p = &ps->v[ps->n++];
		memset(p, 0, sizeof(*p));
		p->pid = (pid_t)pid;
		p->dfd = dfd;
		p->sock_uid = st.st_uid;
		memcpy(p->name, e->d_name, strlen(e->d_name) + 1);
		p->st = PR_CONNECT;
		p->pause_ns = 1000000;
		ctl_conn_init(&p->c, 0);
	}
	closedir(d);
}

static void probe_finish(struct probe *p, enum probe_state st)
{
	ctl_close(&p->c);
	p->st = st;
}

static void probe_send(struct probe *p)
{
	ssize_t w = send(p->c.fd, probe_req + p->sent, sizeof(probe_req) - 1 - p->sent,
			 MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (w < 0) {
		probe_finish(p, PR_DROP);
		return;
	}
	p->sent += (size_t)w;
	if (p->sent == sizeof(probe_req) - 1)
		p->st = PR_READ;
}

static void probe_connect(struct probe *p, int64_t now)
{
	char path[128], err[512];
	snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", p->dfd, p->name);
	int r = ctl_connect_try(p->pid, path, &p->c, err, sizeof(err));
	if (r == -EAGAIN) {
		/* Its queue is full: a full queue has no event to poll for. */
		p->retry_at = now + p->pause_ns;
		if (p->pause_ns < 50000000)
			p->pause_ns *= 2;
		return;
	}
	if (r == -ECONNREFUSED || (r && kill(p->pid, 0) && errno == ESRCH)) {
		unlinkat(p->dfd, p->name, 0); /* stale: its process is gone or exec'd */
		probe_finish(p, PR_DROP);
		return;
	}
	if (r) {
		probe_finish(p, PR_DROP);
		return;
	}
	p->st = PR_SEND;
	probe_send(p);
}

static void probe_read(struct probe *p)
{
	struct ctl_conn *c = &p->c;
	ssize_t r = recv(c->fd, c->buf + c->len, sizeof(c->buf) - c->len, MSG_DONTWAIT);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		probe_finish(p, PR_DROP);
		return;
	}
	c->len += (size_t)r;
	long a = ctl_parse_small(c->buf, c->len, p->tracer, sizeof(p->tracer));
	long b = a > 0 ? ctl_parse_small(c->buf + a, c->len - (size_t)a, p->on, sizeof(p->on)) : 0;
	if (a < 0 || b < 0 || (!b && c->len == sizeof(c->buf)))
		probe_finish(p, PR_DROP);
	else if (b > 0)
		probe_finish(p, PR_ANSWERED);
}

/* Could the silent endpoint of P be its pid's? Connected ones were checked
 * (SO_PEERCRED); one whose queue stayed full was not: its socket must at
 * least belong to the process's owner, and the process must exist. */
static int probe_plausible(const struct probe *p)
{
	char path[64];
	struct stat st;
	if (p->c.fd >= 0 && p->st != PR_CONNECT)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d", (int)p->pid);
	return !stat(path, &st) && st.st_uid == p->sock_uid;
}

/* Ask every probe at once until all are answered or DEADLINE (0: none). */
static void probe_all(struct probes *ps, int64_t deadline)
{
	/* One descriptor per probe in flight; take what the hard limit allows. */
	struct rlimit rl;
	size_t cap = 1000;
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
			getrlimit(RLIMIT_NOFILE, &rl);
		}
		cap = rl.rlim_cur > 32 + ps->ndfd ? rl.rlim_cur - 32 - ps->ndfd : 1;
	}
	struct pollfd *pfd = calloc(ps->n ? ps->n : 1, sizeof(*pfd));
	size_t *who = calloc(ps->n ? ps->n : 1, sizeof(*who));
	if (!pfd || !who) {
		free(pfd);
		free(who);
		return;
	}
	for (;;) {
		int64_t now = ctl_now_ns(), wake = deadline;
		size_t open = 0, busy = 0, np = 0;
		for (size_t i = 0; i < ps->n; i++)
			open += ps->v[i].c.fd >= 0;
		for (size_t i = 0; i < ps->n; i++) {
			struct probe *p = &ps->v[i];
			if (p->st == PR_CONNECT && p->retry_at <= now &&
			    (p->c.fd >= 0 || open < cap)) {
				open += p->c.fd < 0;
				probe_connect(p, now);
			}
			if (p->st == PR_CONNECT && p->c.fd >= 0 && (!wake || p->retry_at < wake))
				wake = p->retry_at;
			if (p->st == PR_SEND || p->st == PR_READ) {
				pfd[np] = (struct pollfd){
				    .fd = p->c.fd, .events = p->st == PR_SEND ? POLLOUT : POLLIN};
				who[np++] = i;
			}
			busy += p->st < PR_ANSWERED;
		}
		if (!busy || (deadline && now >= deadline))
			break;
		int r = poll(pfd, np, ctl_poll_ms(wake));
		if (r < 0 && errno != EINTR)
			break;
		for (size_t k = 0; r > 0 && k < np; k++) {
			struct probe *p = &ps->v[who[k]];
			if (!pfd[k].revents)
				continue;
			if (p->st == PR_SEND)
				probe_send(p);
			if (p->st == PR_READ)
				probe_read(p);
		}
	}
	for (size_t i = 0; i < ps->n; i++) {
		struct probe *p = &ps->v[i];
		if (p->st < PR_ANSWERED)
			probe_finish(p, probe_plausible(p) ? PR_SILENT : PR_DROP);
	}
	free(pfd);
	free(who);
}

static int probe_cmp(const void *a, const void *b)
{
	const struct probe *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int cmd_ps(int argc, char **argv)
{
	int64_t timeout_ns = CTL_TIMEOUT_DEFAULT_NS;
	for (int k = 1; k < argc; k++) {
		int t = ctl_cmd_opt(usage_text, argc, argv, &k, &timeout_ns);
		if (t >= 0)
			return t;
		if (t == CLI_OPT_TAKEN)
			continue;
		cli_err("ps: unexpected argument '%s'; see 'dynftrace ps --help'", argv[k]);
		return 2;
	}
	struct probes ps = {0};
	char dirs[2][4096];
	int nd = ctl_socket_dirs(geteuid(), getenv("XDG_RUNTIME_DIR"), dirs);
	for (int i = 0; i < nd; i++)
		scan_dir(dirs[i], &ps);
	if (geteuid() == 0) {
		/* Everybody's: /tmp/dynftrace-UID and /run/user/UID/dynftrace. */
		static const char *const roots[] = {"/tmp", "/run/user"};
		for (size_t k = 0; k < 2; k++) {
			DIR *d = opendir(roots[k]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				char sub[4400];
				if (k == 0 && strncmp(e->d_name, "dynftrace-", 10))
					continue;
				if (k == 1 && (e->d_name[0] < '0' || e->d_name[0] > '9'))
					continue;
				snprintf(sub, sizeof(sub), k == 0 ? "%s/%s" : "%s/%s/dynftrace",
					 roots[k], e->d_name);
				scan_dir(sub, &ps);
			}
			if (d)
				closedir(d);
		}
	}
	probe_all(&ps, ctl_deadline(timeout_ns));
	qsort(ps.v, ps.n, sizeof(*ps.v), probe_cmp);
	int header = 0;
	for (size_t i = 0; i < ps.n; i++) {
		struct probe *p = &ps.v[i];
		if (p->st != PR_ANSWERED && p->st != PR_SILENT)
			continue;
		if (!header++)
			printf("%7s  %-15s %2s  %s\n", "PID", "TRACER", "ON", "COMMAND");
		proc_cmdline(p->pid, p->cmd, sizeof(p->cmd));
		if (p->st == PR_ANSWERED)
			printf("%7d  %-15s %2s  %s\n", (int)p->pid, p->tracer, p->on, p->cmd);
		else
			printf("%7d  %-18s  %s\n", (int)p->pid, "(not responding)", p->cmd);
	}
	for (size_t i = 0; i < ps.ndfd; i++)
		close(ps.dfds[i]);
	free(ps.dfds);
	free(ps.v);
	if (fflush(stdout)) {
		cli_out_error();
		return 1;
	}
	return 0;
}
