// Nothing AMP-related in this file itself; everything is in the included project header.
#include "step_in_header.h"
void run() {}
