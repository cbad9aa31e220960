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
#include "argspec.h"
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

void tr_arg_format(struct tr_session *s, const struct fmt_arg *a, char *buf, size_t size)
{
	const char *label = NULL;
	if (a->fmt == 'e') {
		int64_t v = (int32_t)(uint32_t)a->bits;
		label = tr_enum_label(s, a->str, a->len, v);
	}
	argspec_value_format(a, label, buf, size);
}

void tr_args_format(struct tr_session *s, const uint8_t *data, size_t len, char *buf, size_t size)
{
	const uint8_t *p, *end = data + len;
	int n = fmt_args_items(data, len, &p);
	struct fmt_arg a;
	size_t at = 0;
	if (size)
		buf[0] = 0;
	for (int i = 0; i < n && fmt_arg_next(&p, end, &a) > 0; i++) {
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
