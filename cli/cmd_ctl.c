// SPDX-License-Identifier: MIT
/*
 * cmd_ctl.c - `dynftrace ctl PID [FILE [VALUE]]`: read or write a file of a
 * running process's control namespace (docs/CONTROL.md), as `cat` and
 * `echo` do in the kernel's tracefs. Also the client side of the control
 * protocol for `ps` and `pipe` (ctl_client.h).
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctl_client.h"

static const char usage_text[] =
    "usage: dynftrace ctl [-a] [--timeout SECONDS] PID [FILE [VALUE]]\n"
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
    "  --timeout SECONDS\n"
    "                 wait at most this long for the process at each step:\n"
    "                 connecting, sending, each part of the answer (trace_pipe:\n"
    "                 until its first answer). Default 5, fractions allowed\n"
    "                 (0.5), 0 waits without limit. A process that does not\n"
    "                 answer (stopped by SIGSTOP, Ctrl-Z or a debugger) is an\n"
    "                 error; a change it had received is still made when it\n"
    "                 runs again.\n"
    "  -h, --help     show this help.\n"
    "\n"
    "Files: available_tracers, current_tracer, tracing_on,\n"
    "available_filter_functions, set_ftrace_filter, set_ftrace_notrace,\n"
    "set_graph_function, set_graph_notrace, max_graph_depth, tracing_thresh,\n"
    "set_ftrace_args, buffer_size_kb, trace, trace_pipe, trace_marker,\n"
    "enabled_functions, trace_stat/function, per_thread/TID/stats (see\n"
    "docs/CONTROL.md).\n"
    "\n"
    "Exit status: 0, 1 when the process refused the request, cannot be\n"
    "reached or did not answer in time (the reason is printed), 2 on a usage\n"
    "error.\n";

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

/* --timeout SECONDS at ARGV[*I] (cli_opt): 1 with *TIMEOUT_NS set, 0 when it
 * is another argument, -1 on a bad value (error printed). */
static int ctl_timeout_opt(int argc, char **argv, int *i, int64_t *timeout_ns)
{
	const char *v;
	int r = cli_opt(argc, argv, i, NULL, "--timeout", &v);
	if (r <= 0)
		return r;
	uint64_t ns;
	if (cli_parse_seconds(v, CTL_TIMEOUT_MAX_S, &ns)) {
		cli_err(
		    "%s: --timeout '%s': expected seconds from 0 (no limit) to %d, such as 2 or "
		    "0.5",
		    argv[0], v, CTL_TIMEOUT_MAX_S);
		return -1;
	}
	*timeout_ns = (int64_t)ns;
	return 1;
}

int ctl_cmd_opt(const char *usage, int argc, char **argv, int *i, int64_t *timeout_ns)
{
	int t;

	if (cli_is_help(argv[*i])) {
		fputs(usage, stdout);
		return 0;
	}
	if ((t = ctl_timeout_opt(argc, argv, i, timeout_ns)))
		return t < 0 ? 2 : CLI_OPT_TAKEN;
	return CLI_OPT_NONE;
}

/* The stream's output. A signal that came while the client was reading or
 * writing (not waiting in poll(), which would return EINTR) stops it here:
 * with a backlog of events to copy, poll() may never wait again. */
static int stream_sink(const char *p, size_t n, void *data)
{
	if (interrupted) {
		errno = EINTR;
		return -1;
	}
	return ctl_sink_file(p, n, data);
}

/* Stream trace_pipe of PID to stdout until interrupted or the process ends.
 * Shared with `dynftrace pipe`. */
int ctl_stream_pipe(struct ctl_conn *c, const char *what)
{
	struct sigaction sa = {.sa_handler = on_signal};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL); /* no SA_RESTART: poll() returns EINTR */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	char err[512];
	int r = ctl_send(c, "READ", what, NULL, 0);
	if (interrupted)
		return 0;
	if (r == -ETIMEDOUT) {
		ctl_timeout_msg(c->pid, c->timeout_ns, err, sizeof(err));
		cli_err("%s", err);
		return 1;
	}
	if (r) {
		cli_err("%d: cannot send the request: %s", (int)c->pid, strerror(-r));
		return 1;
	}
	/* The deadline covers the first answer; then events come when they
	 * come (a stopped process just has none). */
	c->stream = 1;
	r = ctl_response(c, stream_sink, stdout, err, sizeof(err));
	if (r == -EINTR || interrupted)
		return 0;
	if (r == 1) {
		cli_err("%d: %s: %s", (int)c->pid, what, err);
		return 1;
	}
	if (r == -ETIMEDOUT || r == -ECANCELED) {
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
	int64_t timeout_ns = CTL_TIMEOUT_DEFAULT_NS;
	char *pos[3];
	/* Options may come before PID or FILE; what follows FILE is VALUE
	 * (which may start with '-'). */
	for (int k = 1; k < argc; k++) {
		const char *a = argv[k];
		if (!dashdash && npos < 2 && a[0] == '-' && a[1]) {
			int t = ctl_cmd_opt(usage_text, argc, argv, &k, &timeout_ns);
			if (t >= 0)
				return t;
			if (t == CLI_OPT_TAKEN)
				continue;
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
	ctl_conn_init(&c, timeout_ns);
	if (ctl_connect(pid, &c, err, sizeof(err))) {
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
	if (sent == -ETIMEDOUT) {
		/* Not all of it was taken: the process drops a partial request. */
		ctl_timeout_msg(pid, timeout_ns, err, sizeof(err));
		cli_err("%s", err);
		ctl_close(&c);
		return 1;
	}
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
	} else if (r == -ETIMEDOUT) {
		/* The request is in its socket: it runs when the process does. */
		cli_err("%s%s", err,
			value ? "; the change is still made if the process runs again" : "");
		rc = 1;
	} else if (r) {
		cli_err("%d: %s", (int)pid, err);
		rc = 1;
	}
	ctl_close(&c);
	return rc;
}
