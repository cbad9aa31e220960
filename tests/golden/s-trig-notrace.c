// SPDX-License-Identifier: MIT
/* s-trig-notrace: the call graph of calls.h under the options of s-trig-notrace.opts. */
#include "calls.h"
