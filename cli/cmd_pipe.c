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
    "usage: dynftrace pipe PID\n"
    "\n"
    "Print the trace of the running process PID as it is made, until Ctrl-C\n"
    "(or SIGTERM) or until the process ends. Reading consumes: what `pipe`\n"
    "printed is gone from the process's trace_pipe (not from its `trace`).\n"
    "Turn tracing on with `dynftrace ctl PID current_tracer function_graph`.\n"
    "\n"
    "  -h, --help   show this help.\n"
    "\n"
    "Exit status: 0 when interrupted or when the process ended, 1 when it\n"
    "cannot be reached, 2 on a usage error.\n";

int cmd_pipe(int argc, char **argv)
{
	if (argc >= 2 && cli_is_help(argv[1])) {
		fputs(usage_text, stdout);
		return 0;
	}
	if (argc != 2) {
		cli_err(argc < 2 ? "pipe: no PID given; see 'dynftrace pipe --help'"
				 : "pipe: too many arguments; see 'dynftrace pipe --help'");
		return 2;
	}
	char *end;
	long pid = strtol(argv[1], &end, 10);
	if (*end || pid <= 0 || pid > INT_MAX) {
		cli_err("pipe: '%s' is not a process id", argv[1]);
		return 2;
	}
	struct ctl_conn c;
	char err[512];
	if (ctl_connect((pid_t)pid, &c, err, sizeof(err), NULL, 0)) {
		cli_err("%s", err);
		return 1;
	}
	int rc = ctl_stream_pipe(&c, "trace_pipe");
	ctl_close(&c);
	return rc;
}
