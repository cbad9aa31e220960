// SPDX-License-Identifier: MIT
/* s-trig-filter: the call graph of calls.h under the options of s-trig-filter.opts. */
#include "calls.h"
