// Compiled into every executable of a tool built with AMP_SANITIZE_TOOL (CI): a sanitizer report
// aborts (SIGABRT) instead of exiting with status 1, which the tool also uses for "findings"; a
// test that expects exit 1 (`not amp-migrate ...`) then still fails on a report, since `not`
// treats a crash as a failure. Options given in ASAN_OPTIONS / UBSAN_OPTIONS come after these.
extern "C" const char *__asan_default_options() { return "abort_on_error=1"; }
extern "C" const char *__ubsan_default_options() { return "abort_on_error=1:print_stacktrace=1"; }
