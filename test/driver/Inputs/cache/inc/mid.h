// One level down from the TU (cache.test).
#pragma once
#include "deep/d.h"
