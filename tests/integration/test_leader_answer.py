"""zkelect_leader_answer, the leader endpoint's answer for a program that
serves HTTP itself (issue 55), through the public C API (ctypes,
tests/bed/zkc.py): 200 and the term's token, id, path and time left while
leading, 503 and {"leader":false} otherwise; the id and path escaped as JSON
strings; a buffer too small refused with the size it needs and left
untouched; NULLs refused. `zkelect run`'s GET /leader is the same answer
(tests/tools/test_leader_endpoint.py)."""

import ctypes as C
import json
import uuid

from bed import zkc

T = 3000


def _answer(lib, e, size=512):
    buf = C.create_string_buffer(b"\x01" * size, size)
    n = C.c_size_t(size)
    rc = lib.zkelect_leader_answer(e, buf, C.byref(n))
    return rc, buf, n.value


def test_the_answer_says_who_leads_and_for_which_term(api, handles, zk):
    lib = api.lib
    path = f"/t/answer-{uuid.uuid4().hex[:8]}"
    pid = 'a "quoted" \\ id with é'  # escaped, never breaking the JSON
    ca = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    cb = zkc.connected_client(api, handles, zk.connect_string, timeout_ms=T)
    a = zkc.new_election(api, handles, ca, path, pid)
    b = zkc.new_election(api, handles, cb, path, "b")

    rc, buf, n = _answer(lib, a)
    assert (rc, json.loads(buf.value)) == (503, {"leader": False})
    assert n == len(buf.value) + 1  # the length written, with the NUL

    assert lib.zkelect_volunteer(a) == 0 and lib.zkelect_await_leader(a, 15000) == 0
    assert lib.zkelect_volunteer(b) == 0
    api.wait_event(b, ("FOLLOWING",), 10)
    token = C.c_int64()
    assert lib.zkelect_fencing_token(a, C.byref(token)) == 0
    rc, buf, n = _answer(lib, a)
    assert rc == 200, buf.value
    body = json.loads(buf.value.decode())
    assert buf.value.startswith(b'{"leader":true')  # the text alone tells the status
    full = lib.zkelect_client_session_timeout_ms(ca) // 2 - lib.zkelect_client_lease_margin_ms(ca)
    assert body["path"] == path and body["id"] == pid and body["token"] == token.value
    assert 0 < body["lease_left_ms"] <= full, (body, full)
    assert _answer(lib, b)[0] == 503

    # Too small: refused with what it needs, the buffer as it was.
    rc, small, need = _answer(lib, a, size=8)
    assert rc == -14  # ZKELECT_ERANGE
    assert need == n and small.raw == b"\x01" * 8
    rc, buf, _ = _answer(lib, a, size=need)
    assert rc == 200 and json.loads(buf.value.decode())["token"] == token.value

    # The term ends with the resign: the next answer is 503, and b's is 200
    # with a later token.
    assert lib.zkelect_resign(a) == 0
    assert _answer(lib, a)[0] == 503
    assert lib.zkelect_await_leader(b, 15000) == 0
    rc, buf, _ = _answer(lib, b)
    assert rc == 200 and json.loads(buf.value.decode())["token"] > token.value

    n = C.c_size_t(16)
    assert lib.zkelect_leader_answer(None, C.create_string_buffer(16), C.byref(n)) == -1
    assert lib.zkelect_leader_answer(a, None, C.byref(n)) == -1
    assert lib.zkelect_leader_answer(a, C.create_string_buffer(16), None) == -1
