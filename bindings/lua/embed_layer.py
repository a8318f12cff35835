#!/usr/bin/env python3
"""Write Lua chunks as NUL-terminated C arrays, so the module carries its
Lua layer and back end inside the .so (one file to install, no Lua path to
configure).

    embed_layer.py OUT NAME=FILE...     (one array `static const char NAME[]` a file)
"""
import sys

dst, pairs = sys.argv[1], sys.argv[2:]
with open(dst, "w") as out:
    for pair in pairs:
        name, src = pair.split("=", 1)
        data = open(src, "rb").read()
        out.write(f"static const char {name}[] = {{\n")
        for i in range(0, len(data), 16):
            out.write("".join(f"0x{b:02x}," for b in data[i:i + 16]) + "\n")
        out.write("0x00};\n")
