"""Where Redis spends its time on a fresh grab: grab.lua and grab_many.lua against the seeds'
two-list script.

Starts a redis-server of its own, loads 100 packets of 100 shares for each design, makes
10,000 fresh grabs per round (pipelined 100 calls at a time, one connection), six rounds in
rotating order, and prints the medians of `INFO commandstats` (usec per call of EVALSHA and of
each command the script runs) and of the server's `used_cpu_user + used_cpu_sys` per grab.
`ours` is a grab.lua call a grab; `ours_batched` is grab_many.lua with each packet's 100 grabs
in one call, as the grab coalescer sends them when a packet is hot.

    .local/venv/bin/python bench/profile/grab_lua.py          # `make profile-grab`

With `--perf`, also records `perf record -g` of redis-server during one round of each and
prints the top symbols (needs perf).
"""

import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAB_LUA = open(os.path.join(ROOT, "shared", "lua", "grab.lua")).read()
GRAB_MANY_LUA = open(os.path.join(ROOT, "shared", "lua", "grab_many.lua")).read()
TWO_LIST = open(os.path.join(ROOT, "bench", "lua", "two_list.lua")).read()
PACKETS, SHARES, GRABS, ROUNDS = 100, 100, 10_000, 6


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def packets(r):
    """Packets laid out as load.lua lays them out; returns each one's three keys (the grab scripts'
    KEYS)."""
    keys = []
    for p in range(PACKETS):
        tag = f"{{{random.getrandbits(128):032x}}}"
        k = [f"rp:{tag}:packet", f"rp:{tag}:pool", f"rp:{tag}:grabs"]
        r.hset(k[0], mapping={"open_until": 4_000_000_000_000, "persisted": 0, "sender": "sender",
                              "kind": "lucky", "seed": "ab" * 32, "total_cents": 10_000,
                              "count": SHARES, "created_at": 1_700_000_000_000,
                              "expires_at": 4_000_000_000_000, "split": "double_average"})
        r.rpush(k[1], *[f"{i + 1}:{50 + i}:{SHARES - 1 - i}" for i in range(SHARES)])
        keys.append(k)
    return keys


def ours(r, run):
    """A grab.lua call per grab; returns the round's EVALSHA arguments and the pools' keys."""
    sha = r.script_load(GRAB_LUA)
    keys = packets(r)
    calls = [(sha, 3, *keys[u % PACKETS], f":{run}-u{u}", 1_700_000_001_000) for u in range(GRABS)]
    return calls, [k[1] for k in keys]


def ours_batched(r, run):
    """A grab_many.lua call per packet at one instant, carrying its 100 grabs (a line each)."""
    sha = r.script_load(GRAB_MANY_LUA)
    keys = packets(r)
    calls = [(sha, 3, *k, 1_700_000_001_000, "".join(f":{run}-u{u}\n" for u in range(p, GRABS, PACKETS)))
             for p, k in enumerate(keys)]
    return calls, [k[1] for k in keys]


def two_list(r, run):
    sha = r.script_load(TWO_LIST)
    keys = []
    for p in range(PACKETS):
        k = [f"{run}:hongBao:{p}", f"{run}:consumed:{p}", f"{run}:dedupe:{p}"]
        r.lpush(k[0], *[f'{{"id":{i},"money":{50 + i}}}' for i in range(SHARES)])
        keys.append(k)
    return [(sha, 4, *keys[u % PACKETS], f"u{u}") for u in range(GRABS)], [k[0] for k in keys]


def cpu(r):
    info = r.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


def round_of(r, design, run):
    """One round of `design`: its Redis CPU per grab and usec per call of each command; fails
    unless every grab took a share (a script refusing its arguments would cost next to nothing)."""
    calls, pools = design(r, run)
    r.config_resetstat()
    before = cpu(r)
    pipe = r.pipeline(transaction=False)
    for call in calls:
        pipe.evalsha(*call)
        if len(pipe) >= 100:
            pipe.execute()
    pipe.execute()
    spent = (cpu(r) - before) * 1e6 / GRABS
    left = sum(r.llen(pool) for pool in pools)
    assert left == PACKETS * SHARES - GRABS, f"{design.__name__}: {left} shares left, every grab must take one"
    stats = {name.removeprefix("cmdstat_"): v["usec_per_call"] for name, v in r.info("commandstats").items()
             if v["calls"] >= len(calls)}
    return spent, stats


DESIGNS = [("two_list", two_list), ("ours", ours), ("ours_batched", ours_batched)]


def main():
    port = free_port()
    workdir = tempfile.mkdtemp()
    server = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                               "--appendonly", "no", "--dir", workdir], stdout=subprocess.DEVNULL)
    try:
        r = redis.Redis(port=port, decode_responses=True)
        for _ in range(100):
            try:
                r.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        results = {name: [] for name, _ in DESIGNS}
        for n in range(ROUNDS):
            for name, design in DESIGNS[n % len(DESIGNS):] + DESIGNS[:n % len(DESIGNS)]:
                results[name].append(round_of(r, design, f"r{n}"))
        for name, rounds in results.items():
            commands = sorted(set().union(*(stats.keys() for _, stats in rounds)))
            per_call = ", ".join(f"{c} {statistics.median(s.get(c, 0) for _, s in rounds):.2f}" for c in commands)
            print(f"{name}: Redis CPU per fresh grab {statistics.median(c for c, _ in rounds):.2f} us; "
                  f"usec per call: {per_call}")
        if "--perf" in sys.argv:
            for name, design in DESIGNS:
                data = os.path.join(workdir, f"perf-{name}.data")
                perf = subprocess.Popen(["perf", "record", "-q", "-g", "-F", "4999", "-p", str(server.pid),
                                         "-o", data], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                time.sleep(0.3)
                round_of(r, design, f"perf-{name}")
                perf.send_signal(2)
                perf.wait()
                report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "symbol",
                                         "--stdio", "-g", "none"], capture_output=True, text=True).stdout
                top = [line for line in report.splitlines() if line.strip()[:1].isdigit()][:8]
                print(f"{name}: top symbols\n" + "\n".join(top))
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
