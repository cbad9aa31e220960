// SPDX-License-Identifier: MIT
/* s-trig-backtrace: the call graph of calls.h under the options of s-trig-backtrace.opts. */
#include "calls.h"
