"""SASL pieces for tests: the servers' JAAS files and zoo.cfg keys for
DIGEST-MD5, and an MIT Kerberos realm (a KDC on loopback, principals,
keytabs) for GSSAPI. Everything lives in one directory the test owns."""

import os
import signal
import socket
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


# --------------------------------------------------------------- Kerberos

KRB_TOOLS = ("/usr/sbin/krb5kdc", "/usr/sbin/kdb5_util", "/usr/sbin/kadmin.local")
REALM = "ZKELECT.TEST"


def kerberos_missing():
    """Why a KDC cannot be had here ("" when it can): the packages ./dev
    installs (PKGS_TEST) are krb5-kdc, krb5-admin-server and the GSSAPI
    plugin of Cyrus SASL."""
    gone = [t for t in KRB_TOOLS if not os.access(t, os.X_OK)]
    if not any(os.path.exists(os.path.join(d, "libgssapiv2.so.2"))
               for d in ("/usr/lib/x86_64-linux-gnu/sasl2", "/usr/lib/aarch64-linux-gnu/sasl2",
                         "/usr/lib/sasl2")):
        gone.append("libsasl2-modules-gssapi-mit")
    return ", ".join(gone)


class Kdc:
    """An MIT Kerberos realm in `directory`: its database, a krb5kdc on a
    loopback TCP port (foreground, our child), and the private krb5.conf
    that clients and servers read (KRB5_CONFIG; Java's
    -Djava.security.krb5.conf). No DNS: names are taken as written."""

    def __init__(self, directory, realm=REALM):
        self.dir = directory
        self.realm = realm
        self.port = None
        self.proc = None
        self.krb5_conf = os.path.join(directory, "krb5.conf")
        self.kdc_conf = os.path.join(directory, "kdc.conf")

    @property
    def env(self):
        return {"KRB5_CONFIG": self.krb5_conf, "KRB5_KDC_PROFILE": self.kdc_conf}

    def _run(self, argv, timeout=30):
        env = dict(os.environ, **self.env)
        return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout,
                              check=True, stdin=subprocess.DEVNULL)

    def start(self, timeout=10):
        self.port = free_port()
        d = self.dir
        with open(self.kdc_conf, "w") as f:
            f.write(f"""[kdcdefaults]
 kdc_listen = 127.0.0.1:{self.port}
 kdc_tcp_listen = 127.0.0.1:{self.port}
[realms]
 {self.realm} = {{
  database_name = {d}/principal
  key_stash_file = {d}/stash
  acl_file = {d}/kadm5.acl
  kdc_listen = 127.0.0.1:{self.port}
  kdc_tcp_listen = 127.0.0.1:{self.port}
  max_life = 1h
 }}
[logging]
 kdc = FILE:{d}/kdc.log
""")
        with open(self.krb5_conf, "w") as f:
            f.write(f"""[libdefaults]
 default_realm = {self.realm}
 dns_canonicalize_hostname = false
 rdns = false
 dns_lookup_kdc = false
 dns_lookup_realm = false
 udp_preference_limit = 1
 default_ccache_name = FILE:{d}/ccache-default
[realms]
 {self.realm} = {{
  kdc = 127.0.0.1:{self.port}
 }}
[domain_realm]
 localhost = {self.realm}
""")
        open(os.path.join(d, "kadm5.acl"), "w").close()
        self._run(["/usr/sbin/kdb5_util", "create", "-s", "-r", self.realm, "-P",
                   "zkbed-kdc-master"])
        env = dict(os.environ, **self.env)
        self.proc = subprocess.Popen(["/usr/sbin/krb5kdc", "-n", "-r", self.realm],
                                     env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"krb5kdc exited {self.proc.returncode}: {self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"krb5kdc did not listen on {self.port}: {self.log()}")

    def add(self, principal, keytab):
        """A principal with a random key, exported to `keytab`."""
        self._run(["/usr/sbin/kadmin.local", "-r", self.realm, "-q",
                   f"addprinc -randkey {principal}"])
        self._run(["/usr/sbin/kadmin.local", "-r", self.realm, "-q",
                   f"ktadd -k {keytab} {principal}"])
        return f"{principal}@{self.realm}"

    def server_jaas(self, principal, keytab):
        """The JVM flags of a ZooKeeper server that takes GSSAPI clients
        with this principal's key (Krb5LoginModule, from the keytab)."""
        path = os.path.join(self.dir, "jaas-krb.conf")
        with open(path, "w") as f:
            f.write(f"""Server {{
    com.sun.security.auth.module.Krb5LoginModule required
    useKeyTab=true
    keyTab="{keytab}"
    storeKey=true
    useTicketCache=false
    isInitiator=false
    principal="{principal}";
}};
""")
        return [f"-Djava.security.auth.login.config={path}",
                f"-Djava.security.krb5.conf={self.krb5_conf}"]

    def log(self):
        try:
            with open(os.path.join(self.dir, "kdc.log"), errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)


# ------------------------------------------------- TLS + SASL, three servers

SECURE_USER = "alice"
SECURE_PASSWORD = "s3cret-Secure-pw"


def secure_ensemble(directory, n=3, tick_ms=200, client_auth="need"):
    """The strictest set-up the issue names (issue 36): n servers with only
    a secureClientPort (Netty), client certificates required
    (ssl.clientAuth=need; "none": the usual managed set-up, encryption by
    TLS and identity by SASL), and SASL required of every client (ENFORCE),
    DIGEST-MD5 through a JAAS file. Not started. Returns (ensemble, keys)
    where keys are the client's settings, {conf key: value}: zk.tls.* and
    zk.sasl.* (the password in a file of `directory`)."""
    from bed.zkbed import Ensemble
    from tls import tlsbed
    tls = tlsbed.make_ca_keys(directory, client_auth=client_auth)
    flags = digest_jaas(directory, {SECURE_USER: SECURE_PASSWORD})
    ens = Ensemble(n=n, tick_ms=tick_ms, tls=tls, plain_port=False, extra_cfg=ENFORCE,
                   jvm_flags=flags)
    keys = {"zk.tls.ca": tls["cafile"], "zk.tls.cert": tls["client_cert"],
            "zk.tls.key": tls["client_key"], "zk.sasl.mechanism": "DIGEST-MD5",
            "zk.sasl.user": SECURE_USER,
            "zk.sasl.password.file": password_file(directory, "pw-secure", SECURE_PASSWORD)}
    return ens, keys


def as_set_args(keys):
    """The CLI's --set arguments for {conf key: value}."""
    return [a for k, v in keys.items() for a in ("--set", f"{k}={v}")]
