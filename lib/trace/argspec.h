/* SPDX-License-Identifier: MIT */
/*
 * argspec.h - uftrace's argument and return value specifications
 * (`-A FUNC@arg1/x,arg2/s,fparg1`, `-R FUNC@retval/i32`), compiled into
 * what the runtime captures at a function's entry and return. A pure
 * parser: the runtime (args.c) and the command (record's checks, the
 * control file's echo) share it.
 *
 * An item is argN (N 1-8: the integer argument registers), fpargN (the
 * floating-point ones) or retval, with an optional /FORMAT: a letter and
 * a size in bits, or a size alone:
 *   d  (default) decimal, hexadecimal beyond +-100000, as uftrace prints
 *   i  signed decimal        u  unsigned (hexadecimal beyond 100000)
 *   x  hexadecimal           p  pointer (hexadecimal)
 *   c  character             s  string (copied, at most FMT_ARG_STR_MAX bytes)
 *   f  float (fpargN: 64 bits unless /f32 or /32)
 *   e:NAME  an enum: the integer is recorded, the reader shows NAME's label
 * Sizes 8, 16, 32, 64 (bits) for d i u x; f 32 or 64. The format bytes
 * are format.h's item fmt letters.
 */
#ifndef DYNFTRACE_ARGSPEC_H
#define DYNFTRACE_ARGSPEC_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

struct arg_item {
	uint8_t slot;			/* format.h: N, FMT_SLOT_FP | N, 0 for the return value */
	char fmt;			/* d i u x p c s f e */
	uint8_t size;			/* bytes */
	uint8_t kind;			/* format.h's FMT_ARG_*: fmt and size (s: str) */
	char enm[FMT_ARG_ENUM_MAX + 1]; /* e: the enum's name */
};

struct arg_spec {
	uint8_t n;	 /* arguments in it[], in the order given */
	uint8_t has_ret; /* ret is wanted */
	struct arg_item it[FMT_ARGS_MAX];
	struct arg_item ret;
};

/*
 * Parse the items ITEMS ("arg1/x,arg2/s,retval") into *OUT (zeroed
 * first). RETVAL: 1 for -R (retval only, and "retval" alone when ITEMS is
 * empty), 0 for -A (arguments, retval accepted too). 0, or -EINVAL with
 * one sentence in WHY.
 */
int argspec_parse(const char *items, int retval, struct arg_spec *out, char *why, size_t whylen);

/* Merge SRC into DST: an item for a register already there replaces it
 * in place (the later specification wins, as in uftrace), new ones go
 * last. */
void argspec_merge(struct arg_spec *dst, const struct arg_spec *src);

/* Write SPEC back as items ("arg1/d64,fparg1/f64,retval/i32") into BUF;
 * the length it needed (as snprintf). */
int argspec_format(const struct arg_spec *spec, char *buf, size_t size);

/*
 * Value A as uftrace's replay shows it, into BUF (always terminated):
 *   d   decimal within +-100000, else hexadecimal (a 64-bit value whose
 *       upper half is zero is read as a 32-bit int first, as uftrace does);
 *   i   signed decimal;  u  decimal up to 100000, else hexadecimal;
 *   x p hexadecimal ("0" for zero);  c  'c' with C escapes;  f  %f;
 *   e   LABEL when not NULL, else the integer;
 *   s   "text" with C escapes, "text"... when cut, (null), (bad ptr 0x..),
 *       (unreadable 0x..) when the process could not read it.
 * Valid UTF-8 stays as it is; control characters and every other byte
 * from 0x80 up print as \xNN, so the text is printable UTF-8.
 */
void argspec_value_format(const struct fmt_arg *a, const char *label, char *buf, size_t size);
/* Every value of DATA (LEN bytes: format.h's count, then the items)
 * joined by ", " into BUF, enums as integers. */
void argspec_values_format(const uint8_t *data, size_t len, char *buf, size_t size);

/* The length (2 to 4) of the well-formed UTF-8 sequence of a character
 * above U+007F at P (N bytes readable), else 0: a stray or cut byte, an
 * overlong form, a surrogate or a value above U+10FFFF. */
int argspec_utf8_len(const unsigned char *p, size_t n);

#endif
