"""A kazoo client of the test ensemble for the operator's side of a test,
optionally under a digest identity ("user:password")."""

from kazoo.client import KazooClient


def kazoo(zk, auth=None, timeout=4.0):
    k = KazooClient(hosts=zk.connect_string, timeout=timeout,
                    auth_data=[("digest", auth)] if auth else None)
    k.start(timeout=10)
    return k
