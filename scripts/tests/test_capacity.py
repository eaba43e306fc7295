"""scripts/capacity.py: docs/CAPACITY.md holds the tables the committed bench figures and
template.yaml compute, the arithmetic behind them, and the model's reading of the template (each
priced function's memory is the template's, and a template change moves the model). The read
side: docs/CAPACITY.md's and docs/DEPLOY.md's read blocks are what the script computes (a note
until bench/results/reads.json exists), rendered here from a fixture reads.json of placeholder
numbers (fixtures/capacity/reads.json, never a measurement)."""

import ast
import contextlib
import copy
import io
import json
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import capacity  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
TEMPLATE = capacity.load_template(ROOT / "template.yaml")

READS_FIXTURE = Path(__file__).resolve().parent / "fixtures" / "capacity" / "reads.json"

# The bench's figures, made up: the model's reading of the template is what these tests are about.
FIGURES = {"send_wru": 10.0, "grab_wru": 5.0, "redis_us_per_grab": 1.64, "send_seconds": 0.05,
           "partition_ceiling": 900, "units_per_share": 2.0, "risk_seconds": 0.004, "risk_wru": 1.5}


def declared(template, value):
    """A parameter's Default where `value` is a Ref to one; `value` otherwise."""
    if isinstance(value, dict) and set(value) == {"Ref"}:
        return template["Parameters"][value["Ref"]]["Default"]
    return value


def declared_memory(template, logical_id):
    """The MemorySize SAM deploys the function with, read here without scripts/cfn.py: its own,
    else Globals.Function's, else Lambda's 128 MB; a Ref is its parameter's Default."""
    own = template["Resources"][logical_id]["Properties"]
    globals_ = template.get("Globals", {}).get("Function", {})
    value = own.get("MemorySize", globals_.get("MemorySize", 128))
    return int(declared(template, value))


def declared_architecture(template, logical_id):
    own = template["Resources"][logical_id]["Properties"]
    value = own.get("Architectures", template.get("Globals", {}).get("Function", {}).get("Architectures", ["x86_64"]))
    return value[0]


def functions_with_route(template, method, path):
    """Every function (created or not) with an HttpApi event on the route."""
    found = []
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for event in resource["Properties"].get("Events", {}).values():
            properties = event.get("Properties", {})
            if event["Type"] == "HttpApi" and (properties.get("Method"), properties.get("Path")) == (method, path):
                found.append(logical_id)
    return found


class CapacityTables(unittest.TestCase):
    def test_capacity_md_holds_what_the_committed_figures_and_the_template_compute(self):
        document = (ROOT / "docs" / "CAPACITY.md").read_text()
        deployment = capacity.load_deployment(ROOT / "template.yaml")
        expected = capacity.replaced(document, capacity.tables(capacity.load_figures(ROOT, deployment), deployment))
        self.assertEqual(document, expected, "run: python3 scripts/capacity.py --write docs/CAPACITY.md")

    def test_loads_follow_the_rates(self):
        deployment = capacity.load_deployment(ROOT / "template.yaml")
        load = capacity.loads(FIGURES, deployment, sends=100, grabs=1_000)
        self.assertEqual(load["dynamodb_table"], 100 * 10 + 1_000 * (5 + 1.5), "the risk function's writes included")
        self.assertAlmostEqual(load["ecpu_slot"], 1_000 * 1.64 / capacity.ASSUMPTIONS["engine_us_per_ecpu"])
        self.assertAlmostEqual(load["lambda"], 1_000 * capacity.ASSUMPTIONS["grab_seconds"] + 100 * 0.05 + 1_000 * 0.004)
        self.assertEqual(load["dynamodb_partition"], deployment["settle_partition_write_units"],
                         "the partition gets settle's pace, whatever the rate")
        doubled = capacity.loads(FIGURES, deployment, sends=200, grabs=2_000)
        self.assertAlmostEqual(capacity.cost_per_hour(FIGURES, deployment, 200, 2_000),
                               2 * capacity.cost_per_hour(FIGURES, deployment, 100, 1_000))
        self.assertAlmostEqual(doubled["api"], 2 * load["api"])


class TheTemplateIsTheSource(unittest.TestCase):
    """The model reads what template.yaml declares, so the two cannot drift apart (issue 51)."""

    def setUp(self):
        self.deployment = capacity.load_deployment(template=copy.deepcopy(TEMPLATE))

    def test_each_priced_function_has_the_templates_memory_and_architecture(self):
        functions = self.deployment["functions"]
        self.assertEqual(set(functions), {"send", "grab", "risk"})
        for role, function in functions.items():
            logical_id = function["logical_id"]
            self.assertEqual(function["memory_mb"], declared_memory(TEMPLATE, logical_id), f"{role}: {logical_id}")
            self.assertEqual(function["gb"], declared_memory(TEMPLATE, logical_id) / 1024, role)
            self.assertEqual(function["architecture"], declared_architecture(TEMPLATE, logical_id), role)
            self.assertEqual(function["gb_second_price"], capacity.PRICES["lambda_gb_second"][function["architecture"]])

    def test_the_priced_functions_are_the_routes_and_the_grab_events(self):
        functions = self.deployment["functions"]
        self.assertEqual(functions_with_route(TEMPLATE, "POST", "/packets"), [functions["send"]["logical_id"]])
        grab = functions_with_route(TEMPLATE, "POST", "/packets/{packet_id}/grab")
        self.assertIn(functions["grab"]["logical_id"], grab)
        compute = TEMPLATE["Parameters"]["GrabCompute"]["Default"]
        self.assertEqual(self.deployment["parameters"]["GrabCompute"], compute,
                         "the grab function is the one GrabCompute's default creates")
        risk = TEMPLATE["Resources"][functions["risk"]["logical_id"]]["Properties"]["Events"]
        self.assertTrue(any(capacity.GRAB_EVENT in e["Properties"]["Pattern"]["detail-type"] for e in risk.values()))

    def test_the_1x_level_is_the_templates_throttles(self):
        parameters = TEMPLATE["Parameters"]
        send, grab = parameters["ApiRateLimit"]["Default"], parameters["GrabRateLimit"]["Default"]
        self.assertEqual((self.deployment["send_rate"], self.deployment["grab_rate"]), (send, grab))
        self.assertEqual(capacity.levels(self.deployment)[:3], [
            ("1x (the template's throttles)", send, grab), ("10x", 10 * send, 10 * grab), ("100x", 100 * send, 100 * grab)])

    def test_the_rest_is_the_templates_too(self):
        resources, parameters = TEMPLATE["Resources"], TEMPLATE["Parameters"]
        d = self.deployment
        self.assertEqual(d["billing_mode"], resources[d["table"]]["Properties"]["BillingMode"])
        self.assertEqual(d["cache_engine"], resources[d["cache"]]["Properties"]["Engine"])
        self.assertEqual(d["funds"], parameters["Funds"]["Default"])
        self.assertEqual(d["user_grab_limit"], parameters["UserGrabLimit"]["Default"])
        settle = resources[d["settle_function"]]["Properties"]["Environment"]["Variables"]
        self.assertEqual(d["settle_partition_write_units"], int(settle["SETTLE_PARTITION_WRITE_UNITS"]))
        batch = resources[d["pipe"]]["Properties"]["SourceParameters"]["DynamoDBStreamParameters"]["BatchSize"]
        self.assertEqual(d["events_per_request"], min(batch, 10))

    def test_a_template_change_moves_the_model(self):
        changed = copy.deepcopy(TEMPLATE)
        send = self.deployment["functions"]["send"]["logical_id"]
        grab = self.deployment["functions"]["grab"]["logical_id"]
        send_own = changed["Resources"][send]["Properties"]
        # The send function's memory, wherever the template declares it today.
        if "MemorySize" in send_own:
            send_own["MemorySize"] = 3008
        else:
            changed["Globals"]["Function"]["MemorySize"] = 3008
        # The grab function's as a parameter: a Ref resolves to its Default.
        changed["Parameters"]["CapacityTestGrabMemory"] = {"Type": "Number", "Default": 1536}
        changed["Resources"][grab]["Properties"]["MemorySize"] = {"Ref": "CapacityTestGrabMemory"}
        changed["Parameters"]["ApiRateLimit"]["Default"] = 450
        changed["Parameters"]["GrabRateLimit"]["Default"] = 2_500
        changed["Parameters"]["UserGrabLimit"]["Default"] = 0
        settle = self.deployment["settle_function"]
        changed["Resources"][settle]["Properties"]["Environment"]["Variables"]["SETTLE_PARTITION_WRITE_UNITS"] = "800"
        pipe = self.deployment["pipe"]
        changed["Resources"][pipe]["Properties"]["SourceParameters"]["DynamoDBStreamParameters"]["BatchSize"] = 5

        moved = capacity.load_deployment(template=changed)
        self.assertEqual(moved["functions"]["send"]["memory_mb"], 3008)
        self.assertEqual(moved["functions"]["grab"]["memory_mb"], 1536)
        self.assertIn("!Ref CapacityTestGrabMemory (default 1536)", moved["functions"]["grab"]["memory_from"])
        self.assertEqual(moved["parameters"]["CapacityTestGrabMemory"], "1536")
        self.assertEqual(capacity.levels(moved)[0][1:], (450, 2_500))
        load = capacity.loads(FIGURES, moved, sends=100, grabs=1_000)
        self.assertEqual(load["dynamodb_partition"], 800)
        self.assertAlmostEqual(load["putevents"], (100 * 3 + 1_000) / 5)
        self.assertAlmostEqual(load["ecpu_cache"], load["ecpu_slot"], msg="UserGrabLimit 0: no rate ECPUs")

        # Sends alone: the cost moves by the send's duration at the new memory, and by nothing else.
        before = capacity.cost_per_hour(FIGURES, self.deployment, 1_000, 0)
        after = capacity.cost_per_hour(FIGURES, moved, 1_000, 0)
        price = self.deployment["functions"]["send"]["gb_second_price"]
        memory = self.deployment["functions"]["send"]["memory_mb"]
        self.assertAlmostEqual(after - before, 1_000 * 0.05 * (3008 - memory) / 1024 * price * 3600)
        block = capacity.tables(FIGURES, moved)
        self.assertIn("at 3,008 MB", block)
        self.assertIn("| 1x (the template's throttles) | 450 | 2,500 |", block)

    def test_a_stack_the_model_cannot_price_is_refused(self):
        for overrides in ({"GrabCompute": "managed-instances"}, {"CacheMode": "nodes"}):
            with self.assertRaises(capacity.TemplateError, msg=str(overrides)):
                capacity.load_deployment(template=copy.deepcopy(TEMPLATE), overrides=overrides)
        provisioned = copy.deepcopy(TEMPLATE)
        provisioned["Resources"][self.deployment["table"]]["Properties"]["BillingMode"] = "PROVISIONED"
        with self.assertRaises(capacity.TemplateError):
            capacity.load_deployment(template=provisioned)

    def test_capacity_py_hard_codes_no_figure_the_template_declares(self):
        """No literal in capacity.py is a memory size the template declares (in MB, or in GB outside
        the price list), nor a throttle, the grab rate's limit or settle's pace: those are read."""
        memories = {declared_memory(TEMPLATE, name) for name, r in TEMPLATE["Resources"].items()
                    if r["Type"] == "AWS::Serverless::Function"}
        parameters = TEMPLATE["Parameters"]
        forbidden_ints = memories | {int(parameters[name]["Default"]) for name in ("ApiRateLimit", "GrabRateLimit", "UserGrabLimit")}
        forbidden_ints.add(self.deployment["settle_partition_write_units"])
        forbidden_floats = {memory / 1024 for memory in memories}
        tree = ast.parse((ROOT / "scripts" / "capacity.py").read_text())
        allowed = set()  # the nodes of the GB's MB and of the prices (dollars, where 1.00 is a price)
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in ("MB_PER_GB", "PRICES") for t in node.targets):
                allowed |= {id(n) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in allowed or not isinstance(node, ast.Constant) or isinstance(node.value, bool):
                continue
            if isinstance(node.value, int):
                self.assertNotIn(node.value, forbidden_ints, f"capacity.py line {node.lineno}: a figure template.yaml declares")
            if isinstance(node.value, float):
                self.assertNotIn(node.value, forbidden_floats, f"capacity.py line {node.lineno}: a memory size in GB")
        for key in capacity.ASSUMPTIONS:
            self.assertFalse(key.endswith("_gb") or "memory" in key, f"ASSUMPTIONS[{key!r}]: memory is the template's")


# --- The read side of a campaign.

# How clients poll, fixed here so the arithmetic below does not move with docs/CLIENTS.md.
POLLING = {"shared": 2.5, "shared_from": "a test", "sdk": None, "schedule": [1, 2, 4, 8, 15, 15, 15]}


def fixture_reads():
    """The fixture, loaded as scripts/capacity.py loads bench/results/reads.json."""
    with tempfile.TemporaryDirectory() as root:
        results = Path(root) / "bench" / "results"
        results.mkdir(parents=True)
        shutil.copy(READS_FIXTURE, results / "reads.json")
        return capacity.load_reads(Path(root))


def fixture_row(shares, state, answer):
    rows = json.loads(READS_FIXTURE.read_text())["packets"]
    return next(r for r in rows if (r["shares"], r["state"], r["answer"]) == (shares, state, answer))


def shared_behaviors(template):
    """(distribution, behaviour) of every CacheBehaviors entry whose PathPattern is the shared view's."""
    found = []
    for name, resource in template["Resources"].items():
        if resource["Type"] != "AWS::CloudFront::Distribution":
            continue
        for behavior in resource["Properties"]["DistributionConfig"].get("CacheBehaviors", []):
            if behavior.get("PathPattern") == "/packets/*/shared":
                found.append((name, behavior))
    return found


class TheReadSideInTheDocs(unittest.TestCase):
    def test_the_docs_hold_what_the_script_computes(self):
        """CAPACITY.md's two blocks and DEPLOY.md's polls block: the read side's a note until
        `make bench-reads` wrote bench/results/reads.json, its tables after."""
        deployment = capacity.load_deployment(ROOT / "template.yaml")
        generated = capacity.blocks(ROOT, deployment)
        for name, markers in (("CAPACITY.md", (capacity.BEGIN, capacity.READS_BEGIN)), ("DEPLOY.md", (capacity.POLLS_BEGIN,))):
            document = (ROOT / "docs" / name).read_text()
            for begin in markers:
                self.assertIn(begin, document, f"docs/{name}")
            self.assertEqual(document, capacity.rendered(document, generated),
                             "run: python3 scripts/capacity.py --write docs/CAPACITY.md docs/DEPLOY.md")

    def test_without_reads_json_the_markers_hold_the_note(self):
        with tempfile.TemporaryDirectory() as root:
            self.assertIsNone(capacity.load_reads(Path(root)))
            self.assertEqual(capacity.read_blocks(Path(root)), (capacity.NOT_MEASURED, capacity.NOT_MEASURED))
        self.assertIn("make bench-reads", capacity.NOT_MEASURED)
        self.assertEqual(capacity.NOT_MEASURED.count("\n"), 1, "one line")
        text = f"a\n{capacity.READS_BEGIN}\nold\n{capacity.READS_END}\nb\n"
        generated = {(capacity.READS_BEGIN, capacity.READS_END): capacity.NOT_MEASURED}
        self.assertEqual(capacity.rendered(text, generated),
                         f"a\n{capacity.READS_BEGIN}\n{capacity.NOT_MEASURED}{capacity.READS_END}\nb\n")

    def test_write_then_check(self):
        """`--write` puts every block its markers ask for in each file; `--check` then passes, and
        fails once a block is edited by hand."""
        with tempfile.TemporaryDirectory() as directory:
            paths = []
            for name in ("CAPACITY.md", "DEPLOY.md"):
                path = Path(directory) / name
                text = (ROOT / "docs" / name).read_text()
                for begin, end in ((capacity.BEGIN, capacity.END), (capacity.READS_BEGIN, capacity.READS_END),
                                   (capacity.POLLS_BEGIN, capacity.POLLS_END)):
                    if begin in text:
                        text = capacity.replaced(text, "stale\n", begin, end)
                path.write_text(text)
                paths.append(str(path))
            bare = Path(directory) / "bare.md"
            bare.write_text("no markers\n")
            with contextlib.redirect_stdout(io.StringIO()) as said:
                self.assertEqual(capacity.main(["capacity.py", "--check", *paths]), 1)
                self.assertEqual(capacity.main(["capacity.py", "--write", *paths]), 0)
                self.assertEqual(capacity.main(["capacity.py", "--check", *paths]), 0)
                self.assertEqual(capacity.main(["capacity.py", "--write", str(bare)]), 1)
            self.assertIn("--write docs/CAPACITY.md docs/DEPLOY.md", said.getvalue())
            self.assertIn("bare.md: no capacity markers", said.getvalue())
            for path, name in zip(paths, ("CAPACITY.md", "DEPLOY.md")):
                self.assertEqual(Path(path).read_text(), (ROOT / "docs" / name).read_text())


class TheReadSideFromAFixture(unittest.TestCase):
    """The read side rendered from fixtures/capacity/reads.json (placeholders), the template and
    a fixed poll schedule."""

    @classmethod
    def setUpClass(cls):
        cls.reads = fixture_reads()
        cls.deployment = capacity.load_deployment(template=copy.deepcopy(TEMPLATE))
        cls.rd = capacity.load_read_deployment(template=copy.deepcopy(TEMPLATE))
        cls.c = capacity.read_campaign(cls.reads, POLLING, cls.deployment, cls.rd)

    def test_the_fixture_loads(self):
        self.assertEqual(self.reads["sizes"], [1_000, 100_000])
        self.assertEqual(self.c["shares"], 100_000, "the campaign packet is the largest measured")
        self.assertEqual(self.c["window"], 100_000 / self.deployment["grab_rate"])
        self.assertEqual(self.c["per_edge"], 0.6, "the flood's 0.6/s, above one per max-age of 2 s")
        self.assertEqual([packets for _, packets in self.c["levels"]], [1, 10, 100, 7_600_000 / self.deployment["grab_rate"]])

    def test_a_reads_json_of_another_shape_is_refused(self):
        original = json.loads(READS_FIXTURE.read_text())
        broken = [
            {**original, "packets": original["packets"][1:]},  # a row missing
            {**original, "packets": [r for r in original["packets"] if r["shares"] == 1_000]},  # one size
            {**original, "flood": None},
            {**original, "packets": original["packets"] + original["packets"][:1]},  # a row twice
        ]
        for reads in broken:
            with tempfile.TemporaryDirectory() as root:
                results = Path(root) / "bench" / "results"
                results.mkdir(parents=True)
                (results / "reads.json").write_text(json.dumps(reads))
                with self.assertRaises(capacity.ReadsError):
                    capacity.load_reads(Path(root))

    def test_an_open_hour_without_the_edge(self):
        """Every poll reaches API Gateway + Lambda; pages while the packet is grabbed (the first poll
        and half the grabbing's), 304s after; computed here from the fixture's rows."""
        h = capacity.read_hour(self.c, "open", "none", 1)
        page, unchanged = fixture_row(100_000, "open", "page"), fixture_row(100_000, "open", "not_modified")
        viewers, interval = 100_000, POLLING["shared"]
        polls = viewers * 3600 / interval
        pages = viewers * (1 + self.c["window"] / interval / 2)
        self.assertEqual((h["polls"], h["origin"], h["pages"]), (polls, polls, pages))
        function, p = self.rd["function"], capacity.PRICES
        seconds = lambda row: max(row["p50_ms"] / 1000, capacity.ASSUMPTIONS["grab_seconds"])  # noqa: E731
        ecpu = pages * (page["redis_commands"] + page["bytes"] / 1024 - 1) + (polls - pages) * unchanged["redis_commands"]
        self.assertAlmostEqual(h["ecpu"], ecpu)
        expected = (
            polls * (p["api_per_million"]["AWS::Serverless::HttpApi"] + p["lambda_per_million"]) / 1e6
            + (pages * seconds(page) + (polls - pages) * seconds(unchanged)) * function["gb"] * function["gb_second_price"]
            + ecpu * p["ecpu_per_million"]["valkey"] / 1e6
            + (pages * page["bytes"] + (polls - pages) * unchanged["bytes"]) / 2 ** 30 * p["internet_per_gb"]
        )
        self.assertAlmostEqual(h["total"], expected)
        self.assertEqual(h["cost"]["CloudFront requests"], 0)

    def test_the_edge_takes_one_revalidation_per_location_per_max_age(self):
        edges, per_edge = capacity.ASSUMPTIONS["edge_locations"], 0.6
        edge, shield = (capacity.read_hour(self.c, "open", path, 1) for path in ("edge", "shield"))
        self.assertEqual(edge["origin"], edges * per_edge * 3600)
        self.assertEqual(edge["origin_pages"], edges * (1 + per_edge * self.c["window"]))
        self.assertEqual(edge["cloudfront_requests"], edge["polls"])
        self.assertAlmostEqual(shield["origin"], per_edge * 3600)
        self.assertEqual(shield["shield_requests"], edge["origin"], "every location asks the shield")
        settled = {path: capacity.read_hour(self.c, "settled", path, 1) for path in capacity.READ_PATHS}
        self.assertEqual([settled[path]["origin"] for path in ("none", "edge", "shield")], [100_000, edges, 1])
        self.assertEqual(settled["none"]["rru"], 100_000 * fixture_row(100_000, "settled", "page")["dynamodb_read_units"])
        self.assertEqual(settled["shield"]["shield_requests"], edges)
        for path in capacity.READ_PATHS:
            self.assertEqual(settled[path]["polls"], 100_000, "each viewer's last poll: CLIENTS.md stops there")

    def test_the_levels_scale_the_hour(self):
        for state in capacity.READ_STATES:
            for path in capacity.READ_PATHS:
                one, ten = (capacity.read_hour(self.c, state, path, packets) for packets in (1, 10))
                self.assertAlmostEqual(ten["total"], 10 * one["total"], msg=f"{state} {path}")
                self.assertAlmostEqual(ten["polls"], 10 * one["polls"])

    def test_the_busiest_seconds(self):
        viewers, interval = 100_000, POLLING["shared"]
        settled = capacity.read_burst(self.c, "settled", "none", 1)
        rru = fixture_row(100_000, "settled", "page")["dynamodb_read_units"]
        self.assertAlmostEqual(settled["dynamodb_partition_reads"], viewers / interval * rru)
        self.assertEqual(settled["route_private"], 0, "the history's and wallet's polls follow the grabs")
        open_ = capacity.read_burst(self.c, "open", "none", 1)
        schedule = POLLING["schedule"]
        self.assertAlmostEqual(open_["route_private"], viewers * len(schedule) / sum(schedule))
        self.assertAlmostEqual(open_["api"], viewers / interval + 2 * open_["route_private"])
        edge = capacity.read_burst(self.c, "open", "edge", 1)
        self.assertAlmostEqual(edge["route_shared"], capacity.ASSUMPTIONS["edge_locations"] * 0.6)
        self.assertAlmostEqual(edge["cloudfront_requests"], viewers / interval)
        limits = capacity.read_limits(self.c)
        self.assertEqual(limits["route_shared"][1], self.rd["shared_rate"])
        self.assertEqual(limits["dynamodb_partition_reads"][1], 3_000)
        ranked = capacity.read_binding(self.c, "none", 1)
        self.assertEqual(ranked[0][1], max(share for _, share in ranked))

    def test_the_section_renders(self):
        section = capacity.read_section(self.c)
        self.assertNotIn(capacity.NOT_MEASURED.strip(), section)
        self.assertIn("commit abc1234", section)
        self.assertIn("| 100,000 shares | open | page | 2 | 0 | 110,000 | 2.0 | 4.4 | 200 |", section)
        self.assertIn("| 1,000 shares | settled | 304 | 1 | 0 | 0 | 0.4 | 1.0 | 200 |", section)
        self.assertIn("| 100,000 ÷ 1,000 | open | page | 1.00x | - | 1.00x | 1.05x | 1.10x | |", section)
        self.assertIn("| 100,000 ÷ 1,000 | settled | page | 1.00x | 1.00x | 1.00x | 1.00x | 1.10x | |", section)
        self.assertIn("every 2.5 s, as a test recommends", section)
        self.assertIn(f"each of its {capacity.ASSUMPTIONS['edge_locations']:,} edge locations", section)
        self.assertIn(capacity.EDGE_SOURCE, section)
        for source in capacity.PRICE_SOURCES.values():
            self.assertIn(source, section)
        for key, (_, _, _, source) in capacity.READ_LIMITS.items():
            self.assertIn(source, section, key)
        for name, packets in self.c["levels"]:
            viewers = f"{capacity.count(packets * 100_000)} ({capacity.count(packets)})"
            for label in capacity.READ_PATHS.values():
                rows = sum(section.count(f"| {name} | {viewers} | {label}{mark} |") for mark in ("", " (the template's)"))
                self.assertEqual(rows, 2, f"{name} {label}: open and settled")
        self.assertIn("| 1x (the template's throttles) | 100,000 (1) | CloudFront (the template's) |", section)
        hour = capacity.read_hour(self.c, "open", "edge", 1)
        self.assertIn(f"| {capacity.money(hour['total'])} | {capacity.money(hour['total'] / hour['polls'] * 1e6)} |", section)
        self.assertIn("**What binds first on the read side**", section)

    def test_the_polls_table_renders(self):
        table = capacity.polls_table(self.c)
        self.assertIn("| part | per million polls, open | per million last polls, settled | how |", table)
        hours = {state: capacity.read_hour(self.c, state, "edge", 1) for state in capacity.READ_STATES}
        total = {state: capacity.money(h["total"] / h["polls"] * 1e6) for state, h in hours.items()}
        self.assertIn(f"| **total** | **~{total['open']}** | **~{total['settled']}** | the template's path: CloudFront |", table)
        self.assertIn("| without the edge cache |", table)
        self.assertNotIn("Origin Shield requests", table, "the template's origin has no Origin Shield")
        self.assertIn("| a history or wallet poll (private, never cached) |", table)

    def test_money_and_counts(self):
        self.assertEqual(capacity.money(0), "$0")
        self.assertEqual(capacity.money(1234.5), "$1,234.50")
        self.assertEqual(capacity.money(0.0023), "$0.0023")
        self.assertEqual(capacity.money(0.25), "$0.25")
        self.assertEqual(capacity.count(1_296_000.0), "1,296,000")
        self.assertEqual(capacity.count(10.0), "10")
        self.assertEqual(capacity.count(51.2), "51.2")
        self.assertEqual(capacity.count(0.004), "0.004")


class TheReadSideReadsTheTemplateAndClients(unittest.TestCase):
    def test_the_read_routes_and_their_function(self):
        rd = capacity.load_read_deployment(template=copy.deepcopy(TEMPLATE))
        route = rd["shared_route"]
        served = functions_with_route(TEMPLATE, *route)
        self.assertIn(rd["function"]["logical_id"], served)
        self.assertEqual(rd["function"]["memory_mb"], declared_memory(TEMPLATE, rd["function"]["logical_id"]))
        for private in capacity.PRIVATE_ROUTES:
            self.assertIn(rd["private"][private]["function"]["logical_id"], functions_with_route(TEMPLATE, *private))
        self.assertEqual(rd["shared_rate"], TEMPLATE["Parameters"]["ApiRateLimit"]["Default"],
                         "the API's default route throttle")

    def test_before_the_shared_route_the_packet_views_function_stands_for_it(self):
        template = copy.deepcopy(TEMPLATE)
        for resource in template["Resources"].values():
            if resource["Type"] == "AWS::Serverless::Function":
                events = resource["Properties"].get("Events", {})
                for name in [n for n, e in events.items() if e.get("Properties", {}).get("Path") == capacity.SHARED_ROUTE[1]]:
                    del events[name]
        rd = capacity.load_read_deployment(template=template)
        self.assertEqual(rd["shared_route"], capacity.PACKET_ROUTE)
        self.assertFalse(rd["shared_route_declared"])
        self.assertIn("declares no GET /packets/{packet_id}/shared yet", capacity._template_edge_sentence(rd))

    def test_the_edge_is_the_templates(self):
        behaviors = shared_behaviors(TEMPLATE)
        rd = capacity.load_read_deployment(template=copy.deepcopy(TEMPLATE))
        if not behaviors:
            self.assertIsNone(rd["edge"])
            self.skipTest("template.yaml has no CloudFront behaviour for /packets/*/shared")
        distribution, behavior = behaviors[0]
        self.assertEqual(rd["edge"]["distribution"], distribution)
        self.assertEqual(rd["edge"]["compress"], bool(behavior.get("Compress")))

        shielded = copy.deepcopy(TEMPLATE)
        _, behavior = shared_behaviors(shielded)[0]
        config = shielded["Resources"][distribution]["Properties"]["DistributionConfig"]
        origin = next(o for o in config["Origins"] if o["Id"] == behavior["TargetOriginId"])
        origin["OriginShield"] = {"Enabled": True, "OriginShieldRegion": "us-east-1"}
        self.assertTrue(capacity.load_read_deployment(template=shielded)["edge"]["origin_shield"])
        self.assertEqual(capacity._path_of_template(capacity.load_read_deployment(template=shielded)), "shield")

        bare = copy.deepcopy(TEMPLATE)
        config = bare["Resources"][distribution]["Properties"]["DistributionConfig"]
        config["CacheBehaviors"] = [b for b in config["CacheBehaviors"] if b.get("PathPattern") != "/packets/*/shared"]
        rd = capacity.load_read_deployment(template=bare)
        self.assertIsNone(rd["edge"])
        self.assertEqual(capacity._path_of_template(rd), "none")

    def test_polling_is_read_from_clients_md_and_the_sdk(self):
        polling = capacity.load_polling(ROOT)
        self.assertTrue(polling["schedule"] and all(isinstance(d, int) and d > 0 for d in polling["schedule"]))
        self.assertGreater(polling["shared"], 0)
        loop = "for delay in [1, 2, 4, 8, 15, 15, 15]:\n"
        with tempfile.TemporaryDirectory() as directory:
            root = Path(directory)
            (root / "docs").mkdir()
            clients = root / "docs" / "CLIENTS.md"
            shared = "\n## Reading a packet: the shared view polled\n\nPoll it (the app polls every 3 s).\n"
            clients.write_text("# Clients\n\n## Polling for history\n\nthe app polls every 9 s\n" + loop + shared)
            self.assertEqual(capacity.load_polling(root)["shared"], 3.0, "the shared view's section's")
            self.assertEqual(capacity.load_polling(root)["schedule"], [1, 2, 4, 8, 15, 15, 15])
            clients.write_text(loop)
            with self.assertRaises(capacity.ReadsError):
                capacity.load_polling(root)  # no shared interval anywhere
            (root / "sdk" / "src").mkdir(parents=True)
            (root / "sdk" / "src" / "watch.ts").write_text("const intervalMs = options.intervalMs ?? 2_500;\n")
            self.assertEqual(capacity.load_polling(root)["shared"], 2.5)
            clients.write_text("no loop here" + shared)
            with self.assertRaises(capacity.ReadsError):
                capacity.load_polling(root)


if __name__ == "__main__":
    unittest.main()
