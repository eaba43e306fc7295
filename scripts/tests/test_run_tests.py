"""scripts/run_tests.py: cargo's package ids read, the longest binary first, which binaries are
selected, a slot's settings, and one binary run to its end, its failure or its timeout.

Run: python -m unittest discover -s scripts/tests
"""

import os
import stat
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import run_tests  # noqa: E402


def binary(folder, name, script):
    path = os.path.join(folder, name)
    with open(path, "w") as file:
        file.write("#!/bin/sh\n" + script + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
    return run_tests.TestBinary("local", name, "test", f"tests/{name}.rs", path, folder)


class PackageIds(unittest.TestCase):
    def test_a_name_after_the_hash_or_the_folders_name(self):
        self.assertEqual(run_tests.package_name("path+file:///work/main/shared#red-packets@0.1.0"), "red-packets")
        self.assertEqual(run_tests.package_name("path+file:///work/main/local#0.1.0"), "local")


class Order(unittest.TestCase):
    def test_the_longest_first_and_the_unknown_last(self):
        with tempfile.TemporaryDirectory() as folder:
            quick, slow, unknown = (binary(folder, name, "true") for name in ("quick", "slow", "unknown"))
            known = {"local/quick": 1.0, "local/slow": 80.0}
            self.assertEqual([b.target for b in run_tests.ordered([quick, unknown, slow], known)], ["slow", "quick", "unknown"])


class Selection(unittest.TestCase):
    def test_a_package_less_the_skipped_tests_and_a_skipped_name_that_is_none_refused(self):
        with tempfile.TemporaryDirectory() as folder:
            wallet, storm = binary(folder, "wallet", "true"), binary(folder, "storm", "true")
            unit = run_tests.TestBinary("red-packets", "red_packets", "lib", "src/lib.rs", "/x", folder)
            every = [wallet, storm, unit]
            self.assertEqual(run_tests.selected(every, ["local"], [], ["wallet"]), [storm])
            self.assertEqual(run_tests.selected(every, [], [], ["wallet"]), [storm, unit])
            self.assertEqual(run_tests.selected(every, [], ["wallet"], []), [wallet])
            with self.assertRaisesRegex(ValueError, "names no integration test: walet"):
                run_tests.selected(every, ["local"], [], ["walet"])


class Suites(unittest.TestCase):
    def test_one_entry_per_top_level_module_filtered_to_its_tests(self):
        it = run_tests.TestBinary("local", "it", "test", "tests/it/main.rs", "/x/it", "/x")
        names = ["wallet::a_top_up", "wallet::a_withdrawal", "fleet::a_failover", "support::throttled::tests::rules"]
        found = run_tests.suites(it, names)
        self.assertEqual([(s.target, s.filters) for s in found], [("fleet", ("fleet::",)), ("support", ("support::",)), ("wallet", ("wallet::",))])
        self.assertEqual(found[0].key, "local/fleet")
        self.assertIn("tests/it/main.rs fleet::", found[0].running_line)

    def test_a_module_name_deeper_in_another_suite_is_refused(self):
        it = run_tests.TestBinary("local", "it", "test", "tests/it/main.rs", "/x/it", "/x")
        with self.assertRaisesRegex(ValueError, "suite wallet's filter would also run fleet::wallet::a"):
            run_tests.suites(it, ["wallet::b", "fleet::wallet::a"])

    def test_a_suite_runs_the_executable_with_its_filter_first(self):
        with tempfile.TemporaryDirectory() as folder:
            echo = binary(folder, "it", 'echo "args: $*"')
            suite = run_tests.suites(echo, ["wallet::a"])[0]
            _, _, output = run_tests.run_one(suite, {}, ["--skip", "x"], timeout=10)
            self.assertIn("args: wallet:: --skip x", output)


class Slots(unittest.TestCase):
    def test_settings_split_on_commas_and_the_first_equals_sign(self):
        self.assertEqual(
            run_tests.parse_slot("AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:1,REDIS_KEY_PREFIX=a=b"),
            {"AWS_ENDPOINT_URL_DYNAMODB": "http://127.0.0.1:1", "REDIS_KEY_PREFIX": "a=b"},
        )
        self.assertEqual(run_tests.parse_slot(""), {})


class RunOne(unittest.TestCase):
    def test_a_passing_binary_with_its_slot_and_cargos_variables(self):
        with tempfile.TemporaryDirectory() as folder:
            echo = binary(folder, "echo", 'echo "$SLOT_SETTING $CARGO_MANIFEST_DIR $(pwd) $*"')
            passed, _, output = run_tests.run_one(echo, {"SLOT_SETTING": "two"}, ["--skip", "x"], timeout=10)
            self.assertTrue(passed)
            real = os.path.realpath(folder)
            self.assertIn(f"two {folder} ", output)
            self.assertTrue(output.strip().endswith("--skip x"), output)
            self.assertIn(real, output)

    def test_a_failing_binary_fails(self):
        with tempfile.TemporaryDirectory() as folder:
            failing = binary(folder, "failing", "echo 'test result: FAILED'; exit 101")
            passed, _, output = run_tests.run_one(failing, {}, [], timeout=10)
            self.assertFalse(passed)
            self.assertIn("test result: FAILED", output)

    def test_a_binary_past_its_timeout_is_killed_and_fails(self):
        with tempfile.TemporaryDirectory() as folder:
            hanging = binary(folder, "hanging", "echo started; sleep 30")
            passed, took, output = run_tests.run_one(hanging, {}, [], timeout=0.5)
            self.assertFalse(passed)
            self.assertLess(took, 10)
            self.assertIn("started", output)
            self.assertIn("local/hanging: killed after 0.5 s", output)


if __name__ == "__main__":
    unittest.main()
