#!/usr/bin/env python3
"""Write the Lua layer as a NUL-terminated C array, so the module carries it
inside the .so (one file to install, no Lua path to configure)."""
import sys

src, dst = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
with open(dst, "w") as out:
    out.write("static const char ZKELECT_LUA_LAYER[] = {\n")
    for i in range(0, len(data), 16):
        out.write("".join(f"0x{b:02x}," for b in data[i:i + 16]) + "\n")
    out.write("0x00};\n")
