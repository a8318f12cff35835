"""SASL pieces for tests: the servers' JAAS files and zoo.cfg keys for
DIGEST-MD5, and an MIT Kerberos realm (a KDC on loopback, principals,
keytabs) for GSSAPI. Everything lives in one directory the test owns."""

import os
import shutil
import signal
import subprocess
import time

from bed.zkbed import free_port

# The zoo.cfg keys that make a server take SASL and require it of every
# client (ZooKeeper 3.8's enforce.auth.*).
ENFORCE = {
    "authProvider.sasl": "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
    "enforce.auth.enabled": "true",
    "enforce.auth.schemes": "sasl",
}


def digest_jaas(directory, users):
    """A JAAS file whose Server section knows `users` ({name: password})
    through ZooKeeper's DigestLoginModule; the JVM flag that loads it."""
    path = os.path.join(directory, "jaas-digest.conf")
    entries = "".join(f'    user_{u}="{p}"\n' for u, p in users.items())
    with open(path, "w") as f:
        f.write("Server {\n    org.apache.zookeeper.server.auth.DigestLoginModule required\n"
                + entries.rstrip("\n") + ";\n};\n")
    return [f"-Djava.security.auth.login.config={path}"]


def password_file(directory, name, password):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(password + "\n")
    os.chmod(path, 0o600)
    return path


# What a 3.8 server logs, once per connection, when it closes one for want
# of SASL (AuthenticationHelper) or for SASL that failed (ZooKeeperServer).
REFUSED = ("does not match with any of the expected authentication scheme",
           "failed to SASL authenticate")


def refusals(ens, before):
    """How many connections the servers closed for want of SASL, or for
    SASL that failed, since `before` (their log sizes)."""
    n = 0
    for i in range(ens.n):
        with open(ens.log_path(i), errors="replace") as f:
            f.seek(before[i])
            text = f.read()
            n += sum(text.count(r) for r in REFUSED)
    return n


def log_sizes(ens):
    return [os.path.getsize(ens.log_path(i)) for i in range(ens.n)]
