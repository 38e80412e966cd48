// A file the tool never gets to: the rules are checked first.
void f() {}
