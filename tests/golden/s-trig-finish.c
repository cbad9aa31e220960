// SPDX-License-Identifier: MIT
/* s-trig-finish: the call graph of calls.h under the options of s-trig-finish.opts. */
#include "calls.h"
