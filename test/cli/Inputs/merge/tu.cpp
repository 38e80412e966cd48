// A TU whose only AMP code is in the header it includes (merge-fixes.test).
#include "train_step.h"
void run() {}
