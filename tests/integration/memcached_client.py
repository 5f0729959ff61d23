# SPDX-License-Identifier: MIT
"""A memcached text-protocol client for run_memcached.sh (127.0.0.1 only).

usage: memcached_client.py PORT session|load

session: a fixed sequence of commands (set/add/replace/append/prepend/cas/
  incr/decr/delete/gets/multi-get/touch/flush_all); prints every reply, so
  two servers can be compared line by line.
load: SEED-determined values of 1 B to 200 KB (skewed small) over 4
  connections, every value read back and compared; prints the counts.
  Bounded: a fixed number of requests, each with a 10 s socket timeout.
"""
import random
import socket
import sys
import threading

PORT = int(sys.argv[1])


class Conn:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("server closed the connection")
            self.buf += d
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l

    def exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("server closed the connection")
            self.buf += d
        b, self.buf = self.buf[:n], self.buf[n:]
        return b

    def cmd(self, line, data=None):
        out = line.encode()
        if data is not None:
            out += b"\r\n" + data
        self.s.sendall(out + b"\r\n")
        return self.line()

    def get(self, *keys, verb="get"):
        """{key: (flags, value[, cas])} of a get/gets"""
        self.s.sendall(("%s %s\r\n" % (verb, " ".join(keys))).encode())
        got = {}
        while True:
            l = self.line().split()
            if l == [b"END"]:
                return got
            assert l[0] == b"VALUE", l
            v = self.exact(int(l[3]) + 2)[:-2]
            got[l[1].decode()] = (int(l[2]), v) + ((int(l[4]),) if verb == "gets" else ())


def session():
    c = Conn()
    out = []
    r = lambda x: out.append(x.decode() if isinstance(x, bytes) else repr(x))
    for i in range(300):
        r(c.cmd("set k%d %d 0 %d" % (i, i, i * 3 % 500), b"v" * (i * 3 % 500)))
    r(c.get(*["k%d" % (j * 37 % 300) for j in range(40)]))
    r(c.cmd("add k1 0 0 1", b"x"))
    r(c.cmd("add new 5 0 3", b"abc"))
    r(c.cmd("replace new 6 0 4", b"abcd"))
    r(c.cmd("replace none 0 0 1", b"x"))
    r(c.cmd("append new 0 0 3", b"123"))
    r(c.cmd("prepend new 0 0 3", b"000"))
    r(c.get("new"))
    cas = c.get("new", verb="gets")["new"][2]
    r(c.cmd("cas new 0 0 2 %d" % cas, b"zz"))
    r(c.cmd("cas new 0 0 2 %d" % cas, b"yy"))
    r(c.cmd("set n 0 0 2", b"40"))
    r(c.cmd("incr n 2"))
    r(c.cmd("decr n 50"))
    r(c.cmd("incr k1 1"))
    r(c.cmd("touch k2 100"))
    r(c.cmd("delete k3"))
    r(c.cmd("delete k3"))
    r(c.get("k3", "k4", "n", "new"))
    big = random.Random(7).randbytes(300000)
    r(c.cmd("set big 0 0 %d" % len(big), big))
    r(c.get("big")["big"][1] == big)
    r(c.cmd("flush_all"))
    r(c.get("k5", "big"))
    print("\n".join(out))


def load(t, counts, errors):
    rng = random.Random(1000 + t)
    c = Conn()
    have = {}
    for i in range(2500):
        k = "t%d-%d" % (t, rng.randrange(1200))
        if rng.random() < 0.6 or k not in have:
            n = int(rng.paretovariate(1.2) * 40) % 200000
            v = bytes([rng.randrange(256)]) * n
            if c.cmd("set %s 0 0 %d" % (k, n), v) != b"STORED":
                errors.append("set %s" % k)
            have[k] = v
            counts["set"] += 1
        else:
            got = c.get(k).get(k)
            counts["get"] += 1
            # the cache may evict, never corrupt
            if got is not None and got[1] != have[k]:
                errors.append("get %s: %d bytes, expected %d" % (k, len(got[1]), len(have[k])))
            elif got is None:
                counts["miss"] += 1
    keys = list(have)
    for i in range(0, len(keys), 50):
        got = c.get(*keys[i:i + 50])
        for k in keys[i:i + 50]:
            counts["get"] += 1
            if k in got and got[k][1] != have[k]:
                errors.append("final get %s" % k)
            counts["bytes"] += len(have[k])


if sys.argv[2] == "session":
    session()
else:
    counts, errors = {"set": 0, "get": 0, "miss": 0, "bytes": 0}, []
    th = [threading.Thread(target=load, args=(t, counts, errors)) for t in range(4)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    for e in errors[:20]:
        print("FAIL:", e)
    print("load: %d sets, %d gets, %d misses, %d bytes held, %d errors" % (
        counts["set"], counts["get"], counts["miss"], counts["bytes"], len(errors)))
    sys.exit(1 if errors else 0)
