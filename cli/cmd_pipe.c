// SPDX-License-Identifier: MIT
/*
 * cmd_pipe.c - `dynftrace pipe PID`: stream the trace_pipe of a running
 * process (docs/CONTROL.md) until interrupted, as `cat trace_pipe` does.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ctl_client.h"

static const char usage_text[] =
    "usage: dynftrace pipe [--timeout SECONDS] PID\n"
    "\n"
    "Print the trace of the running process PID as it is made, until Ctrl-C\n"
    "(or SIGTERM) or until the process ends. Reading consumes: what `pipe`\n"
    "printed is gone from the process's trace_pipe (not from its `trace`).\n"
    "Turn tracing on with `dynftrace ctl PID current_tracer function_graph`.\n"
    "\n"
    "  --timeout SECONDS\n"
    "               how long to wait for the process to take the connection\n"
    "               and the request and to give its first answer (default 5,\n"
    "               fractions allowed, 0: no limit). Once streaming, `pipe`\n"
    "               waits for events however long they take.\n"
    "  -h, --help   show this help.\n"
    "\n"
    "Exit status: 0 when interrupted or when the process ended, 1 when it\n"
    "cannot be reached or did not answer in time, 2 on a usage error.\n";

int cmd_pipe(int argc, char **argv)
{
	int64_t timeout_ns = CTL_TIMEOUT_DEFAULT_NS;
	const char *arg = NULL;
	for (int k = 1; k < argc; k++) {
		int t = ctl_cmd_opt(usage_text, argc, argv, &k, &timeout_ns);
		if (t >= 0)
			return t;
		if (t == CLI_OPT_TAKEN)
			continue;
		if (argv[k][0] == '-' && argv[k][1]) {
			cli_err("pipe: unknown option '%s'; see 'dynftrace pipe --help'", argv[k]);
			return 2;
		} else if (arg) {
			cli_err("pipe: too many arguments; see 'dynftrace pipe --help'");
			return 2;
		} else {
			arg = argv[k];
		}
	}
	if (!arg) {
		cli_err("pipe: no PID given; see 'dynftrace pipe --help'");
		return 2;
	}
	char *end;
	long pid = strtol(arg, &end, 10);
	if (*end || pid <= 0 || pid > INT_MAX) {
		cli_err("pipe: '%s' is not a process id", arg);
		return 2;
	}
	struct ctl_conn c;
	char err[512];
	ctl_conn_init(&c, timeout_ns);
	if (ctl_connect((pid_t)pid, &c, err, sizeof(err))) {
		cli_err("%s", err);
		return 1;
	}
	int rc = ctl_stream_pipe(&c, "trace_pipe");
	ctl_close(&c);
	return rc;
}
