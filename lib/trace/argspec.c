/* SPDX-License-Identifier: MIT */
/*
 * argspec.c - uftrace's argument specifications (see argspec.h). libc
 * only: linked into the runtime and the command.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argspec.h"

#define WHY(...) ((void)(why && snprintf(why, whylen, __VA_ARGS__)))

/* "/FORMAT" of item ITEM into *IT (slot set): 0 or -EINVAL. */
static int parse_fmt(const char *item, const char *f, struct arg_item *it, char *why, size_t whylen)
{
	int fp = (it->slot & FMT_SLOT_FP) != 0;
	it->fmt = fp ? 'f' : 'd';
	it->size = 8;
	if (!f)
		return 0;
	if (!*f)
		goto bad;
	if (!strncmp(f, "e:", 2)) {
		size_t n = strlen(f + 2);
		if (fp || !n || n > FMT_ARG_ENUM_MAX || strpbrk(f + 2, " ,;@/")) {
			WHY("bad argument '%s': e:NAME takes an enum's name (1 to %d characters) "
			    "and an integer argument",
			    item, FMT_ARG_ENUM_MAX);
			return -EINVAL;
		}
		it->fmt = 'e';
		it->size = 4;
		memcpy(it->enm, f + 2, n + 1);
		return 0;
	}
	if (strchr("diuxpcsf", *f)) {
		it->fmt = *f++;
	} else if (*f < '0' || *f > '9') {
		if (*f == 'S')
			WHY("bad argument '%s': std::string (/S) is not supported", item);
		else
			WHY("bad argument '%s': unknown format '%c' (d i u x p c s f e:NAME)", item,
			    *f);
		return -EINVAL;
	}
	if (fp != (it->fmt == 'f')) {
		WHY("bad argument '%s': %s", item,
		    fp ? "fpargN takes /f, /f32 or /f64" : "/f needs fpargN");
		return -EINVAL;
	}
	if (it->fmt == 'c' || it->fmt == 's' || it->fmt == 'p') {
		if (*f)
			goto bad;
		it->size = it->fmt == 'c' ? 1 : 8;
		return 0;
	}
	if (!*f)
		return 0;
	char *end;
	unsigned long bits = strtoul(f, &end, 10);
	if (*end || (bits != 8 && bits != 16 && bits != 32 && bits != 64) ||
	    (it->fmt == 'f' && bits != 32 && bits != 64))
		goto bad;
	it->size = (uint8_t)(bits / 8);
	return 0;
bad:
	WHY("bad argument '%s': the format is a letter (d i u x p c s f), a size in bits "
	    "(8 16 32 64; f: 32 64) or both, or e:NAME",
	    item);
	return -EINVAL;
}

/* One item ("arg2/x") into *IT: 0 or -EINVAL. */
static int parse_item(char *item, struct arg_item *it, char *why, size_t whylen)
{
	char *slash = strchr(item, '/');
	if (slash)
		*slash = 0;
	const char *f = slash ? slash + 1 : NULL;
	memset(it, 0, sizeof(*it));
	int r;
	if (!strcmp(item, "retval")) {
		it->slot = 0;
		/* a floating-point return value: /f, /f32, /f64 */
		if (f && *f == 'f') {
			it->slot = FMT_SLOT_FP; /* for parse_fmt only */
			r = parse_fmt(item, f, it, why, whylen);
			it->slot = 0;
		} else {
			r = parse_fmt(item, f, it, why, whylen);
		}
	} else {
		int fp = !strncmp(item, "fparg", 5);
		const char *num = item + (fp ? 5 : 3);
		char *end;
		unsigned long n = strtoul(num, &end, 10);
		if ((!fp && strncmp(item, "arg", 3)) || end == num || *end || n < 1 ||
		    n > FMT_ARGS_MAX) {
			WHY("bad argument '%s%s%s': give argN or fpargN (N from 1 to %d) or retval",
			    item, f ? "/" : "", f ? f : "", FMT_ARGS_MAX);
			if (slash)
				*slash = '/';
			return -EINVAL;
		}
		it->slot = (uint8_t)n | (fp ? FMT_SLOT_FP : 0);
		r = parse_fmt(item, f, it, why, whylen);
	}
	if (slash)
		*slash = '/';
	if (!r) /* every format and size parse_fmt takes has a kind */
		it->kind = (uint8_t)fmt_arg_kind(it->fmt, it->size, FMT_STR_OK);
	return r;
}

/* IT into S: an item for a register already there replaces it in place,
 * else it goes last (uftrace prints the values in the order given). */
static void put_item(struct arg_spec *s, const struct arg_item *it)
{
	if (!it->slot) {
		s->ret = *it;
		s->has_ret = 1;
		return;
	}
	for (uint8_t i = 0; i < s->n; i++)
		if (s->it[i].slot == it->slot) {
			s->it[i] = *it;
			return;
		}
	if (s->n < FMT_ARGS_MAX) /* else full: argspec_parse refuses a ninth */
		s->it[s->n++] = *it;
}

int argspec_parse(const char *items, int retval, struct arg_spec *out, char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	if (retval && !*items)
		items = "retval";
	char *copy = strdup(items), *save;
	if (!copy)
		return -ENOMEM;
	int err = 0, nitems = 0;
	for (char *w = strtok_r(copy, ",", &save); w && !err; w = strtok_r(NULL, ",", &save)) {
		struct arg_item it;
		if ((err = parse_item(w, &it, why, whylen)))
			break;
		if (retval && it.slot) {
			WHY("bad return value '%s': -R takes FUNC@retval[/FORMAT]", w);
			err = -EINVAL;
			break;
		}
		if (it.slot && out->n == FMT_ARGS_MAX) {
			int dup = 0;
			for (int i = 0; i < out->n; i++)
				dup |= out->it[i].slot == it.slot;
			if (!dup) {
				WHY("too many arguments: at most %d per function", FMT_ARGS_MAX);
				err = -EINVAL;
				break;
			}
		}
		put_item(out, &it);
		nitems++;
	}
	if (!err && !nitems) {
		WHY("no argument given after '@' (arg1, fparg1, retval...)");
		err = -EINVAL;
	}
	free(copy);
	return err;
}

void argspec_merge(struct arg_spec *dst, const struct arg_spec *src)
{
	for (uint8_t i = 0; i < src->n; i++) {
		int dup = 0;
		for (uint8_t k = 0; k < dst->n; k++)
			dup |= dst->it[k].slot == src->it[i].slot;
		if (dup || dst->n < FMT_ARGS_MAX)
			put_item(dst, &src->it[i]);
	}
	if (src->has_ret)
		put_item(dst, &src->ret);
}

static int item_format(const struct arg_item *it, char *buf, size_t size)
{
	char name[16];
	if (!it->slot)
		snprintf(name, sizeof(name), "retval");
	else
		snprintf(name, sizeof(name), "%sarg%u", it->slot & FMT_SLOT_FP ? "fp" : "",
			 it->slot & ~FMT_SLOT_FP);
	switch (it->fmt) {
	case 'e':
		return snprintf(buf, size, "%s/e:%s", name, it->enm);
	case 'c':
	case 's':
	case 'p':
		return snprintf(buf, size, "%s/%c", name, it->fmt);
	default:
		return snprintf(buf, size, "%s/%c%u", name, it->fmt, it->size * 8u);
	}
}

int argspec_format(const struct arg_spec *spec, char *buf, size_t size)
{
	int len = 0;
	for (int i = 0; i <= spec->n; i++) {
		const struct arg_item *it = i < spec->n ? &spec->it[i] : &spec->ret;
		if (i == spec->n && !spec->has_ret)
			break;
		char one[64];
		item_format(it, one, sizeof(one));
		size_t at = (size_t)len;
		int k = snprintf(at < size ? buf + at : NULL, at < size ? size - at : 0, "%s%s",
				 len ? "," : "", one);
		len += k;
	}
	if (!len && size)
		buf[0] = 0;
	return len;
}

/* ---- values, as uftrace prints them ----------------------------------- */

int argspec_utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	int len = c >= 0xc2 && c <= 0xdf   ? 2
		  : c >= 0xe0 && c <= 0xef ? 3
		  : c >= 0xf0 && c <= 0xf4 ? 4
					   : 0;

	if (!len || (size_t)len > n)
		return 0;
	/* the second byte's range rules out overlongs, surrogates and > U+10FFFF */
	unsigned lo = c == 0xe0 ? 0xa0 : c == 0xf0 ? 0x90 : 0x80;
	unsigned hi = c == 0xed ? 0x9f : c == 0xf4 ? 0x8f : 0xbf;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (int i = 2; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

/* C's escape for byte C inside QUOTE ('"' or '\''), into OUT (5 bytes). */
static void esc(unsigned char c, char quote, char *out)
{
	static const char from[] = "\n\t\r\\\0", to[] = "ntr\\0";
	const char *k = c ? memchr(from, c, 4) : from + 4;
	if (k) {
		snprintf(out, 5, "\\%c", to[k - from]);
	} else if (c == (unsigned char)quote) {
		snprintf(out, 5, "\\%c", quote);
	} else if (c < 0x20 || c >= 0x7f) {
		snprintf(out, 5, "\\x%02x", c);
	} else {
		out[0] = (char)c;
		out[1] = 0;
	}
}

static int64_t sext(uint64_t v, unsigned size)
{
	if (size >= 8)
		return (int64_t)v;
	unsigned sh = 64 - size * 8;
	return (int64_t)(v << sh) >> sh;
}

static uint64_t mask(uint64_t v, unsigned size)
{
	return size >= 8 ? v : v & ((UINT64_C(1) << (size * 8)) - 1);
}

void argspec_value_format(const struct fmt_arg *a, const char *label, char *buf, size_t size)
{
	if (!size)
		return;
	buf[0] = 0;
	switch (a->fmt) {
	case 'd': {
		unsigned sz = a->size;
		if (sz == 8 && !(a->bits >> 32))
			sz = 4; /* an int in a 64-bit register: uftrace reads it so */
		int64_t v = sext(a->bits, sz);
		if (v >= -100000 && v <= 100000)
			snprintf(buf, size, "%" PRId64, v);
		else
			snprintf(buf, size, "%#" PRIx64, mask(a->bits, sz));
		break;
	}
	case 'i':
		snprintf(buf, size, "%" PRId64, sext(a->bits, a->size));
		break;
	case 'u':
		if (a->bits <= 100000)
			snprintf(buf, size, "%" PRIu64, a->bits);
		else
			snprintf(buf, size, "%#" PRIx64, a->bits);
		break;
	case 'x':
	case 'p':
		snprintf(buf, size, "%#" PRIx64, a->bits);
		break;
	case 'c': {
		char e[5];
		esc((unsigned char)a->bits, '\'', e);
		snprintf(buf, size, "'%s'", e);
		break;
	}
	case 'f':
		if (a->size == 4) {
			float f;
			uint32_t b = (uint32_t)a->bits;
			memcpy(&f, &b, 4);
			snprintf(buf, size, "%f", (double)f);
		} else {
			double d;
			memcpy(&d, &a->bits, 8);
			snprintf(buf, size, "%f", d);
		}
		break;
	case 'e': {
		int64_t v = sext(a->bits, 4);
		if (label)
			snprintf(buf, size, "%s", label);
		else
			snprintf(buf, size, "%" PRId64, v);
		break;
	}
	case 's':
		if (a->str_state == FMT_STR_NULL) {
			snprintf(buf, size, "(null)");
		} else if (a->str_state == FMT_STR_BAD) {
			snprintf(buf, size, "(bad ptr %#" PRIx64 ")", a->bits);
		} else if (a->str_state == FMT_STR_UNREAD) {
			snprintf(buf, size, "(unreadable %#" PRIx64 ")", a->bits);
		} else {
			size_t at = 0;
			char e[5];
			buf[at++] = '"';
			for (uint8_t i = 0; i < a->len;) {
				const unsigned char *c = (const unsigned char *)a->str + i;
				int u = *c >= 0x80 ? argspec_utf8_len(c, a->len - i) : 0;
				const char *from = (const char *)c;
				size_t n = (size_t)u;
				if (!u) {
					esc(*c, '"', e);
					from = e;
					n = strlen(e);
				}
				if (at + n + 5 >= size)
					break;
				memcpy(buf + at, from, n);
				at += n;
				i += u ? u : 1;
			}
			if (at + 5 <= size) {
				buf[at++] = '"';
				if (a->str_state == FMT_STR_CUT)
					for (int k = 0; k < 3; k++)
						buf[at++] = '.';
			}
			buf[at < size ? at : size - 1] = 0;
		}
		break;
	default:
		snprintf(buf, size, "?");
	}
}

void argspec_values_format(const uint8_t *data, size_t len, char *buf, size_t size)
{
	const uint8_t *p, *end = data + len;
	int n = fmt_args_items(data, len, &p);
	struct fmt_arg a;
	size_t at = 0;
	if (size)
		buf[0] = 0;
	for (int i = 0; i < n && fmt_arg_next(&p, end, &a) > 0; i++) {
		char one[FMT_ARG_STR_MAX * 4 + 64];
		argspec_value_format(&a, NULL, one, sizeof(one));
		int k = snprintf(at < size ? buf + at : NULL, at < size ? size - at : 0, "%s%s",
				 at ? ", " : "", one);
		at += (size_t)k;
	}
}
