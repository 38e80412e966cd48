// Two levels down from the TU (cache.test).
#pragma once
inline int deep_steps() { return 10; }
