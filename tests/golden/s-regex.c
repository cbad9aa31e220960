// SPDX-License-Identifier: MIT
/* s-regex: the call graph of calls.h under the options of s-regex.opts. */
#include "calls.h"
