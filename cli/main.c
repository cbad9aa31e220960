// SPDX-License-Identifier: MIT
/*
 * main.c - `dynftrace COMMAND [ARGS]`: option parsing and the command table.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "dynftrace/dynftrace.h"
#include "cli.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
    {"record", cmd_record, "run a program and record its function calls"},
    {"replay", cmd_replay, "print a recorded trace as a call graph"},
    {"report", cmd_report, "print time and calls per function of a recorded trace"},
    {"live", cmd_live, "record a program, then replay its trace"},
    {"graph", cmd_graph, "print the call graph below and above a function, with times"},
    {"info", cmd_info, "print what a recorded session holds"},
    {"dump", cmd_dump, "convert a recorded trace (--chrome, --perfetto, --flame-graph, --svg)"},
    {"cflags", cmd_cflags, "print the compiler and linker flags for traceable code"},
    {"sites", cmd_sites, "list the traceable functions of a program and its libraries"},
    {"ctl", cmd_ctl, "read or change the tracing of a running process"},
    {"ps", cmd_ps, "list the running processes whose tracing can be controlled"},
    {"pipe", cmd_pipe, "stream the trace of a running process"},
    {"attach", cmd_attach, "load the runtime into a running process"},
    {"detach", cmd_detach, "take the runtime out of a process it was attached to"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

void cli_err(const char *fmt, ...)
{
	va_list ap;

	fputs("dynftrace: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_is_help(const char *arg)
{
	return !strcmp(arg, "-h") || !strcmp(arg, "--help");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: dynftrace [--help|-h] [--version|-V] COMMAND [ARGS]\n"
		   "\n"
		   "Dynamic function tracing for user-space programs built with entry sites.\n"
		   "\n"
		   "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nSee 'dynftrace COMMAND --help' for the options of a command.\n");
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		cli_err("no command given; see 'dynftrace --help'");
		return 2;
	}
	cmd = argv[1];
	if (cli_is_help(cmd) || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
		printf("dynftrace %s\n", DYNFTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(cmd, commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	if (cmd[0] == '-')
		cli_err("unknown option '%s'; see 'dynftrace --help'", cmd);
	else
		cli_err("unknown command '%s'; see 'dynftrace --help'", cmd);
	return 2;
}
