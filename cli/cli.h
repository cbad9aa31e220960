/* SPDX-License-Identifier: MIT */
/*
 * cli.h - the dynftrace command's subcommands.
 *
 * Each subcommand is `int cmd_NAME(int argc, char **argv)` with argv[0] the
 * subcommand's name; it returns the process exit status: 0 success, 1 a
 * failure to do the job, 2 a usage error. Errors are one sentence on stderr,
 * printed through cli_err(). Add a command: write cli/cmd_NAME.c and one line
 * in the table of cli/main.c.
 */
#ifndef DYNFTRACE_CLI_H
#define DYNFTRACE_CLI_H

/* "dynftrace: " + the formatted sentence + newline, on stderr. */
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Is ARG "-h" or "--help"? */
int cli_is_help(const char *arg);

int cmd_cflags(int argc, char **argv);
int cmd_sites(int argc, char **argv);

#endif
