// A helper template whose body is checked only when it is instantiated: a call with a type that
// lacks refresh() compiles while header bodies are skipped, and fails in a full parse.
#pragma once
template <class T> void touch_all(T &t) { t.refresh(); }
