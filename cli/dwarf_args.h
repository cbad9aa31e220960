/* SPDX-License-Identifier: MIT */
/*
 * dwarf_args.h - argument and return-value specs, in uftrace's -A/-R
 * syntax, read from a file's DWARF debug information (the command's side
 * of --auto-args; the runtime never reads DWARF).
 *
 * Built with libdw when its headers are found at build time (HAVE_LIBDW);
 * without it every call returns -ENOTSUP and dwarf_args_available() says 0.
 */
#ifndef DYNFTRACE_DWARF_ARGS_H
#define DYNFTRACE_DWARF_ARGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The sentence to print when dwarf_args_available() is 0. */
#define DWARF_ARGS_NO_LIBDW "this dynftrace was built without DWARF support (libdw)"

/* The longest enum name of an e:NAME spec (the runtime's limit); longer
 * names are cut, and made unique with a suffix. */
#define DWARF_ARGS_ENUM_MAX 32

/* The highest argN a spec names: on x86-64 arg7 and arg8 are the first
 * two 8-byte stack slots of the arguments (as uftrace reads them); an
 * integer argument in a later slot is not described. */
#define DWARF_ARGS_ARGN_MAX 8

/* One function with a definition in the file's DWARF. */
struct dwarf_func_args {
	const char *func;    /* its symbol name: the runtime's name for it */
	uint64_t addr;	     /* link-time address of its entry */
	const char *argspec; /* "arg1/i32,arg2/s,fparg1/f64": the part after
				"func@" of -A; NULL when no argument is described */
	const char *retspec; /* "retval/u64": the part after "func@" of -R;
				NULL for void, or when the type is not described */
	const char *note;    /* what was left out and why ("arg2: struct pair
				passed by value ..."); NULL when nothing was */
};

/* Called once per function, in address order; a non-zero return stops the
 * walk and is returned by dwarf_auto_args(). */
typedef int (*dwarf_args_emit_fn)(void *ctx, const struct dwarf_func_args *f);

/*
 * Every function defined in PATH (a program or shared object) whose symbol
 * name matches PATTERN (NULL: all; a glob or regex as -F takes them,
 * pattern.h, also matching a C++ symbol's demangled names), with its specs.
 * The DWARF is PATH's own, or its separate debug file as libdw's standard
 * search finds it (.gnu_debuglink next to PATH, in .debug/ or under
 * /usr/lib/debug, /usr/lib/debug/.build-id/; DWZ alternate files).
 * Functions are named by PATH's symbol table (or its build-id debug
 * file's), as the runtime names them; a function without a symbol at its
 * entry is not reported. ENUMS_OUT (may be NULL) receives the enum table:
 * one line "ENUMNAME VALUE LABEL" per enumerator of every enum a spec
 * names (e:ENUMNAME), VALUE in decimal: the enumerator's bits as a signed
 * integer of the enum's size (e:NAME is for 4-byte enums; an enum of
 * another size is given as its integer, iN or uN).
 *
 * Returns the number of functions reported (>= 0; then ERR, if not empty,
 * holds a warning: part of the DWARF was damaged), the emitter's non-zero
 * value, or -errno with ERR (ERRLEN bytes, may be 0) holding one sentence:
 * -ENOTSUP built without libdw, or a machine other than x86-64/aarch64;
 * -ENODATA no DWARF found; -EINVAL not an ELF file, or damaged (its
 * DWARF too); -ENOENT,
 * -EACCES, -ENOMEM.
 */
int dwarf_auto_args(const char *path, const char *pattern, dwarf_args_emit_fn emit, void *ctx,
		    FILE *enums_out, char *err, size_t errlen);

/* 1 when built with libdw, else 0. */
int dwarf_args_available(void);

#endif
