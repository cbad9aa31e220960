// SPDX-License-Identifier: MIT
/*
 * cmd_ps.c - `dynftrace ps`: the processes whose tracing can be controlled
 * (docs/CONTROL.md), with their tracer. Stale sockets (their process ended,
 * or exec'd a program without control) are removed on the way.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ctl_client.h"

static const char usage_text[] =
    "usage: dynftrace ps\n"
    "\n"
    "List the running processes you can control with `dynftrace ctl` and\n"
    "`dynftrace pipe`: PID, current tracer, tracing_on, command line. Sockets\n"
    "left by processes that ended are removed. Root sees every user's.\n"
    "\n"
    "  -h, --help   show this help.\n"
    "\n"
    "Exit status: 0 (also when there is none), 2 on a usage error.\n";

struct ps_row {
	pid_t pid;
	char tracer[32];
	char on[8];
	char cmd[120];
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

/* READ FILE into OUT (first line). 0 or -1. */
static int read_small(struct ctl_conn *c, const char *file, char *out, size_t n)
{
	char err[256];
	struct ctl_text t = {0};
	if (ctl_send(c, "READ", file, NULL, 0) ||
	    ctl_response(c, ctl_sink_text, &t, err, sizeof(err))) {
		free(t.p);
		return -1;
	}
	snprintf(out, n, "%s", t.p ? t.p : "");
	out[strcspn(out, "\n")] = 0;
	free(t.p);
	return 0;
}

static int have(const struct ps_row *v, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid)
			return 1;
	return 0;
}

/* Look at every PID.sock in DIR. DIR must be a private directory (not a
 * symbolic link, no access for group and others): root scans everybody's,
 * and works through a descriptor of it, so nobody can swap it meanwhile. */
static void scan_dir(const char *dir, struct ps_row **rows, size_t *n)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dfd < 0)
		return;
	if (fstat(dfd, &st) || !S_ISDIR(st.st_mode) || (st.st_mode & 077)) {
		close(dfd);
		return;
	}
	int lfd = dup(dfd);
	DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		if (lfd >= 0)
			close(lfd);
		close(dfd);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end, path[4400];
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || strcmp(end, ".sock") || have(*rows, *n, (pid_t)pid))
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISSOCK(st.st_mode))
			continue;
		snprintf(path, sizeof(path), "/proc/self/fd/%d/%s", dfd, e->d_name);
		struct ctl_conn c;
		char err[512];
		int r = ctl_connect_path((pid_t)pid, path, &c, err, sizeof(err));
		if (r == -ECONNREFUSED || (r && kill((pid_t)pid, 0) && errno == ESRCH)) {
			unlinkat(dfd, e->d_name, 0); /* stale: its process is gone or exec'd */
			continue;
		}
		if (r)
			continue;
		struct ps_row row = {.pid = (pid_t)pid};
		if (read_small(&c, "current_tracer", row.tracer, sizeof(row.tracer)) ||
		    read_small(&c, "tracing_on", row.on, sizeof(row.on))) {
			ctl_close(&c);
			continue;
		}
		ctl_close(&c);
		proc_cmdline(row.pid, row.cmd, sizeof(row.cmd));
		struct ps_row *nv = realloc(*rows, (*n + 1) * sizeof(*nv));
		if (!nv)
			break;
		*rows = nv;
		(*rows)[(*n)++] = row;
	}
	closedir(d);
	close(dfd);
}

static int row_cmp(const void *a, const void *b)
{
	const struct ps_row *x = a, *y = b;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int cmd_ps(int argc, char **argv)
{
	if (argc >= 2 && cli_is_help(argv[1])) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc != 1) {
		cli_err("ps: unexpected argument '%s'; see 'dynftrace ps --help'", argv[1]);
		return 2;
	}
	struct ps_row *rows = NULL;
	size_t n = 0;
	char dirs[2][4096];
	int nd = ctl_socket_dirs(geteuid(), getenv("XDG_RUNTIME_DIR"), dirs);
	for (int i = 0; i < nd; i++)
		scan_dir(dirs[i], &rows, &n);
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
				scan_dir(sub, &rows, &n);
			}
			if (d)
				closedir(d);
		}
	}
	if (n) {
		qsort(rows, n, sizeof(*rows), row_cmp);
		printf("%7s  %-15s %2s  %s\n", "PID", "TRACER", "ON", "COMMAND");
		for (size_t i = 0; i < n; i++)
			printf("%7d  %-15s %2s  %s\n", (int)rows[i].pid, rows[i].tracer, rows[i].on,
			       rows[i].cmd);
	}
	free(rows);
	if (fflush(stdout)) {
		cli_out_error();
		return 1;
	}
	return 0;
}
