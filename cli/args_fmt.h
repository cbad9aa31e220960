/* SPDX-License-Identifier: MIT */
/*
 * args_fmt.h - the values of entry_args and exit_retval events (format.h)
 * as uftrace prints them, and the session's enum labels (DIR/enums.txt).
 */
#ifndef DYNFTRACE_ARGS_FMT_H
#define DYNFTRACE_ARGS_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

struct tr_session;

/* One value as uftrace's replay shows it (argspec_value_format), an
 * enum's label from S's enums.txt (S may be NULL). */
void tr_arg_format(struct tr_session *s, const struct fmt_arg *a, char *buf, size_t size);

/* Every value of DATA (LEN bytes: format.h's count and items, checked
 * by the stream reader) joined by ", " into BUF. */
void tr_args_format(struct tr_session *s, const uint8_t *data, size_t len, char *buf, size_t size);

/* The name of A's slot: "arg1", "fparg2", "retval". */
void tr_arg_name(const struct fmt_arg *a, char *buf, size_t size);

/* The label of VALUE in enum NAME (LEN bytes) from DIR/enums.txt, read on
 * first use ("ENUMNAME VALUE LABEL" lines), or NULL. */
const char *tr_enum_label(struct tr_session *s, const char *name, size_t len, int64_t value);
void tr_enums_free(struct tr_session *s);

#endif
