"""make preflight's comparison, on AWS CLI answers recorded in the shapes the CLI documents
(fixtures/preflight/<scenario>/<command>.json; a scenario's files over default/'s).

Run: python -m unittest discover -s scripts/tests
"""

import contextlib
import io
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import preflight  # noqa: E402

FIXTURES = os.path.join(HERE, "fixtures", "preflight")

with open(os.path.join(ROOT, "template.yaml")) as f:
    TEMPLATE = f.read()
with open(os.path.join(ROOT, "samconfig.toml")) as f:
    SAMCONFIG = f.read()


def answers(*scenarios):
    """The default account's answers, each scenario's over them."""
    return preflight.RecordedAnswers(*[os.path.join(FIXTURES, s) for s in ("default",) + scenarios])


def run(*scenarios, overrides=(), template=TEMPLATE):
    """(checks, printed lines, exit status) for the parameters make deploy would use."""
    params = preflight.deployed_parameters(template, SAMCONFIG, list(overrides))
    checks = preflight.compare(params, template, preflight.gather(answers(*scenarios), params))
    lines, status = preflight.render(checks)
    return checks, lines, status


def raised(checks, kind=None):
    return [c for c in checks if c.status == "raise" and (kind is None or c.kind == kind)]


class TemplateDefaults(unittest.TestCase):
    def test_defaults_fit_a_new_account(self):
        # A new account: Lambda concurrency 10. Nothing the defaults ask is refused; the campaign
        # line says what to raise, and it is Lambda's concurrency.
        checks, lines, status = run("new-account")
        self.assertEqual(status, 0, "\n".join(lines))
        self.assertEqual(raised(checks, preflight.DEPLOY), [])
        campaign = raised(checks, preflight.CAMPAIGN)
        self.assertEqual([c.quota for c in campaign], ["lambda L-B99A9384"])
        # grab 5,000/s x 10 ms = 50, eight other routes (withdrawals 100/s, the limits 100/s, six at
        # ApiRateLimit 800/s) 5,000/s x 100 ms = 500, settle 2, funds 1.
        self.assertEqual('first:   raise lambda L-B99A9384 "Concurrent executions" from 10 to 553', lines[-1])

    def test_defaults_pass_on_a_default_account(self):
        checks, lines, status = run()
        self.assertEqual(status, 0, "\n".join(lines))
        self.assertEqual([c for c in checks if c.status != "ok"], [], "\n".join(lines))
        self.assertEqual(lines[-1], "first:   nothing to raise")

    def test_defaults_reserve_nothing(self):
        params = preflight.deployed_parameters(TEMPLATE, SAMCONFIG, [])
        self.assertEqual(preflight.reservations(TEMPLATE, params), {})

    def test_grab_burst_default_within_the_documented_account_burst(self):
        defaults = preflight.template_defaults(TEMPLATE)
        limits = preflight.throttle_limits(TEMPLATE, defaults)
        self.assertEqual({name for _, _, name in limits}, {"GrabRateLimit", "GrabBurstLimit", "WithdrawRateLimit",
                                                           "WithdrawBurstLimit", "ApiRateLimit", "ApiBurstLimit",
                                                           'RouteSettings "GET /me/limits" ThrottlingRateLimit',
                                                           'RouteSettings "GET /me/limits" ThrottlingBurstLimit'})
        for kind, value, name in limits:
            self.assertLessEqual(value, 5000 if kind == "burst" else 10000, name)
        # Every route at its own rate: 5,000 + 100 + 100 + 6 x 800, within the documented 10,000.
        total, parts = preflight.rate_sum(preflight.route_throttles(TEMPLATE, defaults))
        self.assertEqual(total, 10000, parts)
        self.assertLessEqual(total, 10000)

    def test_every_parameter_preflight_reads_is_in_the_template(self):
        defaults = preflight.template_defaults(TEMPLATE)
        with open(os.path.join(ROOT, "scripts", "preflight.py")) as f:
            source = f.read()
        for name in set(re.findall(r'p(?:arams)?\[["\']([A-Za-z]+)["\']\]', source)) | {
                "SettleReservedConcurrency", "GrabReservedConcurrency", "QueryReservedConcurrency",
                "SendReservedConcurrency", "Stage", "CacheMode", "Funds", "GrabCompute"}:
            self.assertIn(name, defaults)


class LambdaConcurrency(unittest.TestCase):
    def test_new_account_with_a_settle_reservation_is_refused(self):
        checks, lines, status = run("new-account", overrides=["SettleReservedConcurrency=2"])
        self.assertEqual(status, 1)
        blocked = raised(checks, preflight.DEPLOY)
        self.assertEqual([(c.quota, c.have, c.need) for c in blocked], [("lambda L-B99A9384", 10, 102)])
        self.assertIn("SettleReservedConcurrency=2", lines[1])
        self.assertTrue(lines[1].startswith("raise    deploy   Lambda concurrent executions [lambda L-B99A9384] from 10 to 102"))
        self.assertIn("(102 for the deploy to be accepted)", lines[-1])

    def test_the_old_hard_coded_settle_reservation_is_refused_on_a_new_account(self):
        # Today's template before this change: ReservedConcurrentExecutions: 2 on settle.
        old = re.sub(r"ReservedConcurrentExecutions: !If \[SettleReserved, [^\]]*\]", "ReservedConcurrentExecutions: 2", TEMPLATE)
        self.assertNotEqual(old, TEMPLATE)
        checks, _, status = run("new-account", template=old)
        self.assertEqual(status, 1)
        self.assertEqual(raised(checks, preflight.DEPLOY)[0].why.split(" reserved")[0], "SettleFunction=2")

    def test_reservations_on_a_default_account_pass(self):
        overrides = ["SettleReservedConcurrency=3", "GrabReservedConcurrency=200", "SendReservedConcurrency=20",
                     "QueryReservedConcurrency=50"]
        checks, lines, status = run(overrides=overrides)
        self.assertEqual(status, 0, "\n".join(lines))
        deploy = [c for c in checks if c.quota == "lambda L-B99A9384" and c.kind == preflight.DEPLOY][0]
        self.assertEqual(deploy.need, 100 + 273)

    def test_reservations_elsewhere_in_the_account_count(self):
        # 899 of 1,000 reserved by other functions: reserving 2 more leaves 99 unreserved.
        checks, _, status = run("reserved-elsewhere", overrides=["SendReservedConcurrency=2"])
        self.assertEqual(status, 1)
        blocked = raised(checks, preflight.DEPLOY)[0]
        self.assertEqual((blocked.have, blocked.need), (1000, 1001))
        self.assertIn("899 by other functions", blocked.why)

    def test_grab_reservation_does_not_count_on_managed_instances(self):
        params = preflight.deployed_parameters(TEMPLATE, SAMCONFIG, ["GrabCompute=managed-instances", "GrabReservedConcurrency=50"])
        self.assertEqual(preflight.reservations(TEMPLATE, params), {})
        params = preflight.deployed_parameters(TEMPLATE, SAMCONFIG, ["GrabReservedConcurrency=50"])
        self.assertEqual(preflight.reservations(TEMPLATE, params), {"GrabFunction": (50, "GrabReservedConcurrency")})


class ApiGateway(unittest.TestCase):
    def test_grab_burst_above_the_account_burst_is_refused(self):
        # The template's old default, 10,000, on a default account (burst 5,000).
        checks, lines, status = run(overrides=["GrabBurstLimit=10000"])
        self.assertEqual(status, 1)
        blocked = raised(checks, preflight.DEPLOY)
        self.assertEqual(len(blocked), 1)
        self.assertIn("GrabBurstLimit=10,000", blocked[0].why)
        self.assertIn("lower GrabBurstLimit to 5,000", lines[1])
        self.assertEqual(lines[-1], "first:   API Gateway account burst: " + blocked[0].remedy)

    def test_a_low_default_region_needs_the_rate_quota_raised(self):
        # Regions whose default is 2,500 requests/s and a burst of 1,250.
        checks, lines, status = run("low-default-region")
        self.assertEqual(status, 1)
        self.assertEqual(sorted(c.why.split(":")[0] for c in raised(checks, preflight.DEPLOY)),
                         ["ApiBurstLimit=2,000", "GrabBurstLimit=5,000", "GrabRateLimit=5,000"])
        self.assertEqual(lines[-1], 'first:   raise apigateway L-8A5B8E43 "Throttle rate" from 2,500 '
                                    "to 10,000 (5,000 for the deploy to be accepted)")

    def test_all_routes_at_their_limits_against_the_account_rate(self):
        # 5,000 grab + 100 withdrawals + 100 limits + 6 routes x 1,500.
        checks, _, status = run(overrides=["ApiRateLimit=1500"])
        self.assertEqual(status, 0)
        campaign = raised(checks, preflight.CAMPAIGN)
        self.assertEqual([(c.quota, c.need) for c in campaign], [("apigateway L-8A5B8E43", 14200)])
        self.assertEqual(campaign[0].why, "GrabRateLimit 5,000 + WithdrawRateLimit 100 + RouteSettings \"GET /me/limits\" ThrottlingRateLimit 100 + ApiRateLimit 1,500 x 6 routes")

    def test_a_route_in_route_settings_counts_at_its_own_limit(self):
        def api_rate(checks):
            return [c for c in checks if c.kind == preflight.CAMPAIGN and c.quota == "apigateway L-8A5B8E43"][0]

        def lambda_need(checks):
            return [c for c in checks if c.kind == preflight.CAMPAIGN and c.quota == "lambda L-B99A9384"][0].need

        base, _, _ = run()
        raised_withdrawals, _, status = run(overrides=["WithdrawRateLimit=3000"])
        self.assertEqual(status, 0)
        self.assertEqual(api_rate(base).need, 10000)
        self.assertEqual(api_rate(raised_withdrawals).need - api_rate(base).need, 2900)
        self.assertEqual(api_rate(raised_withdrawals).status, "raise")
        self.assertIn("WithdrawRateLimit 3,000", api_rate(raised_withdrawals).why)
        # An other route for Lambda: 2,900/s more x 100 ms.
        self.assertEqual(lambda_need(raised_withdrawals) - lambda_need(base), 290)
        # Not a read route: the DynamoDB read estimate does not move.
        reads = [[c.need for c in checks if c.quota == "dynamodb L-CF0CBE56"] for checks in (base, raised_withdrawals)]
        self.assertEqual(reads, [[3300], [3300]])
        # ApiRateLimit moves the other six routes, not the withdrawal route.
        api, _, _ = run(overrides=["ApiRateLimit=1000"])
        self.assertEqual(api_rate(api).need - api_rate(base).need, 1200)

    def test_route_settings_are_read_from_the_template(self):
        # Without its RouteSettings entry the withdrawal route shares DefaultRouteSettings: seven routes
        # at ApiRateLimit, and WithdrawRateLimit is no route's limit.
        without = re.sub(r'\n        "POST /me/withdrawals":\n(          .*\n)+', "\n", TEMPLATE, count=1)
        self.assertNotEqual(without, TEMPLATE)
        self.assertNotIn("ThrottlingRateLimit: !Ref WithdrawRateLimit", without)
        checks, _, _ = run(template=without)
        total = [c for c in checks if c.kind == preflight.CAMPAIGN and c.quota == "apigateway L-8A5B8E43"][0]
        self.assertEqual((total.need, total.why), (10700, "GrabRateLimit 5,000 + RouteSettings \"GET /me/limits\" ThrottlingRateLimit 100 + ApiRateLimit 800 x 7 routes"))
        self.assertFalse([c for c in checks if "WithdrawRateLimit" in c.why])
        throttle = preflight.route_throttles(without, preflight.template_defaults(without))[("POST", "/me/withdrawals")]
        self.assertEqual(throttle, {"rate": (800, "ApiRateLimit"), "burst": (2000, "ApiBurstLimit")})

    def test_a_route_settings_limit_above_the_account_rate_is_refused(self):
        checks, lines, status = run(overrides=["WithdrawRateLimit=12000", "WithdrawBurstLimit=6000"])
        self.assertEqual(status, 1)
        blocked = raised(checks, preflight.DEPLOY)
        self.assertEqual(sorted((c.what, c.have, c.need, c.why.split(":")[0]) for c in blocked),
                         [("API Gateway account burst", 5000, 6000, "WithdrawBurstLimit=6,000"),
                          ("API Gateway account rate", 10000, 12000, "WithdrawRateLimit=12,000")])
        rate = [c for c in blocked if c.quota == "apigateway L-8A5B8E43"][0]
        self.assertEqual(rate.remedy, "or lower WithdrawRateLimit to 10,000")
        self.assertIn("raise    deploy   API Gateway account rate [apigateway L-8A5B8E43] from 10,000 to 12,000; "
                      "or lower WithdrawRateLimit to 10,000 (WithdrawRateLimit=12,000", "\n".join(lines))
        self.assertIn("raise    deploy   API Gateway account burst 5,000 < 6,000: lower WithdrawBurstLimit to 5,000",
                      "\n".join(lines))
        # All routes at their limits, 5,000 + 12,000 + 100 + 4,800: the first quota to raise says both.
        self.assertEqual(lines[-1], 'first:   raise apigateway L-8A5B8E43 "Throttle rate" from 10,000 '
                                    "to 21,900 (12,000 for the deploy to be accepted)")


class DynamoDb(unittest.TestCase):
    # 8,900 grabs/s, the other routes lowered to fit the account's 10,000: 8,900 + 100 + 100 + 6 x 150.
    BIGGER_CAMPAIGN = ["GrabRateLimit=8900", "ApiRateLimit=150"]

    def test_write_throughput_for_a_bigger_campaign(self):
        checks, _, status = run(overrides=self.BIGGER_CAMPAIGN)
        self.assertEqual(status, 0)
        self.assertEqual([(c.quota, c.need) for c in raised(checks)], [("dynamodb L-AB614373", 44500)])
        api = [c for c in checks if c.kind == preflight.CAMPAIGN and c.quota == "apigateway L-8A5B8E43"][0]
        self.assertEqual((api.status, api.need), ("ok", 10000))

    def test_without_the_wallet_fewer_write_units(self):
        checks, _, _ = run(overrides=self.BIGGER_CAMPAIGN + ["Funds=none"])
        self.assertEqual(raised(checks), [])
        write = [c for c in checks if c.quota == "dynamodb L-AB614373"][0]
        self.assertEqual(write.need, 26700)

    def test_reads_count_the_get_routes_only(self):
        checks, _, _ = run()
        read = [c for c in checks if c.quota == "dynamodb L-CF0CBE56"][0]
        # The limits route is a GET and counted as a read, though it reads no table: an overestimate
        # of 100 read units a second.
        self.assertEqual((read.need, read.why),
                         (3300, "5 read routes (RouteSettings \"GET /me/limits\" ThrottlingRateLimit 100 + ApiRateLimit 800 x 4 routes) x ~1 RRU"))

    def test_aws_defaults_answer_when_no_value_is_applied(self):
        facts = preflight.gather(answers("no-applied-values"), preflight.template_defaults(TEMPLATE))
        self.assertEqual(facts["ddb_table_write"].value, 40000)
        self.assertIn("AWS's default", facts["ddb_table_write"].source)


class ElastiCache(unittest.TestCase):
    def test_a_region_full_of_serverless_caches_is_refused(self):
        checks, lines, status = run("caches-full")
        self.assertEqual(status, 1)
        blocked = raised(checks, preflight.DEPLOY)
        self.assertEqual([(c.quota, c.have, c.need) for c in blocked], [("elasticache L-BBCDAECC", 40, 41)])
        self.assertIn("first:   raise elasticache L-BBCDAECC", lines[-1])

    def test_a_redeploy_needs_no_new_cache(self):
        _, lines, status = run("caches-full-ours")
        self.assertEqual(status, 0, "\n".join(lines))

    def test_nodes_mode_counts_the_replication_groups_nodes(self):
        checks, _, status = run("nodes-full", overrides=["CacheMode=nodes"])
        self.assertEqual(status, 1)
        self.assertEqual([(c.quota, c.have, c.need) for c in raised(checks)], [("elasticache L-DFE45DF3", 300, 302)])
        self.assertEqual(preflight.cache_nodes(TEMPLATE), 4)
        chosen = "      NumNodeGroups: 2\n      ReplicasPerNodeGroup: !If [WaitsForReplicas, 2, 1]\n"
        self.assertEqual((preflight.cache_nodes(chosen), preflight.cache_nodes(chosen, True)), (4, 6))


class ManagedInstances(unittest.TestCase):
    def test_vcpu_quota_below_the_capacity_providers_ceiling(self):
        checks, _, status = run("new-account", overrides=["GrabCompute=managed-instances"])
        self.assertEqual(status, 0)
        vcpu = [c for c in checks if c.quota == "ec2 L-1216C47A"][0]
        self.assertEqual((vcpu.status, vcpu.have, vcpu.need), ("raise", 5, 64))
        lam = [c for c in checks if c.quota == "lambda L-B99A9384" and c.kind == preflight.CAMPAIGN][0]
        self.assertNotIn("grab", lam.why)  # grab runs on the capacity provider, not Lambda's concurrency


class Parameters(unittest.TestCase):
    def test_layers(self):
        params = preflight.deployed_parameters(TEMPLATE, 'version = 0.1\n[default.deploy.parameters]\n'
                                               'parameter_overrides = "Stage=beta CacheMode=nodes"\n', ["Stage=dev"])
        self.assertEqual((params["Stage"], params["CacheMode"], params["GrabRateLimit"]), ("dev", "nodes", "5000"))

    def test_quoted_and_list_overrides(self):
        self.assertEqual(preflight.parse_overrides('WebhookUrl="https://a.example/x y" Stage=dev'),
                         {"WebhookUrl": "https://a.example/x y", "Stage": "dev"})
        self.assertEqual(preflight.parse_overrides(["Stage=dev", "WebhookUrl=https://a.example/x y"]),
                         {"Stage": "dev", "WebhookUrl": "https://a.example/x y"})

    def test_an_unknown_parameter_is_refused(self):
        with self.assertRaisesRegex(ValueError, "GrabBurst .*is not a parameter of template.yaml"):
            preflight.deployed_parameters(TEMPLATE, SAMCONFIG, ["GrabBurst=1"])

    def test_samconfig_is_read(self):
        self.assertEqual(preflight.samconfig_overrides(SAMCONFIG), {"Stage": "prod", "CacheMode": "serverless"})


class CommandLine(unittest.TestCase):
    def main(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            status = preflight.main(list(args))
        return status, out.getvalue()

    def test_recorded_answers_end_to_end(self):
        status, out = self.main("--answers", os.path.join(FIXTURES, "default"),
                                "--answers", os.path.join(FIXTURES, "new-account"), "SettleReservedConcurrency=2")
        self.assertEqual(status, 1)
        self.assertIn("raise    deploy   Lambda concurrent executions [lambda L-B99A9384] from 10 to 102", out)

    def test_unknown_parameter_is_a_usage_error(self):
        self.assertEqual(self.main("--answers", FIXTURES, "NoSuchParameter=1")[0], 2)

    def test_silent_cli_leaves_checks_unknown(self):
        status, out = self.main("--answers", os.path.join(FIXTURES, "nowhere"))
        self.assertEqual(status, 0)
        self.assertIn("unknown  deploy   Lambda concurrent executions", out)

    def test_answer_keys_name_the_fixture_files(self):
        self.assertEqual(preflight.answer_key(["service-quotas", "get-service-quota", "--service-code", "lambda",
                                               "--quota-code", "L-B99A9384"]),
                         "service-quotas.get-service-quota.lambda.L-B99A9384")
        for scenario in os.listdir(FIXTURES):
            for name in os.listdir(os.path.join(FIXTURES, scenario)):
                self.assertRegex(name, r"^(lambda|apigateway|service-quotas|elasticache)\.[a-z-]+(\.[A-Za-z0-9-]+)*\.json$")


class DocumentedShapes(unittest.TestCase):
    """The fixtures hold the fields the AWS CLI documents for each answer."""

    def load(self, scenario, key):
        return preflight.RecordedAnswers(os.path.join(FIXTURES, scenario))(key.split("."))

    def test_shapes(self):
        settings = self.load("default", "lambda.get-account-settings")
        self.assertEqual(set(settings), {"AccountLimit", "AccountUsage"})
        self.assertEqual(set(settings["AccountLimit"]), {"TotalCodeSize", "CodeSizeUnzipped", "CodeSizeZipped",
                                                          "ConcurrentExecutions", "UnreservedConcurrentExecutions"})
        self.assertEqual(set(self.load("default", "apigateway.get-account")["throttleSettings"]), {"burstLimit", "rateLimit"})
        quota = self.load("default", "service-quotas.get-service-quota.apigateway.L-8A5B8E43")["Quota"]
        self.assertLessEqual({"ServiceCode", "QuotaCode", "QuotaName", "Value", "Unit", "Adjustable", "GlobalQuota"}, set(quota))
        listed = self.load("default", "service-quotas.list-service-quotas.dynamodb")
        self.assertEqual(set(listed), {"Quotas"})
        self.assertIn("ServerlessCaches", self.load("caches-full", "elasticache.describe-serverless-caches"))
        self.assertIn("CacheClusters", self.load("nodes-full", "elasticache.describe-cache-clusters"))


if __name__ == "__main__":
    unittest.main()
