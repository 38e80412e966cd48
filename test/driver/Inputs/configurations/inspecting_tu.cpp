#define INSPECT_GRADS
#include "train_step.h"
void run_b() {}
