/* SPDX-License-Identifier: MIT */
/*
 * demangle.h - C++ symbol names (the Itanium C++ ABI mangling) made
 * readable, with libc only: the runtime's filters match them and the
 * command shows them (shared with the CLI).
 *
 * DM_FULL gives what binutils' c++filt gives for every form it accepts;
 * DM_SIMPLE drops template arguments, function parameters, return types,
 * cv- and ref-qualifiers of member functions, ABI tags and clone suffixes
 * (uftrace's --demangle=simple): "std::_Rb_tree::_M_insert_unique". A
 * simple name is never longer than the full one.
 *
 * Forms not handled (expressions in decltype or template arguments,
 * a few rare vendor forms) are refused rather than guessed: the caller
 * shows the symbol as it is.
 */
#ifndef DYNFTRACE_DEMANGLE_H
#define DYNFTRACE_DEMANGLE_H

#include <stddef.h>

enum dm_style { DM_FULL, DM_SIMPLE };

/* Demangle MANGLED into OUT (SIZE bytes, NUL-terminated): its length;
 * -EINVAL when MANGLED is not a C++ symbol or uses a form not handled,
 * -ENOSPC when OUT is too small, -ENOMEM. Thread-safe, no global state. */
int dft_demangle(const char *mangled, enum dm_style style, char *out, size_t size);

#endif
