#include "train_step.h"
void run_a() {}
