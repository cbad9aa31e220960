// SPDX-License-Identifier: MIT
/* s-trig-onoff: the call graph of calls.h under the options of s-trig-onoff.opts. */
#include "calls.h"
