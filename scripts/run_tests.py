#!/usr/bin/env python3
"""Runs the workspace's test binaries, built already, as `cargo test` would (`make test`'s passes).

Each binary runs exactly as cargo runs it (its package's folder as the working directory,
cargo's variables set), and its whole output is printed under cargo's own `Running` line once it
ends, so the log reads as cargo's does and its `test result:` lines still add up to the summary.
Unlike `cargo test`, every binary runs even after one fails (cargo's `--no-fail-fast`), each
has a timeout (its process group killed past it), each one's time is kept for the next run,
and `--jobs` binaries may run at once (the longest first), each slot with settings of its own
(`--slot`: a DynamoDB Local of its own, say).

Which binaries: every test binary of the workspace as `cargo test --workspace` builds it (the
same features, so nothing is built again), narrowed by `--package`, `--test` and `--skip-test`.
An integration binary built from a folder (`tests/it/main.rs`) holds suites, one per top-level
module (`wallet::…`): each suite runs as a binary of its own here (the same executable, filtered
to the suite's tests), named by its module, so a suite is chosen, skipped, timed and ordered as
a binary is, and its tests run in a process of their own as when each suite was its own binary.
Arguments after `--` go to every binary (`--skip NAME`, say). The exit status is 1 if any failed
or timed out.

    scripts/run_tests.py
    scripts/run_tests.py --package local
    scripts/run_tests.py --jobs 2 --slot AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8001
    scripts/run_tests.py --package local --test events_on_binaries -- --skip the_ledger_is_reached_over_tls
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Each binary's wall time in the last run on this machine, the longest started first next time.
DURATIONS = ROOT / ".local" / "test-durations.json"
# Before any run on this machine: the binaries `make test` measured as the slowest (seconds on
# two cores), so a fresh clone starts them first too. Only the order depends on these.
FIRST_RUN_HINT = {
    "local/fairness": 75,
    "local/campaign": 55,
    "red-packets/recovery_model": 42,
    "local/restart": 29,
    "local/wallet": 26,
    "local/money_safety": 24,
    "local/recovery": 22,
    "local/settle_and_query": 19,
}


# The process groups of the binaries running now: each binary leads a session of its own, so a
# timeout or this runner's own end stops everything it started (its servers, its emulators).
RUNNING: set[int] = set()


@dataclass
class TestBinary:
    """One test executable cargo built, and where cargo would run it."""

    package: str
    target: str
    kind: str
    source: str
    executable: str
    package_dir: str
    # The arguments that narrow the executable to this suite's tests (none for a whole binary).
    filters: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.package}/{self.target}" if self.kind == "test" else f"{self.package}/{self.kind}:{self.target}"

    @property
    def running_line(self) -> str:
        suite = f" {self.filters[0]}" if self.filters else ""
        return f"     Running {self.source}{suite} ({os.path.relpath(self.executable, ROOT)})"


def test_binaries() -> list[TestBinary]:
    """Every test executable of `cargo test --workspace --no-run`, from cargo's JSON messages."""
    build = subprocess.run(
        ["cargo", "test", "--workspace", "--locked", "--no-run", "--message-format=json-render-diagnostics"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    binaries = []
    for line in build.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") != "compiler-artifact" or not message.get("executable"):
            continue
        if not message["profile"]["test"]:
            continue
        target = message["target"]
        package_dir = str(Path(message["manifest_path"]).parent)
        kind = target["kind"][0]
        source = os.path.relpath(target["src_path"], package_dir)
        if kind != "test":
            source = f"unittests {source}"
        binary = TestBinary(package_name(message["package_id"]), target["name"], kind, source, message["executable"], package_dir)
        binaries.extend(suites(binary, listed(binary)) if kind == "test" and source.endswith("/main.rs") else [binary])
    return binaries


def listed(binary: TestBinary) -> list[str]:
    """The names of every test in the binary (`--list --format terse`: `name: test` lines)."""
    listing = subprocess.run(
        [binary.executable, "--list", "--format", "terse"], cwd=binary.package_dir, stdout=subprocess.PIPE, text=True, check=True
    )
    return [line.rsplit(": ", 1)[0] for line in listing.stdout.splitlines() if line.endswith(": test")]


def suites(binary: TestBinary, names: list[str]) -> list[TestBinary]:
    """One entry per top-level module of a multi-suite binary, filtered to that module's tests by
    the prefix `module::` (libtest's filters match substrings: a module name that also occurs
    deeper in another suite's names is an error, ValueError, not a silent second run)."""
    modules = sorted({name.split("::", 1)[0] for name in names if "::" in name})
    for module in modules:
        elsewhere = [name for name in names if f"{module}::" in name and not name.startswith(f"{module}::")]
        if elsewhere:
            raise ValueError(f"suite {module}'s filter would also run {elsewhere[0]}")
    return [
        TestBinary(binary.package, module, "test", binary.source, binary.executable, binary.package_dir, (f"{module}::",))
        for module in modules
    ]


def package_name(package_id: str) -> str:
    """The name in cargo's package id: `path+file:///…/shared#red-packets@0.1.0`, or
    `path+file:///…/local#0.1.0` where the name is the folder's."""
    location, _, fragment = package_id.partition("#")
    return fragment.split("@")[0] if "@" in fragment else location.rstrip("/").rsplit("/", 1)[-1]


def known_durations() -> dict[str, float]:
    """Each binary's time: the last run's on this machine where recorded, the hint otherwise."""
    known = dict(FIRST_RUN_HINT)
    if DURATIONS.exists():
        known.update(json.loads(DURATIONS.read_text()))
    return known


def ordered(binaries: list[TestBinary], known: dict[str, float]) -> list[TestBinary]:
    """The longest first (the shortest makespan of the simple rules); unknown ones last."""
    return sorted(binaries, key=lambda binary: -known.get(binary.key, 0.0))


def parse_slot(text: str) -> dict[str, str]:
    """A slot's settings: `NAME=VALUE,NAME=VALUE` (a value may hold `=`, not `,`)."""
    return dict(setting.split("=", 1) for setting in text.split(",") if setting)


def run_one(binary: TestBinary, slot: dict[str, str], test_args: list[str], timeout: float) -> tuple[bool, float, str]:
    """One binary to its end (or its timeout), with its slot's settings: whether it passed, its
    wall time and its output."""
    environment = dict(os.environ, **slot, CARGO_MANIFEST_DIR=binary.package_dir, CARGO_PKG_NAME=binary.package)
    started = time.monotonic()
    with tempfile.TemporaryFile(mode="w+") as output:
        child = subprocess.Popen(
            [binary.executable, *binary.filters, *test_args],
            cwd=binary.package_dir,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        RUNNING.add(child.pid)
        try:
            passed = child.wait(timeout=timeout) == 0
            verdict = ""
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            passed = False
            verdict = f"\n{binary.key}: killed after {timeout:g} s\n"
        finally:
            RUNNING.discard(child.pid)
        output.seek(0)
        return passed, time.monotonic() - started, output.read() + verdict


def selected(
    binaries: list[TestBinary], packages: list[str], tests: list[str], skipped: list[str]
) -> list[TestBinary]:
    """The binaries of `packages` (all, if none), then the integration tests named in `tests` (all,
    if none) but those in `skipped`. A skipped name that is no integration test among them is an
    error (ValueError): a renamed file would otherwise run again unnoticed."""
    if packages:
        binaries = [binary for binary in binaries if binary.package in packages]
    if tests:
        binaries = [binary for binary in binaries if binary.kind == "test" and binary.target in tests]
    unknown = set(skipped) - {binary.target for binary in binaries if binary.kind == "test"}
    if unknown:
        raise ValueError("--skip-test names no integration test: " + ", ".join(sorted(unknown)))
    return [binary for binary in binaries if not (binary.kind == "test" and binary.target in skipped)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=1, help="binaries at once (default 1, as cargo)")
    parser.add_argument(
        "--slot",
        action="append",
        default=[],
        metavar="NAME=VALUE,...",
        help="settings of one slot, the binaries it runs one after another (repeatable; one slot each of --jobs)",
    )
    parser.add_argument("--package", action="append", default=[], help="only this package's binaries (repeatable)")
    parser.add_argument("--test", action="append", default=[], help="only this integration test (repeatable)")
    parser.add_argument("--skip-test", action="append", default=[], help="not this integration test (repeatable)")
    parser.add_argument("--timeout", type=float, default=900, help="seconds a binary may run (default 900)")
    parser.add_argument("--no-record", action="store_true", help="leave the times of this run out of the next order")
    parser.add_argument("test_args", nargs="*", help="after --: arguments to every binary")
    options = parser.parse_args()

    try:
        binaries = selected(test_binaries(), options.package, options.test, options.skip_test)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    if not binaries:
        print("no test binary matches", file=sys.stderr)
        return 1

    def stop(signum: int, _frame: object) -> None:
        for group in list(RUNNING):
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)

    queue = ordered(binaries, known_durations())
    lock = threading.Lock()
    durations: dict[str, float] = {}
    failed: list[str] = []

    slots = [parse_slot(slot) for slot in options.slot]
    jobs = max(1, options.jobs)
    slots += [{}] * (jobs - len(slots))

    def worker(slot: dict[str, str]) -> None:
        while True:
            with lock:
                if not queue:
                    return
                binary = queue.pop(0)
            passed, took, output = run_one(binary, slot, options.test_args, options.timeout)
            with lock:
                durations[binary.key] = round(took, 1)
                if not passed:
                    failed.append(binary.key)
                print(binary.running_line, flush=True)
                print(output, end="" if output.endswith("\n") else "\n", flush=True)

    started = time.monotonic()
    workers = [threading.Thread(target=worker, args=(slot,)) for slot in slots[:jobs]]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()

    if not options.no_record:
        DURATIONS.parent.mkdir(exist_ok=True)
        previous = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
        DURATIONS.write_text(json.dumps({**previous, **durations}, indent=1, sort_keys=True) + "\n")
    print(f"{len(binaries)} test binaries and suites, {jobs} at a time, in {time.monotonic() - started:.0f} s", flush=True)
    if failed:
        print("failed: " + ", ".join(sorted(failed)), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
