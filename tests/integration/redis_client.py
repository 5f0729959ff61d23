# SPDX-License-Identifier: MIT
"""A Redis (RESP2) client for run_redis.sh (127.0.0.1 only).

usage: redis_client.py PORT session|load|evict

session: a fixed sequence of commands over strings (16 B .. 64 KiB),
  lists, hashes, sorted sets and sets, read back in orders that do not
  depend on the server's hash seed, then DEBUG DIGEST; prints every
  reply, so two servers can be compared line by line.
load: SEED-determined values of 16 B to 64 KiB over 4 pipelining
  connections (SET/GET/LPUSH/LRANGE/HSET/ZADD), every value read back and
  compared; prints the counts.
evict: maxmemory 24 MB with allkeys-lru, 64 MB of 1 KiB values written:
  keys must be evicted and used_memory stay near the limit; then
  FLUSHALL must empty it.
Bounded: a fixed number of requests, each with a 20 s socket timeout.
"""
import random
import socket
import sys
import threading

PORT = int(sys.argv[1])


class Conn:
    def __init__(self):
        self.s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
        self.f = self.s.makefile("rb")

    def send(self, *cmds):
        out = []
        for c in cmds:
            out.append(b"*%d\r\n" % len(c))
            for a in c:
                a = a if isinstance(a, bytes) else str(a).encode()
                out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))

    def reply(self):
        l = self.f.readline()
        if not l.endswith(b"\r\n"):
            raise EOFError("server closed the connection")
        t, v = l[:1], l[1:-2]
        if t == b"+":
            return v.decode()
        if t == b"-":
            return ("ERR", v.decode())
        if t == b":":
            return int(v)
        if t == b"$":
            n = int(v)
            if n < 0:
                return None
            d = self.f.read(n + 2)
            return d[:-2]
        if t == b"*":
            n = int(v)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ValueError("bad reply %r" % l)

    def cmd(self, *a):
        self.send(a)
        return self.reply()

    def pipe(self, cmds):
        self.send(*cmds)
        return [self.reply() for _ in cmds]


def val(seed, n):
    r = random.Random(seed)
    return r.randbytes(n)


def short(x):
    """A reply as a line: long strings by length and a checksum."""
    if isinstance(x, bytes) and len(x) > 64:
        return "<%d bytes, sum %d>" % (len(x), sum(x) % 1000003)
    if isinstance(x, list):
        return "[" + ", ".join(short(e) for e in x) + "]"
    return repr(x)


def session():
    c = Conn()
    out = []

    def do(*a):
        out.append("%s -> %s" % (" ".join(str(e)[:20] for e in a), short(c.cmd(*a))))

    do("FLUSHALL")
    for i, n in enumerate([16, 100, 1000, 4096, 16384, 65536]):
        do("SET", "s:%d" % n, val(i, n))
        do("STRLEN", "s:%d" % n)
        do("APPEND", "s:%d" % n, val(i + 100, n // 2 + 1))
        do("GET", "s:%d" % n)
        do("GETRANGE", "s:%d" % n, n // 3, n // 3 + 40)
    do("MSET", *sum([["m:%d" % i, "v%d" % (i * i)] for i in range(200)], []))
    do("MGET", *["m:%d" % i for i in range(0, 200, 7)])
    do("INCRBY", "ctr", 41)
    do("INCRBYFLOAT", "ctr", "1.5")
    for i in range(3000):
        c.send(["LPUSH", "l", val(i, 16 + i % 300)])
    for i in range(3000):
        c.reply()
    do("LLEN", "l")
    do("LRANGE", "l", 0, 99)
    do("LRANGE", "l", -50, -1)
    do("LTRIM", "l", 100, 1999)
    do("LINDEX", "l", 777)
    for i in range(2000):
        c.send(["HSET", "h", "f%d" % i, val(i, 8 + i % 700)])
    for i in range(2000):
        c.reply()
    do("HLEN", "h")
    do("HMGET", "h", *["f%d" % i for i in range(0, 2000, 97)])
    do("HDEL", "h", *["f%d" % i for i in range(0, 2000, 3)])
    do("HLEN", "h")
    do("HSET", "hs", "a", 1, "b", 2, "c", 3)
    do("HGETALL", "hs")
    for i in range(4000):
        c.send(["ZADD", "z", (i * 7919) % 10007, "m%d" % i])
    for i in range(4000):
        c.reply()
    do("ZCARD", "z")
    do("ZRANGE", "z", 0, 30, "WITHSCORES")
    do("ZRANGEBYSCORE", "z", 5000, 5100)
    do("ZREMRANGEBYRANK", "z", 0, 999)
    do("ZREVRANGE", "z", 0, 9)
    for i in range(2500):
        c.send(["SADD", "set%d" % (i % 3), "e%d" % (i * 31 % 4000)])
    for i in range(2500):
        c.reply()
    do("SCARD", "set0")
    do("SINTERCARD", 2, "set0", "set1")
    do("SORT", "set2", "ALPHA", "LIMIT", 0, 25)
    do("DEL", "s:16", "m:3", "nosuch")
    do("DBSIZE")
    do("DEBUG", "DIGEST")
    do("BGSAVE")
    print("\n".join(out))


def load():
    errors, counts = [], [0, 0]
    lock = threading.Lock()

    def worker(t):
        r = random.Random(2400 + t)
        c = Conn()
        done = 0
        for rnd in range(40):
            batch, expect = [], {}
            for j in range(25):
                k = "k:%d:%d" % (t, r.randrange(400))
                n = min(65536, int(16 * 2 ** (r.random() * 12)))
                v = r.randbytes(n)
                batch.append(["SET", k, v])
                expect[k] = v
            got = c.pipe(batch + [["GET", k] for k in expect])
            for k, g in zip(expect, got[len(batch):]):
                if g != expect[k]:
                    errors.append("GET %s: %d bytes, expected %d" % (k, len(g or b""), len(expect[k])))
            lk = "lst:%d" % t
            items = [r.randbytes(r.randrange(16, 2000)) for _ in range(50)]
            got = c.pipe([["DEL", lk], ["RPUSH", lk] + items, ["LRANGE", lk, 0, -1],
                          ["HSET", "hh:%d" % t, "f%d" % rnd, items[0]],
                          ["ZADD", "zz:%d" % t, rnd, items[1]],
                          ["HGET", "hh:%d" % t, "f%d" % rnd]])
            if got[2] != items or got[5] != items[0] or got[4] not in (0, 1):
                errors.append("list/hash/zset round %d of connection %d differ" % (rnd, t))
            done += len(batch) * 2 + 6
        with lock:
            counts[0] += done
        c.cmd("QUIT")

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors or counts[0] != 4 * 40 * 56:
        print("load: %d requests, %d errors: %s" % (counts[0], len(errors), errors[:5]))
        sys.exit(1)
    print("load: %d requests over 4 connections, every reply as expected" % counts[0])


def info(c, key):
    for l in c.cmd("INFO").decode().splitlines():
        if l.startswith(key + ":"):
            return int(l.split(":")[1])
    raise KeyError(key)


def evict():
    c = Conn()
    c.cmd("FLUSHALL")
    limit = 24 << 20
    c.cmd("CONFIG", "SET", "maxmemory", limit)
    c.cmd("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
    v = b"x" * 1024
    high = 0
    for b in range(64):
        got = c.pipe([["SET", "e:%d:%d" % (b, i), v] for i in range(1024)])
        if any(g != "OK" for g in got):
            print("evict: a SET failed: %r" % [g for g in got if g != "OK"][:3])
            sys.exit(1)
        high = max(high, info(c, "used_memory"))
    ev, keys = info(c, "evicted_keys"), c.cmd("DBSIZE")
    ok = ev > 0 and keys < 64 * 1024 and high < limit * 1.25
    c.cmd("FLUSHALL")
    left = c.cmd("DBSIZE")
    c.cmd("CONFIG", "SET", "maxmemory", 0)
    if not ok or left != 0:
        print("evict: evicted %d, kept %d keys, used_memory up to %d (limit %d), %d keys after FLUSHALL"
              % (ev, keys, high, limit, left))
        sys.exit(1)
    print("evict: keys evicted under the limit, none left after FLUSHALL")


{"session": session, "load": load, "evict": evict}[sys.argv[2]]()
