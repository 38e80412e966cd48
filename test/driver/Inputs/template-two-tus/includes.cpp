// Includes the trainer and never calls it.
#include "trainer.h"

int unrelated() { return 1; }
