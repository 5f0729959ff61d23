# SPDX-License-Identifier: MIT
# Threads handing objects to each other (remote frees) while the process
# forks (children allocate, then _exit), then a multiprocessing pool with
# the fork start method. Prints totals only: the same with any allocator.
import hashlib, multiprocessing as mp, os, queue, sys, threading

def producer(q, n):
    for i in range(2500):
        q.put(bytes([n % 256]) * (i % 700) + str(i).encode())

def consumer(q, out, lock):
    c = 0
    while True:
        x = q.get()
        if x is None:
            break
        c += len(x)
    with lock:
        out.append(c)

def churn():
    out, lock = [], threading.Lock()
    for rnd in range(5):
        q = queue.Queue(maxsize=1000)
        cs = [threading.Thread(target=consumer, args=(q, out, lock)) for _ in range(3)]
        ps = [threading.Thread(target=producer, args=(q, n)) for n in range(16)]
        for t in cs + ps:
            t.start()
        pids = []
        for k in range(3):  # fork while the threads run
            pid = os.fork()
            if pid == 0:
                s = sorted(str(i) * (i % 30) for i in range(20000))
                os._exit(0 if len(s) == 20000 else 1)
            pids.append(pid)
        for t in ps:
            t.join()
        for _ in cs:
            q.put(None)
        for t in cs:
            t.join()
        for p in pids:
            _, st = os.waitpid(p, 0)
            if st != 0:
                print("child of round", rnd, "failed:", st)
    print("churn", sum(out))

def work(n):
    s = [str(i * n) * (i % 13) for i in range(20000)]
    return hashlib.sha256("".join(sorted(s)).encode()).hexdigest()

if __name__ == "__main__":
    churn()
    mp.set_start_method("fork")
    with mp.Pool(4) as p:
        r = p.map(work, range(48), chunksize=2)
    print("pool", hashlib.sha256("".join(r).encode()).hexdigest())
