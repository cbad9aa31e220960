/* SPDX-License-Identifier: MIT */
/*
 * args_fmt.c - argument and return values as uftrace prints them (see
 * args_fmt.h), and enums.txt.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args_fmt.h"
#include "trace_session.h"

struct tr_enum {
	char *name, *label;
	int64_t value;
};
struct tr_enums {
	struct tr_enum *v;
	size_t n;
};

static void enums_read(struct tr_session *s)
{
	s->enums_read = 1;
	char path[4200];
	snprintf(path, sizeof(path), "%s/enums.txt", s->dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	struct tr_enums *e = calloc(1, sizeof(*e));
	char line[1024];
	while (e && fgets(line, sizeof(line), f)) {
		char name[256], label[512];
		long long v;
		if (line[0] == '#' || sscanf(line, "%255s %lld %511s", name, &v, label) != 3)
			continue; /* a line we do not understand shows the integer */
		struct tr_enum *nv = realloc(e->v, (e->n + 1) * sizeof(*nv));
		if (!nv)
			break;
		e->v = nv;
		nv[e->n].name = strdup(name);
		nv[e->n].label = strdup(label);
		nv[e->n].value = v;
		if (nv[e->n].name && nv[e->n].label)
			e->n++;
		else {
			free(nv[e->n].name);
			free(nv[e->n].label);
		}
	}
	fclose(f);
	s->enums = e;
}

const char *tr_enum_label(struct tr_session *s, const char *name, size_t len, int64_t value)
{
	if (!s)
		return NULL;
	if (!s->enums_read)
		enums_read(s);
	if (!s->enums)
		return NULL;
	for (size_t i = 0; i < s->enums->n; i++) {
		const struct tr_enum *e = &s->enums->v[i];
		if (e->value == value && strlen(e->name) == len && !memcmp(e->name, name, len))
			return e->label;
	}
	return NULL;
}

void tr_enums_free(struct tr_session *s)
{
	if (s->enums) {
		for (size_t i = 0; i < s->enums->n; i++) {
			free(s->enums->v[i].name);
			free(s->enums->v[i].label);
		}
		free(s->enums->v);
		free(s->enums);
	}
	s->enums = NULL;
	s->enums_read = 0;
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
	} else if (c < 0x20 || c == 0x7f) {
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

void tr_arg_format(struct tr_session *s, const struct fmt_arg *a, char *buf, size_t size)
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
		const char *l = tr_enum_label(s, a->str, a->len, v);
		if (l)
			snprintf(buf, size, "%s", l);
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
			for (uint8_t i = 0; i < a->len; i++) {
				esc((unsigned char)a->str[i], '"', e);
				size_t n = strlen(e);
				if (at + n + 5 >= size)
					break;
				memcpy(buf + at, e, n);
				at += n;
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

void tr_args_format(struct tr_session *s, const uint8_t *data, size_t len, char *buf,
		    size_t size)
{
	const uint8_t *p = data, *end = data + len;
	struct fmt_arg a;
	size_t at = 0;
	if (size)
		buf[0] = 0;
	while (fmt_arg_next(&p, end, &a) > 0) {
		char one[FMT_ARG_STR_MAX * 4 + 64];
		tr_arg_format(s, &a, one, sizeof(one));
		int k = snprintf(at < size ? buf + at : NULL, at < size ? size - at : 0, "%s%s",
				 at ? ", " : "", one);
		at += (size_t)k;
	}
}

void tr_arg_name(const struct fmt_arg *a, char *buf, size_t size)
{
	if (!a->slot)
		snprintf(buf, size, "retval");
	else
		snprintf(buf, size, "%sarg%u", a->slot & FMT_SLOT_FP ? "fp" : "",
			 a->slot & ~FMT_SLOT_FP);
}
