"""TLS pieces for tests: a server keystore and truststore made with keytool,
the server certificate as PEM for clients to trust, and a stunnel4 client
tunnel (plain on a loopback port, TLS to ZooKeeper's secureClientPort)."""

import os
import signal
import socket
import subprocess
import time

from bed.zkbed import free_ports

PASSWORD = "zkbed-test-only"


def make_keys(directory):
    """Server key pair (self-signed, for 127.0.0.1) in a PKCS12 keystore, a
    truststore holding its certificate, and the certificate as PEM."""
    ks = os.path.join(directory, "server.p12")
    ts = os.path.join(directory, "trust.p12")
    pem = os.path.join(directory, "server.pem")
    common = ["-storetype", "PKCS12", "-storepass", PASSWORD]
    subprocess.run(["keytool", "-genkeypair", "-alias", "zk", "-keyalg", "EC", "-groupname",
                    "secp256r1", "-validity", "2", "-dname", "CN=127.0.0.1",
                    "-ext", "SAN=ip:127.0.0.1", "-keystore", ks, "-keypass", PASSWORD] + common,
                   check=True, capture_output=True, timeout=60)
    subprocess.run(["keytool", "-exportcert", "-rfc", "-alias", "zk", "-keystore", ks,
                    "-file", pem] + common, check=True, capture_output=True, timeout=60)
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "zk", "-file", pem,
                    "-keystore", ts] + common, check=True, capture_output=True, timeout=60)
    return {"keystore": ks, "truststore": ts, "password": PASSWORD, "cafile": pem}


class Tunnel:
    """stunnel4 in client mode: one plain loopback port per target TLS port.
    The server certificate is verified against cafile (and its IP)."""

    def __init__(self, directory, targets, cafile):
        self.dir = directory
        self.targets = list(targets)
        self.cafile = cafile
        self.ports = []
        self.proc = None

    def start(self, timeout=20):
        conf = os.path.join(self.dir, "stunnel.conf")
        lines = ["foreground = yes", "pid =", "debug = 4",
                 f"output = {os.path.join(self.dir, 'stunnel.log')}"]
        self.ports = free_ports(len(self.targets))
        for i, (lp, tp) in enumerate(zip(self.ports, self.targets)):
            lines += [f"[zk{i}]", "client = yes", f"accept = 127.0.0.1:{lp}",
                      f"connect = 127.0.0.1:{tp}", f"CAfile = {self.cafile}",
                      "verifyChain = yes", "checkIP = 127.0.0.1"]
        with open(conf, "w") as f:
            f.write("\n".join(lines) + "\n")
        self.proc = subprocess.Popen(["stunnel4", conf], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        for p in self.ports:
            while True:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"stunnel4 exited {self.proc.returncode}: {self.log()}")
                try:
                    socket.create_connection(("127.0.0.1", p), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"stunnel4 does not listen on {p}: {self.log()}")
                    time.sleep(0.05)
        return self

    @property
    def connect_string(self):
        return ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def log(self):
        try:
            with open(os.path.join(self.dir, "stunnel.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _signed(d, ca, name, cn, san):
    """A P-256 key and a certificate for it signed by `ca` (a name made by
    make_ca): name.key, name.pem."""
    ext = os.path.join(d, f"{name}.ext")
    with open(ext, "w") as f:
        f.write(f"subjectAltName={san}\n" if san else "basicConstraints=CA:FALSE\n")
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-subj", f"/CN={cn}", "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", "2", "-extfile", ext, "-out", f"{name}.pem", cwd=d)


def make_ca(d, name):
    """A self-signed test CA: name.key, name.pem."""
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-subj", f"/CN=zkelect test {name}", "-days", "2", "-keyout", f"{name}.key",
             "-out", f"{name}.pem", cwd=d)


def make_ca_keys(directory, client_auth="none"):
    """A CA that signed the servers' certificate (for 127.0.0.1) and one
    client certificate, as a client built with OpenSSL takes them (PEM),
    and as the servers take theirs (a PKCS12 keystore; a truststore holding
    the CA, which also vouches for the client with client_auth="need").
    Also `other_ca`: a CA that signed nothing here, for the wrong-CA case,
    and `rogue_*`: a client certificate of that other CA."""
    d = directory
    make_ca(d, "ca")
    make_ca(d, "other-ca")
    _signed(d, "ca", "server", "127.0.0.1", "IP:127.0.0.1")
    _signed(d, "ca", "client", "zkelect-test-client", None)
    _signed(d, "other-ca", "rogue", "zkelect-rogue-client", None)
    ks = os.path.join(d, "server.p12")
    ts = os.path.join(d, "trust.p12")
    _openssl("pkcs12", "-export", "-in", "server.pem", "-inkey", "server.key", "-name", "zk",
             "-out", ks, "-passout", f"pass:{PASSWORD}", cwd=d)
    subprocess.run(["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file",
                    os.path.join(d, "ca.pem"), "-keystore", ts, "-storetype", "PKCS12",
                    "-storepass", PASSWORD], check=True, capture_output=True, timeout=60)
    j = lambda n: os.path.join(d, n)
    return {"keystore": ks, "truststore": ts, "password": PASSWORD, "cafile": j("ca.pem"),
            "client_auth": client_auth, "client_cert": j("client.pem"), "client_key": j("client.key"),
            "other_ca": j("other-ca.pem"), "rogue_cert": j("rogue.pem"), "rogue_key": j("rogue.key")}


def elect_three(c, how):
    """Three candidates (bed.toolutil.Candidates) connect `how` (for the
    messages), join, and settle on one leader: (its id, its token)."""
    seen = set()

    def connected(pid_, line):
        assert line is not None, f"candidate {pid_} exited"
        if line.startswith("EVENT CONNECTED"):
            seen.add(pid_)
        return len(seen) == 3
    c.wait(connected, 30, f"three candidates connected {how}")
    c.send_all("join")

    def settled(pid_, line):
        assert line is not None, f"candidate {pid_} exited"
        ks = list(c.state.values())
        return len(ks) == 3 and ks.count("LEADER") == 1 and ks.count("FOLLOWER") == 2
    c.wait(settled, 30, "one leader, two followers")
    first = c.leaders()[0]
    return first, int([e for e in c.log if e[0] == "LEADER" and e[1] == first][-1][3]["token"], 0)


def elect_three_and_hand_over(zkelect_bin, env, hosts, path, session_ms, extra, how):
    """Three `zkelect candidate` processes on `hosts` with the CLI
    arguments `extra` (the zk.tls.* or zk.sasl.* keys under test) settle on
    one leader (elect_three); the leader resigns and another leads, with a
    greater fencing token, on the same sessions."""
    from bed.toolutil import Candidates, parse_event
    c = Candidates(zkelect_bin, env, hosts, path, ["1", "2", "3"], session_ms, extra)
    try:
        first, first_token = elect_three(c, how)
        c.procs[first].send(f"resign {first}")
        ev = c.wait(lambda p, l: p != first and l and (parse_event(l) or ("",))[0] == "LEADER"
                    and parse_event(l), 20, "a new leader after the first resigned")
        assert int(ev[3]["token"], 0) > first_token
    finally:
        c.close()

