/* SPDX-License-Identifier: MIT */
/* ctl_files.h - the control namespace's files (ctl_files.c), for the
 * server (ctl.c). Control thread only. */
#ifndef DYNFTRACE_CTL_FILES_H
#define DYNFTRACE_CTL_FILES_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl.h"

struct ctl_file;
typedef int (*read_fn)(const struct ctl_file *f, const char *arg, struct sbuf *out, char *why,
		       size_t whylen);
typedef int (*write_fn)(const struct ctl_file *f, const char *arg, char *val, size_t len,
			int append, char *why, size_t whylen);

#define F_TRACE	 1 /* `trace`: a generated snapshot */
#define F_PIPE	 2 /* `trace_pipe`: a stream */
#define F_DIR	 4 /* a directory: READ lists it */
#define F_PREFIX 8 /* NAME/ARG: the rest of the path is ARG */

struct ctl_file {
	const char *name;
	read_fn read;
	write_fn write;
	int flags;
	int list; /* enum trace_list for the filter files */
};

/* FILE by name; *ARG gets what follows "NAME/" for F_PREFIX entries. */
const struct ctl_file *file_find(const char *name, const char **arg) HIDDEN;
/* The root directory's listing. */
void list_root(struct sbuf *out) HIDDEN;
/* Is S an acceptable file name (letters, digits, _ - . /, no "..")? */
int name_ok(const char *s) HIDDEN;
/* A decimal number up to MAX into *OUT: 0, or -1. */
int parse_num(const char *s, uint64_t max, uint64_t *out) HIDDEN;
extern char ctl_exe[PATH_MAX] HIDDEN; /* the program's path */
/* White space trimmed in place; *LEN updated. */
char *trim(char *v, size_t *len) HIDDEN;

#endif
