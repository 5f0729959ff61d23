# SPDX-License-Identifier: MIT
# Deterministic workload for the integration test: its output must be the
# same with and without nodalloc.
import gc, hashlib, json, re, random, threading, collections

rng = random.Random(12345)
out = []

# dicts and lists of many sizes, grown and shrunk
d = {}
for i in range(200000):
    d["k%d" % rng.randrange(100000)] = [i] * rng.randrange(1, 8)
for k in list(d)[::3]:
    del d[k]
out.append("dict %d %d" % (len(d), sum(len(v) for v in d.values())))

# strings: build, split, join, regex
words = ["".join(rng.choice("abcdefghij") for _ in range(rng.randrange(1, 12))) for _ in range(50000)]
text = " ".join(words)
out.append("regex %d" % len(re.findall(r"\b[a-c]+j?\b", text)))
out.append("upper %s" % hashlib.sha256(text.upper().encode()).hexdigest()[:16])
out.append("split %d" % len(text.replace("a", "--").split("-")))

# classes and a tree
class Node:
    __slots__ = ("key", "left", "right")
    def __init__(self, k):
        self.key, self.left, self.right = k, None, None
root = None
def insert(root, k):
    if root is None:
        return Node(k)
    n = root
    while True:
        if k < n.key:
            if n.left is None:
                n.left = Node(k); return root
            n = n.left
        else:
            if n.right is None:
                n.right = Node(k); return root
            n = n.right
for _ in range(60000):
    root = insert(root, rng.random())
def depth(n):
    best, stack = 0, [(n, 1)]
    while stack:
        x, h = stack.pop()
        if x:
            best = max(best, h)
            stack.append((x.left, h + 1)); stack.append((x.right, h + 1))
    return best
out.append("tree depth %d" % depth(root))
root = None
gc.collect()

# json round trip of a nested structure
obj = [{"id": i, "tags": [str(j) for j in range(i % 17)], "v": i * 0.5} for i in range(30000)]
s = json.dumps(obj, sort_keys=True)
back = json.loads(s)
out.append("json %d %s" % (len(s), hashlib.md5(s.encode()).hexdigest()[:12]))
out.append("json back %d" % sum(len(x["tags"]) for x in back))

# big integers and sorting
f = 1
for i in range(1, 3000):
    f *= i
out.append("fact bits %d mod %d" % (f.bit_length(), f % 1000000007))
nums = [rng.randrange(10**9) for _ in range(300000)]
nums.sort()
out.append("sorted %d %d %d" % (nums[0], nums[len(nums) // 2], nums[-1]))

# bytes and bytearrays, realloc-heavy growth
ba = bytearray()
for i in range(100000):
    ba += bytes([i & 255]) * (i % 7)
out.append("bytearray %d %s" % (len(ba), hashlib.sha1(ba).hexdigest()[:12]))

# threads: each builds its own structures, results merged in order
results = [None] * 8
def work(t):
    r = random.Random(t)
    c = collections.Counter(r.randrange(1000) for _ in range(100000))
    results[t] = sum(k * v for k, v in c.most_common(10))
threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
for t in threads: t.start()
for t in threads: t.join()
out.append("threads %s" % results)

print("\n".join(out))
