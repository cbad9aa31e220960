// SPDX-License-Identifier: MIT
/* s-trig-time: the call graph of calls.h under the options of s-trig-time.opts. */
#include "calls.h"
