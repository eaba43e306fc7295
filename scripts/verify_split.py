#!/usr/bin/env python3
"""Recomputes settled red packets' shares from their revealed seeds, outside the service's code.

docs/FAIRNESS.md specifies the algorithm; this is it again, in Python, from that text: the
standard library and a ChaCha20 from PyPI (pycryptodome) only.

    python scripts/verify_split.py views.jsonl      # settled packet views, one JSON per line
    python scripts/verify_split.py - < views.jsonl  # the same from standard input
    python scripts/verify_split.py --vectors        # the shares of fixed seeds (the Rust tests pin them)

A view is what `GET /packets/{id}` answers once the packet is settled, its grabs whole (a view
carries 1,000 at most: join the pages `grabs_from=<next_grabs_from>` gives). For each, the verifier
checks that the revealed seed hashes to the commitment the send published, recomputes the pool
(every share, in the order grabs take them), and checks every grab's amount against the share it
took, that no share was taken twice, and that the refund is exactly what nobody took. It prints
one line per packet that fails and a summary, and exits 1 if any failed, 0 otherwise.
"""

import hashlib
import json
import sys

from Crypto.Cipher import ChaCha20

MASK64 = (1 << 64) - 1


class ChaChaStream:
    """The ChaCha20 keystream of a 32-byte key, nonce zero, block counter from zero, read as
    little-endian 64-bit words: what Rust's `rand_chacha::ChaCha20Rng::from_seed` yields from
    `next_u64`."""

    def __init__(self, seed: bytes):
        self._cipher = ChaCha20.new(key=seed, nonce=bytes(8))
        self._buffer = b""

    def next_u64(self) -> int:
        if not self._buffer:
            self._buffer = self._cipher.encrypt(bytes(256))
        word, self._buffer = self._buffer[:8], self._buffer[8:]
        return int.from_bytes(word, "little")


def uniform(stream: ChaChaStream, low: int, high: int) -> int:
    """A uniform draw from low..=high: Lemire's multiply-and-reject on 64-bit words."""
    span = high - low + 1
    threshold = ((-span) & MASK64) % span
    while True:
        product = stream.next_u64() * span
        if product & MASK64 >= threshold:
            return low + (product >> 64)


def double_average(stream: ChaChaStream, total: int, count: int) -> list:
    shares, remaining = [], total
    for left in range(count, 1, -1):
        share = uniform(stream, 1, 2 * (remaining // left) - 1)
        shares.append(share)
        remaining -= share
    return shares + [remaining]


def line_cut(stream: ChaChaStream, total: int, count: int) -> list:
    last, wanted = total - 1, count - 1
    cuts = set()
    for upper in range(last - wanted + 1, last + 1):  # Floyd's distinct sample
        cut = uniform(stream, 1, upper)
        cuts.add(upper if cut in cuts else cut)
    points = sorted(cuts) + [total]
    return [point - previous for previous, point in zip([0] + points, points)]


def shuffle(stream: ChaChaStream, shares: list) -> None:
    """Fisher-Yates from the end: position i swaps with one drawn from 0..=i."""
    for i in range(len(shares) - 1, 0, -1):
        j = uniform(stream, 0, i)
        shares[i], shares[j] = shares[j], shares[i]


def pool(version: int, kind: str, split: str, total: int, count: int, seed: bytes) -> list:
    """The packet's shares in the order grabs take them (share 1 first)."""
    if version not in (1, 2):
        raise ValueError(f"unknown split version {version}")
    if kind == "fixed":
        return [total // count] * count
    stream = ChaChaStream(seed)
    rules = {"double_average": double_average, "line_cut": line_cut}
    shares = rules[split or "double_average"](stream, total, count)  # a lucky packet's default rule
    if version == 2:
        shuffle(stream, shares)
    return shares


def commitment(view: dict, seed_hex: str) -> str:
    text = (
        "red-packet-split\n"
        f"version={view['split_version']}\n"
        f"packet_id={view['packet_id']}\n"
        f"kind={view['kind']}\n"
        f"split={view['split'] or 'none'}\n"
        f"total_cents={view['total_cents']}\n"
        f"count={view['count']}\n"
        f"seed={seed_hex}\n"
    )
    return hashlib.sha256(text.encode()).hexdigest()


def verify(view: dict) -> list:
    """What is wrong with one settled view; empty when every share checks out."""
    seed_hex = view.get("seed")
    if not view.get("settled") or not seed_hex:
        return ["not settled: no seed revealed"]
    problems = []
    if len(view["grabs"]) != view.get("grab_count", len(view["grabs"])):
        return [f"{len(view['grabs'])} of {view['grab_count']} grabs given: join every page (grabs_from)"]
    if commitment(view, seed_hex) != view["commitment"]:
        problems.append("the revealed seed does not hash to the published commitment")
    shares = pool(view["split_version"], view["kind"], view["split"], view["total_cents"], view["count"],
                  bytes.fromhex(seed_hex))
    taken = set()
    for grab in view["grabs"]:
        number = grab["share"]
        if not 1 <= number <= len(shares):
            problems.append(f"{grab['user']} took share {number} of {len(shares)}")
        elif grab["amount_cents"] != shares[number - 1]:
            problems.append(f"{grab['user']} got {grab['amount_cents']} for share {number}, which is {shares[number - 1]}")
        if number in taken:
            problems.append(f"share {number} taken twice")
        taken.add(number)
    untaken = sum(share for number, share in enumerate(shares, 1) if number not in taken)
    if view["refund_cents"] != untaken:
        problems.append(f"refund {view['refund_cents']}, but the shares nobody took sum to {untaken}")
    return problems


def vectors() -> None:
    """The pools of fixed seeds (seed n: n's 8 little-endian bytes, then zeros), for Rust's tests."""
    for version in (1, 2):
        for split, total, count, n in [("double_average", 10_000, 10, 1), ("double_average", 20_000, 7, 2024),
                                       ("line_cut", 10_000, 10, 1), ("line_cut", 20_000, 7, 2024)]:
            seed = n.to_bytes(8, "little") + bytes(24)
            print(version, split, total, count, n, pool(version, "lucky", split, total, count, seed))
    # Longer pools, past the first keystream blocks: their SHA-256 over the decimal shares, comma-joined.
    for split in ("double_average", "line_cut"):
        seed = (7).to_bytes(8, "little") + bytes(24)
        shares = pool(2, "lucky", split, 2_000_000, 1_000, seed)
        print(2, split, 2_000_000, 1_000, 7, hashlib.sha256(",".join(map(str, shares)).encode()).hexdigest())


def main(argv: list) -> int:
    if argv[1:] == ["--vectors"]:
        vectors()
        return 0
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    source = sys.stdin if argv[1] == "-" else open(argv[1], encoding="utf-8")
    checked = failed = shares = 0
    with source:
        for line in source:
            if not line.strip():
                continue
            try:
                view = json.loads(line)
                problems = verify(view)
            except (KeyError, TypeError, ValueError) as error:  # not a view, or a malformed one
                view = view if isinstance(view, dict) else {}
                problems = [f"unreadable: {error!r}"]
            checked += 1
            shares += view.get("count", 0) if isinstance(view.get("count"), int) else 0
            if problems:
                failed += 1
                print(f"FAILED {view.get('packet_id')}: {'; '.join(problems)}")
    print(f"{checked} packets checked, {shares} shares recomputed, {failed} failed")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
