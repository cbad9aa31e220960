/* SPDX-License-Identifier: MIT */
/* ctf.h - the session's CTF metadata (ctf.c). */
#ifndef DYNFTRACE_CTF_H
#define DYNFTRACE_CTF_H

#include <stdint.h>

#include "internal.h"

/* Make CTF_DIR/metadata (the first process of a session: a new uuid, into
 * TRACE_UUID) or read its uuid into TRACE_UUID. 0 or -errno. */
int ctf_metadata_init(const char *ctf_dir, uint8_t trace_uuid[16]) HIDDEN;

#endif
