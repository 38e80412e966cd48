// The translation unit that builds the e2e programs' precompiled header.
