"""scripts/capacity.py: docs/CAPACITY.md holds the tables the committed bench figures and
template.yaml compute, the arithmetic behind them, and the model's reading of the template (each
priced function's memory is the template's, and a template change moves the model)."""

import ast
import copy
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import capacity  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
TEMPLATE = capacity.load_template(ROOT / "template.yaml")

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


if __name__ == "__main__":
    unittest.main()
