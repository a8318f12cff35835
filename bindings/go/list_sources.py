#!/usr/bin/env python3
"""Print the files of the Go module a user builds (relative to this folder):
every .go file but the tests, go.mod and the SWIG wrapper's C file."""
import os

here = os.path.dirname(os.path.abspath(__file__))
for sub in ("", "internal/capi"):
    for name in sorted(os.listdir(os.path.join(here, sub))):
        if (name.endswith(".go") and not name.endswith("_test.go")) or name in ("go.mod", "capi_wrap.c"):
            print(os.path.join(sub, name) if sub else name)
