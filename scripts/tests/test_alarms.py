"""The stack's alarms as CloudWatch takes them, checked on the SAM transform's output for every
parameter set, each alarm as that set creates it (scripts/cfn.py resolves its conditions): an
alarm on metric math reads at most ten metrics (a hard limit, "Limits that apply to alarms based
on metric math expressions", https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/alarm-limits.html),
each id its expression names is one of its metrics, and the throttling alarm reads what the
functions count (adapters/dynamo/metered.rs's DynamoThrottles) beside the table's own counts.

Every entry point pages (scripts/entry_point_alarms.py): every parameter set passes its checks,
in us-east-1 and in another Region, and each check names what loses its alarm: a function without
its throttles alarm, the operators' routes without their 5xx alarm, the console's distribution
without its 5xx error rate alarm (or with one in a Region where CloudFront's metrics are not), a
node a failover can promote that a cache alarm does not read."""

import copy
import logging
import os
import pathlib
import re
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

import cfn  # noqa: E402
import entry_point_alarms  # noqa: E402

try:  # needs samtranslator: only in .local/venv
    import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError:
    transform = None

ELSEWHERE = "eu-west-1"


def transformed():
    """{parameter set: (its transform's output, its parameters)}, as scripts/transform.py makes them."""
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = yaml_parse((ROOT / "template.yaml").read_text())
    return {
        name: (transform.transform(transform.packaged(template), parameters, transform.NoManagedPolicies()), parameters)
        for name, parameters in transform.PARAMETER_SETS.items()
    }


def stack(output, parameters, region=cfn.REGION):
    return cfn.Stack(output, {**parameters, "AWS::Region": region})


def alarms(stack_):
    """{alarm: its properties} of every alarm the stack creates, resolved."""
    return {name: stack_.properties(name) for name in stack_.created("AWS::CloudWatch::Alarm")}


def expression_text(query):
    return query.get("Expression", "")


@unittest.skipIf(transform is None, "needs .local/venv (samtranslator)")
class MetricMathAlarms(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.outputs = transformed()

    def test_each_reads_at_most_ten_metrics_and_names_only_its_own(self):
        for parameter_set, (output, parameters) in self.outputs.items():
            for name, alarm in alarms(stack(output, parameters)).items():
                queries = alarm.get("Metrics")
                if not queries:
                    continue
                with self.subTest(parameter_set=parameter_set, alarm=name):
                    stats = [query for query in queries if "MetricStat" in query]
                    self.assertLessEqual(len(stats), 10)
                    ids = {query["Id"] for query in queries}
                    returned = [query for query in queries if query.get("ReturnData")]
                    self.assertEqual(len(returned), 1)
                    for query in queries:
                        for named in re.findall(r"\b[a-z][A-Za-z0-9_]*\b", expression_text(query)):
                            if named not in ("FILL", "SUM", "IF", "MAX", "MIN"):
                                self.assertIn(named, ids, query["Expression"])

    def test_the_throttling_alarm_reads_what_the_functions_met(self):
        output, parameters = self.outputs["defaults"]
        queries = alarms(stack(output, parameters))["DynamoThrottlesAlarm"]["Metrics"]
        met = {
            query["MetricStat"]["Metric"]["Dimensions"][0]["Value"]
            for query in queries
            if "MetricStat" in query and query["MetricStat"]["Metric"]["MetricName"] == "DynamoThrottles"
        }
        self.assertEqual(met, {"send", "grab", "settle", "query"})
        expression = next(expression_text(query) for query in queries if query.get("ReturnData"))
        for query in queries:
            if "MetricStat" in query:
                self.assertIn(query["Id"], expression)


def without(output, *alarm_names):
    changed = copy.deepcopy(output)
    for name in alarm_names:
        del changed["Resources"][name]
    return changed


@unittest.skipIf(transform is None, "needs .local/venv (samtranslator)")
class EveryEntryPointPages(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.outputs = transformed()

    def problems(self, parameter_set, output=None, region=cfn.REGION):
        own, parameters = self.outputs[parameter_set]
        return entry_point_alarms.problems(stack(output or own, parameters, region))

    def test_every_parameter_set_pages_for_every_entry_point_in_us_east_1_and_elsewhere(self):
        for parameter_set in self.outputs:
            for region in (cfn.REGION, ELSEWHERE):
                with self.subTest(parameter_set=parameter_set, region=region):
                    self.assertEqual(self.problems(parameter_set, region=region), [])

    def test_a_function_without_its_throttles_alarm_is_named(self):
        for parameter_set in ("defaults", "managed-grab"):
            output, parameters = self.outputs[parameter_set]
            deployed = stack(output, parameters)
            functions = deployed.created("AWS::Lambda::Function")
            throttle_alarms = {alarm: dimensions["FunctionName"]
                               for alarm, namespace, metric, dimensions in entry_point_alarms.watched(deployed)
                               if (namespace, metric) == ("AWS/Lambda", "Throttles")}
            self.assertEqual(sorted(throttle_alarms.values()), sorted(functions))
            for alarm, function in throttle_alarms.items():
                with self.subTest(parameter_set=parameter_set, alarm=alarm):
                    self.assertEqual(self.problems(parameter_set, without(output, alarm)),
                                     [f"{function}: no alarm on its Throttles notifies the alarm topic"])

    def test_the_operators_routes_without_their_5xx_alarm_are_named(self):
        output, parameters = self.outputs["defaults"]
        routes = entry_point_alarms.operators_routes(stack(output, parameters))
        self.assertEqual(len(routes), 1, "the operators' routes are on one API")
        ((api, keys),) = routes.items()
        self.assertGreaterEqual(len(keys), 20)
        problems = self.problems("defaults", without(output, "OperatorsApi5xxAlarm"))
        self.assertEqual(len(problems), len(keys), problems)
        self.assertTrue(all(problem.startswith(f"{api}: no alarm on the 5xx of ") for problem in problems))
        # A route's own alarm covers that route alone.
        changed = without(output, "OperatorsApi5xxAlarm")
        changed["Resources"]["OneRoute5xxAlarm"] = route_alarm = copy.deepcopy(output["Resources"]["OperatorsApi5xxAlarm"])
        route_alarm["Properties"]["Dimensions"].append({"Name": "Route", "Value": keys[0]})
        self.assertEqual(len(self.problems("defaults", changed)), len(keys) - 1)

    def test_the_console_without_its_5xx_alarm_is_named_and_only_us_east_1_holds_it(self):
        output, _ = self.outputs["defaults"]
        self.assertEqual(self.problems("defaults", without(output, "Console5xxAlarm")),
                         ["ConsoleDistribution: no alarm on its 5xxErrorRate (Region Global) notifies the alarm topic"])
        self.assertEqual(self.problems("defaults", without(output, "Console5xxAlarm"), ELSEWHERE), [])
        everywhere = copy.deepcopy(output)
        del everywhere["Resources"]["Console5xxAlarm"]["Condition"]
        self.assertEqual(self.problems("defaults", everywhere, ELSEWHERE),
                         [f"ConsoleDistribution: an alarm in {ELSEWHERE} on CloudFront's metrics, which are in "
                          "us-east-1 only, would never leave OK"])

    def test_a_node_a_failover_can_promote_without_its_alarm_is_named(self):
        output, parameters = self.outputs["nodes-scope-wait"]
        nodes = entry_point_alarms.cache_nodes(stack(output, parameters), "ReplicationGroup")
        self.assertEqual(len(nodes), 6, "two shards of a primary and two replicas")
        # The alarms as they were: the first two nodes of each shard.
        first_two = copy.deepcopy(output)
        for alarm in ("CacheMemoryAlarm", "CacheTrafficManagedAlarm"):
            queries = first_two["Resources"][alarm]["Properties"]["Metrics"]
            queries[:] = [query for query in queries if "Fn::If" not in query]
            queries[0]["Expression"] = "MAX([shard1node1, shard1node2, shard2node1, shard2node2])"
        problems = self.problems("nodes-scope-wait", first_two)
        for alarm, metric in (("CacheMemoryAlarm", "DatabaseMemoryUsagePercentage"),
                              ("CacheTrafficManagedAlarm", "TrafficManagementActive")):
            for node in ("ReplicationGroup-0001-003", "ReplicationGroup-0002-003"):
                self.assertIn(f"{alarm}: no {metric} of {node}, a node a failover can promote", problems)
        self.assertEqual(len(problems), 4, problems)
        # A metric the returned expression does not read watches nothing.
        unread = copy.deepcopy(output)
        unread["Resources"]["CacheMemoryAlarm"]["Properties"]["Metrics"][0]["Expression"] = "MAX([shard1node1, shard2node1])"
        self.assertEqual(len(self.problems("nodes-scope-wait", unread)), 4)
        # A third shard, and a node the group does not have.
        wider = copy.deepcopy(output)
        wider["Resources"]["ReplicationGroup"]["Properties"]["NumNodeGroups"] = 3
        self.assertIn("CacheMemoryAlarm: no DatabaseMemoryUsagePercentage of ReplicationGroup-0003-001, a node a "
                      "failover can promote", self.problems("nodes-scope-wait", wider))
        narrower = copy.deepcopy(output)
        narrower["Resources"]["ReplicationGroup"]["Properties"]["ReplicasPerNodeGroup"] = 1
        self.assertIn("CacheTrafficManagedAlarm: TrafficManagementActive of ReplicationGroup-0002-003, which "
                      "ReplicationGroup does not have", self.problems("nodes-scope-wait", narrower))
        self.assertEqual(self.problems("nodes-scope-wait", without(output, "CacheMemoryAlarm", "CacheTrafficManagedAlarm")),
                         ["ReplicationGroup: no alarm reads its nodes' metrics"])


if __name__ == "__main__":
    unittest.main()
