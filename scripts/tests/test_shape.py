"""scripts/shape.py on small inline Rust snippets and throwaway crates: what is test code, where
braces count, which functions are long, what the layout says; and the repo's DESIGN.md block.

Run: python -m unittest discover -s scripts/tests
"""

import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import shape  # noqa: E402

DESIGN = os.path.join(ROOT, "docs", "DESIGN.md")


def rust(text):
    return textwrap.dedent(text).lstrip("\n")


def kept(src):
    """The lines of src that are not test code."""
    gone = shape.test_lines(src)
    return [line for number, line in enumerate(src.split("\n")[: shape.line_count(src)], 1) if number not in gone]


def write_tree(base, files):
    for rel, text in files.items():
        path = os.path.join(base, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(rust(text))


class Mask(unittest.TestCase):
    def test_literals_and_comments_are_blanked_with_offsets_kept(self):
        src = rust(
            """
            let a = "{ \\" }"; // {
            let b = r#"{"x": "}"}"#; /* { /* nested } */ { */
            let c = '{'; let d = b'}'; let e = '\\''; let f = '\\u{7B}';
            fn g<'a>(x: &'a str) -> &'a str { 'outer: loop { break 'outer x; } }
            """
        )
        masked = shape.mask(src)
        self.assertEqual(len(masked), len(src))
        self.assertEqual(masked.count("\n"), src.count("\n"))
        first_three = "\n".join(masked.split("\n")[:3])
        self.assertNotIn("{", first_three)
        self.assertNotIn("}", first_three)
        # The lifetimes and the label are not char literals: the braces after them still count.
        last = masked.split("\n")[3]
        self.assertEqual((last.count("{"), last.count("}")), (2, 2))
        self.assertIn("'a str", last)

    def test_a_lifetime_before_a_char_literal(self):
        masked = shape.mask("impl<'a> X<'a> { fn f() -> char { '}' } }\n")
        self.assertEqual((masked.count("{"), masked.count("}")), (2, 2))


class TestCode(unittest.TestCase):
    def test_a_trailing_test_module_is_left_out_braces_in_its_strings_ignored(self):
        src = rust(
            """
            pub fn f() -> u8 {
                1
            }

            #[cfg(test)]
            mod tests {
                use super::*;

                #[test]
                fn braces() {
                    assert_eq!(format!("{{}}{}", "}"), "{}}");
                    let _ = '}';
                }
            }
            """
        )
        self.assertEqual(kept(src), ["pub fn f() -> u8 {", "    1", "}", ""])

    def test_code_after_a_test_item_counts(self):
        src = rust(
            """
            /// Only for the tests.
            #[cfg(test)]
            #[derive(Debug)]
            struct Probe { at: &'static str }
            #[cfg(test)]
            mod tests;
            #[cfg(test)]
            const WHERE: &str = "}";
            pub struct Kept;
            #[cfg(test)]
            impl Kept { fn probe() -> &'static str { "{" } }
            pub fn after() {}
            """
        )
        self.assertEqual(kept(src), ["pub struct Kept;", "pub fn after() {}"])

    def test_only_cfgs_that_need_test(self):
        src = rust(
            """
            #[cfg(all(test, feature = "slow"))]
            fn slow() {}
            #[cfg(not(test))]
            fn real() {}
            #[cfg(any(test, unix))]
            fn either() {}
            """
        )
        self.assertEqual(kept(src), ["#[cfg(not(test))]", "fn real() {}", "#[cfg(any(test, unix))]", "fn either() {}"])

    def test_code_behind_the_test_support_feature_is_test_code(self):
        src = rust(
            """
            #[cfg(any(test, feature = "test-support"))]
            use std::sync::atomic::AtomicI64;
            /// A clock tests move by hand.
            #[cfg(any(test, feature = "test-support"))]
            #[derive(Debug)]
            pub struct ManualClock(AtomicI64);
            #[cfg(feature = "test-support")]
            impl ManualClock { pub fn at(&self) -> Result<(), Stop> { Ok(()) } }
            #[cfg(all(unix, any(feature = "test-support", test)))]
            pub fn support() {}
            #[cfg(not(feature = "test-support"))]
            pub fn lambda_only() {}
            #[cfg(feature = "other")]
            pub fn other() {}
            pub fn kept() {}
            """
        )
        self.assertEqual(
            kept(src),
            [
                '#[cfg(not(feature = "test-support"))]',
                "pub fn lambda_only() {}",
                '#[cfg(feature = "other")]',
                "pub fn other() {}",
                "pub fn kept() {}",
            ],
        )

    def test_cfg_predicates(self):
        only = [
            "test",
            'feature = "test-support"',
            'any(test, feature = "test-support")',
            'any(\n    test, // a comment\n    feature = "test-support",\n)',
            'all(test, feature = "slow")',
            'all(unix, any(test, feature = "test-support"))',
            "not(not(test))",
        ]
        not_only = [
            "not(test)",
            'not(feature = "test-support")',
            'any(test, feature = "other")',
            'feature = "test-support-extra"',
            "unix",
            "any(test, unparsable(",
        ]
        self.assertEqual([p for p in only if not shape.test_only(p)], [])
        self.assertEqual([p for p in not_only if shape.test_only(p)], [])

    def test_a_test_support_statement_a_long_signature_and_struct_literal_fields(self):
        src = rust(
            """
            impl S {
                #[cfg(any(test, feature = "test-support"))]
                fn probe(&self, at: Point) -> Result<(), Stop> {
                    Ok(())
                }
                fn mark(&self) -> S {
                    #[cfg(any(test, feature = "test-support"))]
                    if !self.marks {
                        return;
                    } else if self.other {
                        return;
                    }
                    let kept = 1;
                    S {
                        #[cfg(any(test, feature = "test-support"))]
                        marks: true,
                        kept,
                    }
                }
            }
            """
        )
        self.assertEqual(
            kept(src),
            ["impl S {", "    fn mark(&self) -> S {", "        let kept = 1;", "        S {", "            kept,", "        }", "    }", "}"],
        )

    def test_a_test_only_field_statement_and_arm(self):
        src = rust(
            """
            struct S {
                a: u8,
                #[cfg(test)]
                b: u8,
            }
            fn f(x: u8) -> u8 {
                #[cfg(test)]
                let y = { 1 };
                match x {
                    #[cfg(test)]
                    0 => { 9 }
                    _ => 2,
                }
            }
            """
        )
        self.assertEqual(
            kept(src),
            ["struct S {", "    a: u8,", "}", "fn f(x: u8) -> u8 {", "    match x {", "        _ => 2,", "    }", "}"],
        )

    def test_an_inner_cfg_test_makes_the_whole_file_test_code(self):
        self.assertEqual(kept("#![cfg(test)]\nfn f() {}\n"), [])


class Functions(unittest.TestCase):
    def test_a_long_function_is_found_with_its_length(self):
        body = "\n".join(f'    let s{i} = "}}{{";' for i in range(85))
        src = (
            "pub trait T {\n    fn declared(&self) -> [u8; 4];\n}\n"
            "#[tracing::instrument]\n"
            "pub async fn long<'a>(x: &'a [u8; 2]) -> Result<(), ()>\nwhere\n    'a: 'static,\n{\n"
            + body
            + "\n    Ok(())\n}\n"
            "fn short() -> char { '{' }\n"
        )
        code, _ = shape.without_tests(src)
        found = {name: (first, last - first + 1) for name, first, last in shape.functions(code)}
        self.assertEqual(found, {"long": (5, 85 + 6), "short": (96, 1)})

    def test_functions_in_test_code_are_not_counted(self):
        src = "fn kept() {}\n#[cfg(test)]\nmod tests {\n    fn gone() {}\n}\n"
        code, _ = shape.without_tests(src)
        self.assertEqual([name for name, _, _ in shape.functions(code)], ["kept"])


class Measure(unittest.TestCase):
    def test_files_totals_and_long_items(self):
        long_fn = "fn long() {\n" + "    step();\n" * 90 + "}\n"
        with tempfile.TemporaryDirectory() as base:
            write_tree(
                base,
                {
                    "shared/src/lib.rs": "pub mod a;\n",
                    "shared/src/a.rs": "// a\n" * 510 + "#[cfg(test)]\nmod tests {\n}\n",
                    "shared/src/b/tests.rs": "fn x() {}\n",
                    "functions/grab/src/main.rs": long_fn,
                    "functions/grab/tests/on_redis.rs": "fn y() {}\n",
                    "local/src/main.rs": "fn main() {}\n",
                },
            )
            figures = shape.measure(base)
        by_path = {f["path"]: f["non_test_lines"] for f in figures["files"]}
        self.assertEqual(
            by_path,
            {"shared/src/lib.rs": 1, "shared/src/a.rs": 510, "functions/grab/src/main.rs": 92, "local/src/main.rs": 1},
        )
        self.assertEqual(figures["total_non_test_lines"], 604)
        self.assertEqual([f["path"] for f in figures["left_out"]], ["shared/src/b/tests.rs"])
        self.assertEqual([f["path"] for f in figures["files_over_500"]], ["shared/src/a.rs"])
        self.assertEqual(
            figures["functions_over_80"], [{"path": "functions/grab/src/main.rs", "line": 1, "name": "long", "lines": 92}]
        )
        text = shape.render(figures)
        self.assertIn("blank and comment lines included", text)
        self.assertIn("functions/grab/src/main.rs:1  fn long", text)


    def test_a_module_declared_behind_test_support_is_left_out(self):
        with tempfile.TemporaryDirectory() as base:
            write_tree(
                base,
                {
                    "shared/src/lib.rs": """
                        pub mod adapters;
                        #[cfg(any(test, feature = "test-support"))]
                        pub mod events;
                        #[cfg(not(feature = "test-support"))]
                        pub mod lambda;
                        """,
                    "shared/src/events.rs": "pub struct Event;\n",
                    "shared/src/lambda.rs": "pub fn only_in_the_lambda() {}\n",
                    "shared/src/adapters/mod.rs": """
                        pub mod dynamo;
                        #[cfg(feature = "test-support")]
                        pub mod memory;
                        """,
                    "shared/src/adapters/dynamo.rs": "pub struct Dynamo;\n",
                    "shared/src/adapters/memory/mod.rs": "mod ledger;\n",
                    "shared/src/adapters/memory/ledger.rs": "pub struct Ledger;\n" * 600,
                    "functions/grab/src/main.rs": """
                        mod handler;
                        mod outer {
                            #[cfg(test)]
                            mod fixtures;
                        }
                        fn main() {}
                        """,
                    "functions/grab/src/handler.rs": "pub fn handle() {}\n",
                    "functions/grab/src/outer/fixtures.rs": "pub fn fixture() {}\n",
                },
            )
            figures = shape.measure(base)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(shape.main(["--root", base]), 0)
            found = shape.layout(base, "shared/src", ("adapters",))
        self.assertEqual(
            [f["path"] for f in figures["files"]],
            [
                "functions/grab/src/handler.rs",
                "functions/grab/src/main.rs",
                "shared/src/adapters/dynamo.rs",
                "shared/src/adapters/mod.rs",
                "shared/src/lambda.rs",
                "shared/src/lib.rs",
            ],
        )
        by_path = {f["path"]: f for f in figures["files"]}
        self.assertEqual(by_path["shared/src/lib.rs"]["non_test_lines"], 3)  # the events declaration is gone
        self.assertEqual(by_path["shared/src/lambda.rs"]["non_test_lines"], 1)  # not(test-support): product code
        self.assertEqual(figures["files_over_500"], [])
        left = {f["path"]: f["reason"] for f in figures["left_out"]}
        self.assertEqual(
            left,
            {
                "functions/grab/src/outer/fixtures.rs": "mod outer::fixtures behind #[cfg(test)] in functions/grab/src/main.rs",
                "shared/src/adapters/memory/ledger.rs": 'mod memory behind #[cfg(feature = "test-support")] in shared/src/adapters/mod.rs',
                "shared/src/adapters/memory/mod.rs": 'mod memory behind #[cfg(feature = "test-support")] in shared/src/adapters/mod.rs',
                "shared/src/events.rs": 'mod events behind #[cfg(any(test, feature = "test-support"))] in shared/src/lib.rs',
            },
        )
        self.assertEqual(figures["left_out_lines"], 603)
        self.assertIn("left out (test files): 4 files, 603 lines", out.getvalue())
        self.assertIn("     600  shared/src/adapters/memory/ledger.rs  (mod memory behind", out.getvalue())
        rooms = {r["room"]: r for r in found["rooms"]}
        self.assertEqual(sorted(rooms), ["adapters", "lambda"])
        self.assertEqual([s["room"] for s in rooms["adapters"]["sub_rooms"]], ["adapters::dynamo"])


class Layout(unittest.TestCase):
    CRATE = {
        "shared/src/lib.rs": """
            pub mod adapters;
            pub mod clock;
            pub mod domain;
            pub mod ports;
            pub use clock::Millis;
            """,
        "shared/src/clock.rs": "pub type Millis = u64;\n",
        "shared/src/domain/mod.rs": """
            pub mod money;
            pub mod packet;
            pub use money::Cents;
            """,
        "shared/src/domain/money.rs": """
            // use crate::ports::Nothing; (a comment is not an import)
            pub type Cents = i64;
            pub fn at() -> crate::Millis { 0 }
            """,
        "shared/src/domain/packet.rs": """
            use super::Cents;
            pub struct Packet(pub Cents);
            #[cfg(test)]
            mod tests {
                use crate::adapters::memory::Store;
            }
            """,
        "shared/src/ports.rs": """
            use crate::domain::{packet::Packet, self};
            pub trait Store { fn put(&self, p: Packet); }
            """,
        "shared/src/adapters/mod.rs": """
            pub mod memory;
            pub use self::memory::Store;
            """,
        "shared/src/adapters/memory.rs": """
            pub struct Store;
            impl crate::ports::Store for Store { fn put(&self, _: crate::domain::packet::Packet) {} }
            """,
    }

    def test_rooms_sub_rooms_and_re_exports(self):
        with tempfile.TemporaryDirectory() as base:
            write_tree(base, self.CRATE)
            found = shape.layout(base, "shared/src", ("adapters", "domain"))
        rooms = {r["room"]: r for r in found["rooms"]}
        self.assertEqual(sorted(rooms), ["adapters", "clock", "domain", "ports"])
        self.assertEqual(rooms["adapters"]["imports"], ["domain", "ports"])
        self.assertEqual(rooms["ports"]["imports"], ["domain"])
        self.assertEqual(rooms["domain"]["imports"], ["clock"])  # crate::Millis is clock's
        subs = {s["room"]: s for s in rooms["domain"]["sub_rooms"]}
        self.assertEqual(subs["domain::packet"]["siblings"], ["money"])  # super::Cents is money's
        self.assertEqual(subs["domain::packet"]["imports"], [])  # its test module is left out
        self.assertEqual(found["circles"], [])
        text = shape.render_layout(found)
        self.assertIn("  packet  -> - | money", text)
        self.assertIn("circles between rooms: none", text)

    def test_circles(self):
        crate = dict(self.CRATE)
        crate["shared/src/clock.rs"] = "pub type Millis = u64;\npub fn f(_: &dyn crate::ports::Store) {}\n"
        crate["shared/src/domain/money.rs"] = "use super::packet::Packet;\npub fn at() -> crate::Millis { 0 }\n"
        with tempfile.TemporaryDirectory() as base:
            write_tree(base, crate)
            found = shape.layout(base, "shared/src", ("adapters", "domain"))
        self.assertEqual(found["circles"], [["clock", "domain", "ports"]])
        self.assertEqual(found["sub_room_circles"], [["domain::money", "domain::packet"]])

    def test_a_re_exported_crate_is_a_room_of_the_crate_that_re_exports_it(self):
        crate = {
            "shared/src/lib.rs": """
                pub mod http;
                pub use red_packets_core::{ports, settle};
                pub use red_packets_domain as domain;
                pub use red_packets_domain::clock;
                """,
            "shared/src/http.rs": "use crate::ports::Store;\npub fn f(_: crate::domain::Cents, _: crate::clock::Millis) {}\n",
        }
        with tempfile.TemporaryDirectory() as base:
            write_tree(base, crate)
            found = shape.layout(base, "shared/src", ())
        rooms = {r["room"]: r for r in found["rooms"]}
        self.assertEqual(sorted(rooms), ["clock", "domain", "http", "ports", "settle"])
        self.assertEqual(rooms["http"]["imports"], ["clock", "domain", "ports"])
        self.assertEqual(rooms["ports"]["imports"], [])

    def test_use_trees(self):
        self.assertEqual(
            shape.use_paths("crate::domain::{grab::{A, B as C}, self, *}"),
            [
                (["crate", "domain", "grab", "A"], None),
                (["crate", "domain", "grab", "B"], "C"),
                (["crate", "domain"], None),
                (["crate", "domain", "*"], None),
            ],
        )
        self.assertEqual(shape.use_paths("::redis::Value"), [(["::", "redis", "Value"], None)])


class CheckDesign(unittest.TestCase):
    def check(self, document, layout_text):
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(document)
        try:
            return shape.check_design(f.name, layout_text)
        finally:
            os.unlink(f.name)

    def test_a_matching_block_passes_a_stale_one_fails_with_a_diff(self):
        layout_text = "a -> b\nb -> -\n\ncircles between rooms: none"
        block = "intro\n\n<!-- layout:begin -->\n```text\n" + layout_text + "\n```\n<!-- layout:end -->\nafter\n"
        self.assertEqual(self.check(block, layout_text)[0], 0)
        status, diff = self.check(block.replace("b -> -", "b -> a"), layout_text)
        self.assertEqual(status, 1)
        self.assertIn("-b -> a", diff)
        self.assertIn("+b -> -", diff)
        self.assertEqual(self.check("no block here\n", layout_text)[0], 2)

    def test_the_repos_design_block_is_the_code_s_layout(self):
        with open(DESIGN) as f:
            if shape.BEGIN not in f.read():
                self.skipTest("docs/DESIGN.md has no layout block yet")
        run = subprocess.run(
            [sys.executable, os.path.join(ROOT, "scripts", "shape.py"), "--check-design", DESIGN],
            capture_output=True,
            text=True,
        )
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)


class Cli(unittest.TestCase):
    def test_json_of_the_repo(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(shape.main(["--json"]), 0)
        figures = json.loads(out.getvalue())
        self.assertEqual(figures["total_non_test_lines"], sum(f["non_test_lines"] for f in figures["files"]))
        self.assertTrue(any(f["path"] == "shared/src/lib.rs" for f in figures["files"]))


if __name__ == "__main__":
    unittest.main()
