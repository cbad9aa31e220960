// SPDX-License-Identifier: MIT
/* s-trig-depth: the call graph of calls.h under the options of s-trig-depth.opts. */
#include "calls.h"
