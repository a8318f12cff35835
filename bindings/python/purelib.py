"""Where `meson install` puts the zkelect package for a prefix: the folder
this system's python3 imports from for that prefix (meson's python module
reads sysconfig without Debian's schemes, and would install under
/usr/lib/python3.X/site-packages, a folder Debian's python3 never reads).

    python3 purelib.py PREFIX   ->  lib/python3/dist-packages (for /usr, on Debian)
"""

import sys
import sysconfig

prefix = sys.argv[1].rstrip("/") or "/"
schemes = sysconfig.get_scheme_names()
if "deb_system" in schemes and prefix == "/usr":
    path = sysconfig.get_path("purelib", "deb_system", vars={"base": "/usr", "platbase": "/usr"})
elif "posix_local" in schemes and prefix == "/usr/local":
    # Debian's own scheme for /usr/local: {base}/local/lib/python3.X/dist-packages.
    path = sysconfig.get_path("purelib", "posix_local", vars={"base": "/usr", "platbase": "/usr"})
else:
    path = sysconfig.get_path("purelib", "posix_prefix",
                              vars={"base": prefix, "platbase": prefix})
# Relative to the prefix, as meson's install_dir wants.
print(path[len(prefix):].lstrip("/") if path.startswith(prefix + "/") else path)
