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
int cmd_record(int argc, char **argv);
int cmd_live(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_graph(int argc, char **argv);  /* cmd_graph.c */
int cmd_ctl(int argc, char **argv);    /* cmd_ctl.c: live control */
int cmd_ps(int argc, char **argv);     /* cmd_ps.c */
int cmd_pipe(int argc, char **argv);   /* cmd_pipe.c */
int cmd_attach(int argc, char **argv); /* cmd_attach.c */
int cmd_detach(int argc, char **argv);

/*
 * cmd_sites.c: the sites of the program PATH and of the libraries the loader
 * would load for it, counted without running it. *IS_STATIC: no PT_INTERP
 * (nothing can be preloaded). 0, or -errno with ERR filled (-EINVAL: not an
 * x86-64 ELF object).
 */
int cli_sites_count(const char *path, size_t *total, int *is_static, char *err, size_t errlen);

/* util.c */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* cmd_info.c: a session's functions patched by relocation and refused. */
void cli_patched(const char *dir, FILE *out, size_t *nrefused, size_t *nobjects_refusing);

/* "10us", "1.5ms", "2s", "300" (ns): 0, -EINVAL or -ERANGE. */
int cli_parse_duration(const char *s, uint64_t *ns);
/* Seconds: "2", "0.5", or with a unit as cli_parse_duration takes them
 * ("500ms"); at most MAX_S s. 0, -EINVAL or -ERANGE. */
int cli_parse_seconds(const char *s, uint64_t max_s, uint64_t *ns);
/* A decimal number <= MAX: 0, -EINVAL or -ERANGE. */
int cli_parse_uint(const char *s, uint64_t max, uint64_t *val);
/* 5120 -> "5,120"; returns BUF. */
const char *cli_thousands(uint64_t v, char *buf, size_t size);
/* "  1.234 us", "  1.234 ms", "  1.234  s" (10 columns); returns BUF. */
const char *cli_fmt_duration(uint64_t ns, char *buf, size_t size);
/* "512 B", "1.5 KiB", "2.0 MiB"; returns BUF. */
const char *cli_fmt_size(uint64_t bytes, char *buf, size_t size);

/* A list of function-name globs (fnmatch). */
struct cli_globs {
	char **v;
	size_t n;
};
/* Add ARG; "a,b" adds two patterns. 0 or -ENOMEM. */
int cli_glob_add(struct cli_globs *g, const char *arg);
/* Add PAT as one pattern (its commas kept). 0 or -ENOMEM. */
int cli_glob_add_one(struct cli_globs *g, const char *pat);
/* Does NAME match one of the patterns (globs or regexes, pattern.h; a
 * C++ symbol's demangled names too)? */
int cli_glob_match(const struct cli_globs *g, const char *name);
/* Is every pattern usable (a regex compiles)? 0, or -1 after saying why,
 * prefixed with CMD. */
int cli_glob_check(const struct cli_globs *g, const char *cmd);
/* "a,b" (malloc'd), NULL when out of memory. */
char *cli_glob_join(const struct cli_globs *g);
void cli_glob_free(struct cli_globs *g);

/* Remove PATH and everything below it, never following symbolic links. */
int cli_rm_tree(const char *path);
/*
 * The runtime this dynftrace runs programs with. In a build tree the
 * binary's own directory holds libdynftrace.so and its attach link; an
 * installed binary finds its library directory at the path from its own
 * directory that the build recorded (install_paths.h: BINDIR to LIBDIR, so a tree
 * installed under DESTDIR or moved whole still finds its own runtime).
 * DIR: the library directory; PRELOAD: the file to preload; ATTACH: the
 * name attach loads it under (DYNFTRACE_ATTACH_SONAME). Each SIZE bytes
 * (any may be NULL). 0, or -ENOENT when no runtime is there.
 */
int cli_runtime(char *dir, char *preload, char *attach, size_t size);
/*
 * Option with a value at argv[*i]: "-d DIR", "-dDIR", "--data DIR" or
 * "--data=DIR" (SOPT or LOPT may be NULL). Returns 1 with *VAL set (and *i
 * moved past a separate value), 0 when argv[*i] is another option, -1 when
 * the value is missing (error printed; argv[0] is the command's name).
 */
int cli_opt(int argc, char **argv, int *i, const char *sopt, const char *lopt, const char **val);

/* What the option helpers below return when they do not end the command
 * (else the exit status it ends with: 0 after --help, 2 on a usage error). */
enum {
	CLI_OPT_NONE = -2, /* not theirs: the command's own argument */
	CLI_OPT_TAKEN = -1 /* taken: go on with the next argument */
};
/* The commands that read a session (replay, report, info, dump): their
 * common options (-h/--help, -d/--data DIR, --no-demangle) and the end of
 * their option loops, for argument *I of ARGV (read_opts.c): never
 * CLI_OPT_NONE. */
int cli_read_opt(const char *cmd, const char *usage, int argc, char **argv, int *i,
		 const char **dir);
/*
 * The part of a session a view reads, from the options the reading commands
 * share: "--tid TID[,TID...]" (repeatable) and "--time-range FROM~TO", times
 * since the start of the recording with a unit as cli_parse_duration takes
 * them, either side left out for "from the start" / "to the end".
 */
struct cli_select {
	pid_t *tids; /* only these threads, when ntids > 0 */
	size_t ntids;
	int has_range;
	uint64_t from_ns, to_ns; /* since the session's first time (tr_base_ts) */
};
/* The option at argv[*I], if it is one of those: CLI_OPT_TAKEN, or 2 after
 * a usage error (said); CLI_OPT_NONE when it is not theirs. */
int cli_select_opt(const char *cmd, int argc, char **argv, int *i, struct cli_select *sel);
/* "TID,TID" appended to *TIDS: 0, -EINVAL or -ENOMEM. */
int cli_parse_tids(const char *arg, pid_t **tids, size_t *n);
void cli_select_free(struct cli_select *sel);
/* Does SEL (NULL: everything) take thread TID? */
int cli_select_tid(const struct cli_select *sel, pid_t tid);
/* --demangle=simple|full|no (or --no-demangle) and --match=glob|regex at
 * argument *I: 1 taken, 0 not this option, -1 a usage error said. */
int cli_demangle_opt(const char *cmd, int argc, char **argv, int *i);
int cli_match_opt(const char *cmd, int argc, char **argv, int *i);
/* Open the session in DIR, or say why: 0, or 1 (the command's status). */
struct tr_session;
int cli_open_session(struct tr_session *s, const char *dir);
/* Close S after a view that returned R (views.h), saying "out of memory
 * while DOING" when R < 0: the command's status, 0 when R is 0, else 1. */
int cli_close_session(struct tr_session *s, int r, const char *doing);
/* A view of calls (CMD: graph, dump) on the session S opened from DIR: 0,
 * or 1 (the command's status) after saying that the profile tracer's
 * session has no calls to show, only report's table. Closes S then. */
int cli_need_calls(struct tr_session *s, const char *cmd, const char *dir);
/* Is ARG the flag SOPT or LOPT? */
int cli_flag(const char *arg, const char *sopt, const char *lopt);
/* A C++ symbol demangled (malloc'd), STYLE 1: simple (uftrace's
 * --demangle=simple), 2: full (c++filt's); NULL for another name. */
char *cli_demangle(const char *name, int style);
/* Append LINE to DIR/info (O_APPEND, one write, as the runtime does): 0 or
 * -errno. */
int cli_info_append(const char *dir, const char *line);
/* "cannot write the output: ERRNO" */
void cli_out_error(void);

#endif
