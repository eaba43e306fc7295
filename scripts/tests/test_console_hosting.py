"""The operators' console as the stack serves it in AWS, checked on the SAM transform's output.

CloudFront serves the console's files from a private bucket and the operators' API on the same
origin: the default behaviour reads the bucket through Origin Access Control (the bucket policy
lets only that distribution read, only the console's files), `/ops/*` goes to the operators' API,
uncached, with every viewer header but Host (the operators' bearer token among them), for every
method the operators' API has. Its Content-Security-Policy is console/csp.txt, the one the local
gateway sends, with only the operators' provider added to connect-src: the stack's pool (its
issuer's host and its sign-in domain) or another issuer's host and the origins a deployment
names. The stack's pool sends operators back to the console after signing in and out from the
first deploy: its client's callback and sign-out URLs are the distribution's own URL, or the one a
deployment gives, and the operators' API the distribution sends /ops/* to names nothing (no
OpenAPI body, its authorizer a resource of its own), so the client may name the distribution.
(scripts/tests/test_sign_in.py follows the sign-in itself, and the circle, on every parameter set.)
The same distribution caches the packets' shared views (`/packets/*/shared`, the app's API's one
route without an authorizer) by the path and `grabs_from` alone, answers CORS for them at the edge
when the stack allows browser origins (the preflight answered by the app's API, which must then
see it as one), and keeps no origin's error.
"""

import logging
import os
import pathlib
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

import cfn  # noqa: E402

try:  # needs samtranslator: only in .local/venv
    import transform
    from samtranslator.yaml_helper import yaml_parse
except ImportError:
    transform = None

CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
CORS = {"CorsAllowedOrigins": "https://h5.example.com,https://m.example.com"}
# The status codes CloudFront keeps from an origin, and CustomErrorResponses takes (416 it never
# keeps): https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/HTTPStatusCodes.html
KEPT_ERRORS = {400, 403, 404, 405, 414, 500, 501, 502, 503, 504}
SSO = {
    "OperatorsJwtIssuer": "https://sso.example.com/oauth2/default",
    "OperatorsJwtAudience": "console-client",
    "OperatorsSignInOrigins": "https://login.example.com",
}


def stack(parameters):
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = yaml_parse((ROOT / "template.yaml").read_text())
    output = transform.transform(transform.packaged(template), parameters, transform.NoManagedPolicies())
    return cfn.Stack(output, parameters)


def directives(policy):
    """{directive: [sources]} of a Content-Security-Policy."""
    parsed = {}
    for part in policy.split(";"):
        words = part.split()
        if words:
            parsed[words[0]] = words[1:]
    return parsed


def ops_paths():
    """The paths of openapi.yaml's operators' routes."""
    from samtranslator.yaml_helper import yaml_parse as parse

    spec = parse((ROOT / "openapi.yaml").read_text())
    return {
        path: {method for method, operation in item.items() if "operators" in operation.get("tags", [])}
        for path, item in spec["paths"].items()
        if any("operators" in operation.get("tags", []) for operation in item.values())
    }


@unittest.skipIf(transform is None, "needs .local/venv (samtranslator)")
class ConsoleHosting(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.own_pool = stack({})
        cls.sso = stack(SSO)

    def distribution(self, stack):
        (name,) = stack.created("AWS::CloudFront::Distribution")
        return stack.properties(name)["DistributionConfig"]

    def test_the_bucket_is_read_only_by_the_distribution_through_origin_access_control(self):
        stack = self.own_pool
        config = self.distribution(stack)
        origins = {origin["Id"]: origin for origin in config["Origins"]}
        default = config["DefaultCacheBehavior"]
        console = origins[default["TargetOriginId"]]
        self.assertEqual(console["DomainName"], "ConsoleBucket.RegionalDomainName")
        self.assertEqual(console["OriginAccessControlId"], "ConsoleOriginAccessControl.Id")
        self.assertEqual(default["ViewerProtocolPolicy"], "redirect-to-https")
        self.assertEqual(default["AllowedMethods"], ["GET", "HEAD"])
        self.assertEqual(stack.properties("ConsoleOriginAccessControl")["OriginAccessControlConfig"]["SigningBehavior"], "always")
        bucket = stack.properties("ConsoleBucket")
        self.assertTrue(all(bucket["PublicAccessBlockConfiguration"].values()), bucket)
        policy = stack.properties("ConsoleBucketPolicy")["PolicyDocument"]["Statement"]
        allows = [s for s in policy if s["Effect"] == "Allow"]
        self.assertEqual(len(allows), 1, policy)
        (allow,) = allows
        self.assertEqual(allow["Principal"], {"Service": "cloudfront.amazonaws.com"})
        self.assertEqual(allow["Action"], "s3:GetObject")
        self.assertEqual(allow["Resource"], "arn:aws:s3:::consolebucket/console/*")
        self.assertEqual(
            allow["Condition"]["StringEquals"]["AWS:SourceArn"],
            "arn:aws:cloudfront::123456789012:distribution/ConsoleDistribution",
        )

    def test_the_operators_api_is_on_the_same_origin_uncached_with_its_token(self):
        stack = self.own_pool
        config = self.distribution(stack)
        origins = {origin["Id"]: origin for origin in config["Origins"]}
        (behaviour,) = [b for b in config["CacheBehaviors"] if b["PathPattern"] == "/ops/*"]
        api = origins[behaviour["TargetOriginId"]]
        self.assertEqual(api["DomainName"], f"{stack.resource_ref('OperatorsApi')}.execute-api.us-east-1.amazonaws.com")
        operators_api = stack.template["Resources"]["OperatorsApi"]
        self.assertEqual(operators_api["Type"], "AWS::ApiGatewayV2::Api")
        self.assertEqual(cfn.references(operators_api["Properties"]) & set(stack.resources), set(),
                         "the distribution's /ops/* origin names no resource: the client may name the distribution")
        self.assertEqual({stack.properties(route)["RouteKey"] for route in stack.created("AWS::ApiGatewayV2::Route")},
                         {f"{method.upper()} {path}" for path, methods in ops_paths().items() for method in methods},
                         "the operators' API serves openapi.yaml's operators' routes")
        self.assertEqual(api["CustomOriginConfig"]["OriginProtocolPolicy"], "https-only")
        self.assertEqual(behaviour["CachePolicyId"], CACHING_DISABLED)
        self.assertEqual(behaviour["OriginRequestPolicyId"], ALL_VIEWER_EXCEPT_HOST)
        methods = {method for methods in ops_paths().values() for method in methods}
        self.assertTrue(ops_paths(), "openapi.yaml has operators' routes")
        self.assertTrue(all(path.startswith("/ops/") for path in ops_paths()), "every operators' route is under /ops/")
        self.assertLessEqual({m.upper() for m in methods}, set(behaviour["AllowedMethods"]))

    def test_the_shared_views_are_public_and_cached_by_path_and_page_alone(self):
        """GET /packets/{packet_id}/shared, openapi.yaml's only app route without security: no
        authorizer on the app's API, and the distribution's /packets/*/shared behaviour sends it
        to that API (GET and HEAD, HTTPS), cached by the path and grabs_from alone for as long as
        the origin's Cache-Control says, with grabs_from alone sent on."""
        from samtranslator.yaml_helper import yaml_parse as parse

        spec = parse((ROOT / "openapi.yaml").read_text())
        public = {f"{method.upper()} {path}" for path, item in spec["paths"].items() for method, operation in item.items()
                  if operation.get("security") == [] and "operators" not in operation.get("tags", [])}
        self.assertEqual(public, {"GET /packets/{packet_id}/shared"})
        stack = self.own_pool
        body = stack.properties("HttpApi")["Body"]["paths"]
        unauthorized = {f"{method.upper()} {path}" for path, item in body.items() for method, operation in item.items()
                        if any("NONE" in requirement for requirement in operation.get("security", []))}
        self.assertEqual(unauthorized, public, "the app's API runs its authorizer on every other route")
        config = self.distribution(stack)
        origins = {origin["Id"]: origin for origin in config["Origins"]}
        (behaviour,) = [b for b in config["CacheBehaviors"] if b["PathPattern"] == "/packets/*/shared"]
        origin = origins[behaviour["TargetOriginId"]]
        self.assertEqual(origin["DomainName"], f"{stack.resource_ref('HttpApi')}.execute-api.us-east-1.amazonaws.com")
        self.assertEqual(origin["CustomOriginConfig"]["OriginProtocolPolicy"], "https-only")
        self.assertEqual((behaviour["AllowedMethods"], behaviour["ViewerProtocolPolicy"], behaviour["Compress"]),
                         (["GET", "HEAD"], "https-only", True))
        cache = stack.properties(stack.logical_id(behaviour["CachePolicyId"]))["CachePolicyConfig"]
        self.assertEqual((cache["MinTTL"], cache["DefaultTTL"], cache["MaxTTL"]), (0, 0, 31536000))
        key = cache["ParametersInCacheKeyAndForwardedToOrigin"]
        self.assertEqual((key["HeadersConfig"], key["CookiesConfig"], key["QueryStringsConfig"]),
                         ({"HeaderBehavior": "none"}, {"CookieBehavior": "none"},
                          {"QueryStringBehavior": "whitelist", "QueryStrings": ["grabs_from"]}))
        self.assertTrue(key["EnableAcceptEncodingGzip"] and key["EnableAcceptEncodingBrotli"])
        sent = stack.properties(stack.logical_id(behaviour["OriginRequestPolicyId"]))["OriginRequestPolicyConfig"]
        self.assertEqual((sent["HeadersConfig"], sent["CookiesConfig"], sent["QueryStringsConfig"]),
                         ({"HeaderBehavior": "none"}, {"CookieBehavior": "none"},
                          {"QueryStringBehavior": "whitelist", "QueryStrings": ["grabs_from"]}))
        self.assertEqual(stack.resolve(stack.template["Outputs"]["SharedViewsUrl"]["Value"]),
                         f"https://{stack.get_att('ConsoleDistribution', 'DomainName')}")

    def shared_behaviour(self, stack):
        (behaviour,) = [b for b in self.distribution(stack)["CacheBehaviors"] if b["PathPattern"] == "/packets/*/shared"]
        return behaviour

    def test_the_shared_views_answer_cors_at_the_edge_only_for_the_allowed_origins(self):
        """Without CorsAllowedOrigins: no CORS policy, no OPTIONS, no header sent on. With them: the
        behaviour takes OPTIONS (not cached) and SharedViewsCors (the allowed origins, GET/HEAD/
        OPTIONS, If-None-Match allowed, ETag exposed, in place of the origin's), and the preflight's
        headers reach the app's API, whose CorsConfiguration answers it for the same origins and
        allows If-None-Match; the cache key still holds no header."""
        none = self.own_pool
        self.assertNotIn("SharedViewsCors", none.created())
        behaviour = self.shared_behaviour(none)
        self.assertNotIn("ResponseHeadersPolicyId", behaviour)
        self.assertEqual((behaviour["AllowedMethods"], behaviour["CachedMethods"]), (["GET", "HEAD"], ["GET", "HEAD"]))
        sent = none.properties(none.logical_id(behaviour["OriginRequestPolicyId"]))["OriginRequestPolicyConfig"]
        self.assertEqual(sent["HeadersConfig"], {"HeaderBehavior": "none"})

        cors = stack(CORS)
        origins = CORS["CorsAllowedOrigins"].split(",")
        behaviour = self.shared_behaviour(cors)
        self.assertEqual((behaviour["AllowedMethods"], behaviour["CachedMethods"]),
                         (["GET", "HEAD", "OPTIONS"], ["GET", "HEAD"]))
        self.assertIn("SharedViewsCors", cors.created("AWS::CloudFront::ResponseHeadersPolicy"))
        self.assertEqual(cors.logical_id(behaviour["ResponseHeadersPolicyId"]), "SharedViewsCors")
        edge = cors.properties("SharedViewsCors")["ResponseHeadersPolicyConfig"]["CorsConfig"]
        self.assertEqual(edge["AccessControlAllowOrigins"]["Items"], origins)
        self.assertEqual(edge["AccessControlAllowMethods"]["Items"], ["GET", "HEAD", "OPTIONS"])
        self.assertEqual([h.lower() for h in edge["AccessControlAllowHeaders"]["Items"]], ["if-none-match"])
        self.assertIn("etag", [h.lower() for h in edge["AccessControlExposeHeaders"]["Items"]])
        self.assertIs(edge["OriginOverride"], True)
        self.assertIs(edge["AccessControlAllowCredentials"], False, "the view takes no credentials")
        self.assertEqual(set(self.distribution(cors)), set(self.distribution(none)))
        for key, policy in self.distribution(cors).items():
            if key != "CacheBehaviors":
                self.assertEqual(policy, self.distribution(none)[key], key)

        sent = cors.properties(cors.logical_id(behaviour["OriginRequestPolicyId"]))["OriginRequestPolicyConfig"]
        self.assertEqual(sent["HeadersConfig"]["HeaderBehavior"], "whitelist")
        self.assertEqual({h.lower() for h in sent["HeadersConfig"]["Headers"]},
                         {"origin", "access-control-request-method", "access-control-request-headers"})
        self.assertEqual(sent["QueryStringsConfig"], {"QueryStringBehavior": "whitelist", "QueryStrings": ["grabs_from"]})
        key = cors.properties(cors.logical_id(behaviour["CachePolicyId"]))["CachePolicyConfig"]
        self.assertEqual(key["ParametersInCacheKeyAndForwardedToOrigin"]["HeadersConfig"], {"HeaderBehavior": "none"},
                         "every viewer of a page shares one object, whatever its origin")
        api = cors.properties("HttpApi")["Body"]["x-amazon-apigateway-cors"]
        self.assertEqual(api["allowOrigins"], origins, "the app's API answers the preflight for the same origins")
        self.assertIn("if-none-match", api["allowHeaders"])
        self.assertLessEqual({"GET", "OPTIONS"}, set(api["allowMethods"]))
        self.assertEqual(edge["AccessControlMaxAgeSec"], api["maxAge"])

    def test_no_origin_error_is_kept_at_the_edge(self):
        """Every status code CloudFront keeps from an origin (a HEAD's 404 from the app's API, a
        passing 503) is kept 0 s, on every parameter set, with no response page: the origin's own
        answer goes to the viewer, the console's pages unchanged."""
        for case, deployed in {"defaults": self.own_pool, "another issuer": self.sso, "CORS": stack(CORS)}.items():
            with self.subTest(case):
                errors = self.distribution(deployed)["CustomErrorResponses"]
                self.assertEqual({e["ErrorCode"] for e in errors}, KEPT_ERRORS)
                for error in errors:
                    self.assertEqual(error, {"ErrorCode": error["ErrorCode"], "ErrorCachingMinTTL": 0})

    def test_the_pages_send_console_csp_txt_with_only_the_operators_provider_added(self):
        local = directives((ROOT / "console" / "csp.txt").read_text().strip())
        added = {
            "own pool": (self.own_pool, ["https://cognito-idp.us-east-1.amazonaws.com", "https://OperatorsUserPoolDomain.auth.us-east-1.amazoncognito.com"]),
            "another issuer": (self.sso, ["https://sso.example.com", "https://login.example.com"]),
        }
        for case, (stack, origins) in added.items():
            with self.subTest(case):
                config = stack.properties("ConsoleHeaders")["ResponseHeadersPolicyConfig"]
                served = directives(config["SecurityHeadersConfig"]["ContentSecurityPolicy"]["ContentSecurityPolicy"])
                self.assertEqual(served, {**local, "connect-src": local["connect-src"] + origins})
                self.assertTrue(config["SecurityHeadersConfig"]["ContentSecurityPolicy"]["Override"])
                behaviour = self.distribution(stack)["DefaultCacheBehavior"]
                self.assertEqual(behaviour["ResponseHeadersPolicyId"], "ConsoleHeaders")

    def test_the_stack_pool_signs_in_and_out_to_the_console_it_serves_in_one_deploy(self):
        distribution_url = "https://ConsoleDistribution.DomainName/console/"
        own_url = "https://ops.example.com/console/"
        for case, (deployed, url) in {"the distribution's own URL": (self.own_pool, distribution_url),
                                      "a URL of the deployment's own": (stack({"OperatorsConsoleCallbackUrl": own_url}), own_url)}.items():
            with self.subTest(case):
                client = deployed.properties("OperatorsUserPoolClient")
                self.assertEqual((client["CallbackURLs"], client["LogoutURLs"], client["AllowedOAuthFlows"]), ([url], [url], ["code"]))
                self.assertTrue(client["AllowedOAuthFlowsUserPoolClient"])
                self.assertIn("openid", client["AllowedOAuthScopes"])
                self.assertFalse(client.get("GenerateSecret"), "a browser keeps no secret: PKCE")
                self.assertEqual(deployed.resolve(deployed.template["Outputs"]["ConsoleUrl"]["Value"]), url)

    def test_the_outputs_name_what_the_console_config_needs(self):
        outputs = self.sso.template["Outputs"]
        for name in ("ConsoleUrl", "ConsoleBucketName", "ConsoleDistributionId", "OperatorsIssuer", "OperatorsConsoleClientId"):
            self.assertIn(name, outputs)
        self.assertEqual(self.sso.resolve(outputs["OperatorsIssuer"]["Value"]), SSO["OperatorsJwtIssuer"])
        self.assertEqual(self.sso.resolve(outputs["OperatorsConsoleClientId"]["Value"]), "console-client")
        script = (ROOT / "scripts" / "deploy_console.py").read_text()
        for name in ("ConsoleBucketName", "ConsoleDistributionId", "OperatorsIssuer", "OperatorsConsoleClientId"):
            self.assertIn(name, script, "scripts/deploy_console.py reads every output it needs")


class ConsoleConfig(unittest.TestCase):
    def test_config_json_is_what_console_config_ts_reads(self):
        import deploy_console

        outputs = {"OperatorsIssuer": "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc", "OperatorsConsoleClientId": "c1"}
        config = deploy_console.console_config(outputs, {"BusinessTimeZone": "Asia/Shanghai", "OperatorsRolesClaim": ""})
        self.assertEqual(
            config,
            {"signIn": "oidc", "apiBase": "", "authority": outputs["OperatorsIssuer"], "clientId": "c1",
             "rolesClaim": "cognito:groups", "businessTimeZone": "Asia/Shanghai"},
        )
        config_ts = (ROOT / "console" / "src" / "config.ts").read_text()
        for field in config:
            self.assertIn(field, config_ts, f"console/src/config.ts reads {field}")

    def test_the_page_is_checked_every_time_and_hashed_assets_kept(self):
        import deploy_console

        self.assertEqual(deploy_console.cache_control("index.html"), "no-cache")
        self.assertEqual(deploy_console.cache_control("config.json"), "no-cache")
        self.assertIn("immutable", deploy_console.cache_control("assets/index-3f9a.js"))
        self.assertEqual(deploy_console.content_type("assets/index-3f9a.js"), "text/javascript")


if __name__ == "__main__":
    unittest.main()
