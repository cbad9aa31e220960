/* SPDX-License-Identifier: MIT */
/* read_opts.c - what the commands that read a session share: their common
 * options and opening the session. */
#include <string.h>

#include "cli.h"
#include "trace_read.h"
#include "pattern.h"

int cli_read_opt(const char *cmd, const char *usage, int argc, char **argv, int *i,
		 const char **dir)
{
	const char *a = argv[*i], *v;
	int r;

	if (cli_is_help(a)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((r = cli_opt(argc, argv, i, "-d", "--data", &v))) {
		if (r < 0)
			return 2;
		*dir = v;
		return CLI_OPT_TAKEN;
	}
	if ((r = cli_demangle_opt(cmd, argc, argv, i)))
		return r < 0 ? 2 : CLI_OPT_TAKEN;
	if ((r = cli_match_opt(cmd, argc, argv, i)))
		return r < 0 ? 2 : CLI_OPT_TAKEN;
	cli_err("%s: unknown %s '%s'; see 'dynftrace %s --help'", cmd,
		a[0] == '-' ? "option" : "argument", a, cmd);
	return 2;
}

int cli_demangle_opt(const char *cmd, int argc, char **argv, int *i)
{
	const char *v;
	int r;

	if (!strcmp(argv[*i], "--no-demangle")) {
		tr_demangle = 0;
		return 1;
	}
	if (!(r = cli_opt(argc, argv, i, NULL, "--demangle", &v)) || r < 0)
		return r;
	if (!strcmp(v, "simple"))
		tr_demangle = 1;
	else if (!strcmp(v, "full"))
		tr_demangle = 2;
	else if (!strcmp(v, "no"))
		tr_demangle = 0;
	else {
		cli_err("%s: bad --demangle '%s': use simple, full or no", cmd, v);
		return -1;
	}
	return 1;
}

int cli_match_opt(const char *cmd, int argc, char **argv, int *i)
{
	const char *v;
	enum pat_mode m;
	int r;

	if (!(r = cli_opt(argc, argv, i, NULL, "--match", &v)) || r < 0)
		return r;
	if (pat_parse_mode(v, &m)) {
		cli_err("%s: bad --match '%s': use glob or regex", cmd, v);
		return -1;
	}
	pat_set_mode(m);
	return 1;
}

int cli_open_session(struct tr_session *s, const char *dir)
{
	if (!tr_open(s, dir))
		return 0;
	cli_err("%s", s->err);
	tr_close(s);
	return 1;
}

int cli_close_session(struct tr_session *s, int r, const char *doing)
{
	if (r < 0)
		cli_err("out of memory while %s", doing);
	tr_close(s);
	return r ? 1 : 0;
}
