"""The two sign-ins against the JWT authorizers of every parameter set a deployment may use.

The app users': docs/DEPLOY.md's sign-in, followed on Cognito's recorded answers.

The token DEPLOY.md's commands yield (`initiate-auth --auth-flow USER_PASSWORD_AUTH`, then
`--query AuthenticationResult.AccessToken`) is read from `fixtures/cognito/initiate-auth.json`,
an answer in the shapes AWS documents, and held to API Gateway's rule for an HTTP API's JWT
authorizer ("Control access to HTTP APIs with JWT authorizers": `iss` must be the issuer; `aud`,
or `client_id` when there is no `aud`, one of the audiences; when the route has scopes, the
token's `scope` or `scp` must hold one of them) on every route of the transformed template. A
parameter set the template's Rules refuse is never deployed, so it is not held to the rule; one
that creates the stack's pool must let its users in.

The operators': the console signs in with what scripts/deploy_console.py writes into its
config.json from the stack's outputs (`OperatorsIssuer`, `OperatorsConsoleClientId`), and the ID
token that client gets must pass the operators' authorizer on every operators' route. With the
stack's own operators' pool, that client sends operators back to the console (`ConsoleUrl`) after
signing in and out, from the first deploy on: its callback and sign-out URLs name the console's
distribution, or `OperatorsConsoleCallbackUrl` when given, and no deployable template holds a
circle of references (CloudFormation refuses one). A client whose callback waits for a second
deploy fails here, and so does an operators' authorizer written into the API's OpenAPI body that
the distribution fronts, the circle that made that second deploy necessary.
"""

import base64
import json
import logging
import os
import pathlib
import re
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from cfn import Stack, references  # noqa: E402

RECORDED = json.loads((HERE / "fixtures" / "cognito" / "initiate-auth.json").read_text())


def claims(token):
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


def deploy_md_token_path():
    """The `--query` of DEPLOY.md's `initiate-auth` command: which token of the answer the
    documented sign-in sends as its bearer token."""
    text = (ROOT / "docs" / "DEPLOY.md").read_text()
    command = re.search(r"initiate-auth[^`]*?--query (\S+)", text, re.S)
    assert command, "docs/DEPLOY.md shows no initiate-auth sign-in"
    assert "--auth-flow USER_PASSWORD_AUTH" in command.group(0), command.group(0)
    return command.group(1)


def documented_token():
    """The token DEPLOY.md's sign-in yields, read from the recorded answer by its `--query`."""
    value = RECORDED
    for key in deploy_md_token_path().split("."):
        value = value[key]
    return value


def authorizer_rule(stack):
    """(issuer, audiences, scopes of each route) of the app's JWT authorizer, in the OpenAPI body
    of the app's API (the one API with a body), resolved."""
    (body,) = [r["Properties"]["Body"] for r in stack.template["Resources"].values()
               if r["Type"] == "AWS::ApiGatewayV2::Api" and "Body" in r["Properties"]]  # resolved piece by piece below
    config = body["components"]["securitySchemes"]["JwtAuthorizer"]["x-amazon-apigateway-authorizer"]["jwtConfiguration"]
    routes = {}
    for path, operations in body["paths"].items():
        for method, operation in operations.items():
            for requirement in operation.get("security", []):
                if "JwtAuthorizer" in requirement:
                    routes[f"{method.upper()} {path}"] = list(requirement["JwtAuthorizer"])
    return config["issuer"], config["audience"], routes


def admitted(token_claims, issuer, audiences, scopes):
    """API Gateway's JWT authorizer rule, less the signature and the clock: why a token is
    refused, or None."""
    if token_claims.get("iss") != issuer:
        return f"iss {token_claims.get('iss')} is not {issuer}"
    audience = token_claims.get("aud", token_claims.get("client_id"))
    if audience not in audiences:
        return f"aud/client_id {audience} not in {audiences}"
    if scopes:
        held = set(str(token_claims.get("scope", token_claims.get("scp", ""))).split())
        if not held & set(scopes):
            return f"scope {sorted(held)} holds none of {scopes}"
    return None


def as_issued_by(stack, token_claims):
    """The recorded claims as the stack's own pool issues them: its issuer and app client."""
    issued = dict(token_claims)
    issued["iss"] = f"https://cognito-idp.us-east-1.amazonaws.com/{stack.physical_name('UserPool')}"
    client = stack.physical_name("UserPoolClient")
    if "aud" in issued:
        issued["aud"] = client
    else:
        issued["client_id"] = client
    return issued


_TRANSFORMS = {}


def transformed(template_text, parameters):
    """The SAM transform of `template_text` for `parameters`, once per pair."""
    key = (template_text, json.dumps(parameters, sort_keys=True))
    if key not in _TRANSFORMS:
        os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
        logging.getLogger("samtranslator").setLevel(logging.ERROR)
        from samtranslator.translator.transform import transform
        from samtranslator.yaml_helper import yaml_parse
        from transform import NoManagedPolicies, packaged

        _TRANSFORMS[key] = transform(packaged(yaml_parse(template_text)), parameters, NoManagedPolicies())
    return _TRANSFORMS[key]


def refusals(template_text, sets):
    """For each parameter set the template's Rules admit: the routes that refuse the token DEPLOY.md's
    sign-in yields from the stack's own pool (or, for another issuer, a token of that issuer without
    the route's scope and with it)."""
    from samtranslator.yaml_helper import yaml_parse
    from transform import refusing_rules

    source = yaml_parse(template_text)
    problems = []
    for name, parameters in sets.items():
        if refusing_rules(source, parameters):
            continue
        stack = Stack(transformed(template_text, parameters), parameters)
        issuer, audiences, routes = authorizer_rule(stack)
        issuer, audiences = stack.resolve(issuer), stack.resolve(audiences)
        for route, scopes in routes.items():
            scopes = [scope for scope in stack.resolve(scopes) if scope]
            if stack.condition("CreateUserPool"):
                why = admitted(as_issued_by(stack, claims(documented_token())), issuer, audiences, scopes)
                if why:
                    problems.append(f"[{name}] {route}: the stack's own user is refused: {why}")
            else:
                token = {"iss": issuer, "client_id": audiences[0], "scope": " ".join(scopes)}
                if admitted(token, issuer, audiences, scopes):
                    problems.append(f"[{name}] {route}: the issuer's token with the scope is refused")
                if scopes and not admitted(dict(token, scope="openid"), issuer, audiences, scopes):
                    problems.append(f"[{name}] {route}: a token without {scopes} is let in")
    return problems


# Beside the deployable sets, which all create the operators' pool: the console on a domain of
# the deployment's own, and the company's single sign-on.
OPERATORS_SETS = {
    "own-console-url": {"OperatorsConsoleCallbackUrl": "https://ops.example.com/console/"},
    "operators-sso": {"OperatorsJwtIssuer": "https://sso.example.com/oauth2/default",
                      "OperatorsJwtAudience": "console-client,cli-client"},
}


def circle(template):
    """A circle of references among the template's resources (Ref, Fn::GetAtt, Fn::Sub and
    DependsOn, in either branch of an Fn::If: CloudFormation orders them before it evaluates
    conditions), as [logical id, ..., the first again]; None when there is none."""
    resources = template["Resources"]
    edges = {}
    for name, resource in resources.items():
        depends = resource.get("DependsOn", [])
        edges[name] = sorted((references(resource.get("Properties", {})) | set([depends] if isinstance(depends, str) else depends)) & set(resources))
    state = {}

    def visit(path):
        state[path[-1]] = "open"
        for other in edges[path[-1]]:
            if state.get(other) == "open":
                return path[path.index(other):] + [other]
            if other not in state:
                found = visit(path + [other])
                if found:
                    return found
        state[path[-1]] = "closed"
        return None

    for name in edges:
        found = None if name in state else visit([name])
        if found:
            return found
    return None


def console_config(stack):
    """(config.json as scripts/deploy_console.py writes it from the stack's outputs, the outputs)."""
    import deploy_console

    outputs = {name: stack.resolve(stack.template["Outputs"][name]["Value"]) for name in deploy_console.OUTPUTS}
    return deploy_console.console_config(outputs, stack.parameters), outputs


def operators_routes(stack):
    """{route key: (issuer, audiences) of its JWT authorizer, or None without one} of the
    operators' routes (AWS::ApiGatewayV2::Route resources), resolved."""
    routes = {}
    for route in stack.created("AWS::ApiGatewayV2::Route"):
        properties = stack.properties(route)
        if properties.get("AuthorizationType") != "JWT":
            routes[properties["RouteKey"]] = None
            continue
        config = stack.properties(properties["AuthorizerId"])["JwtConfiguration"]
        routes[properties["RouteKey"]] = (config["Issuer"], config["Audience"])
    return routes


def console_sign_in_problems(template_text, sets):
    """For each parameter set the template's Rules admit: a circle CloudFormation would refuse,
    an operators' route refusing the ID token of the client the console signs in with, and, with
    the stack's own pool, a client that does not send operators back to ConsoleUrl (the
    distribution's own URL, or OperatorsConsoleCallbackUrl when given) after signing in and out."""
    from samtranslator.yaml_helper import yaml_parse
    from transform import refusing_rules

    source = yaml_parse(template_text)
    problems = []
    for name, parameters in sets.items():
        if refusing_rules(source, parameters):
            continue
        output = transformed(template_text, parameters)
        found = circle(output)
        if found:
            problems.append(f"[{name}] a circle of references, which CloudFormation refuses: {' -> '.join(found)}")
            continue
        stack = Stack(output, parameters)
        config, outputs = console_config(stack)
        id_token = {"iss": config["authority"], "aud": config["clientId"], "token_use": "id"}
        routes = operators_routes(stack)
        if not routes:
            problems.append(f"[{name}] no operators' route resources")
        for route, rule in routes.items():
            why = "no JWT authorizer" if rule is None else admitted(id_token, *rule, [])
            if why:
                problems.append(f"[{name}] {route}: the console's ID token is refused: {why}")
        if not stack.condition("CreateOperatorsPool"):
            continue
        console_url = parameters.get("OperatorsConsoleCallbackUrl") or f"https://{stack.get_att('ConsoleDistribution', 'DomainName')}/console/"
        if outputs["ConsoleUrl"] != console_url:
            problems.append(f"[{name}] ConsoleUrl is {outputs['ConsoleUrl']}, not {console_url}")
        client = stack.logical_id(config["clientId"])
        if client is None or stack.resources[client]["Type"] != "AWS::Cognito::UserPoolClient":
            problems.append(f"[{name}] the console's client {config['clientId']} is not the stack pool's app client")
            continue
        properties = stack.properties(client)
        for field in ("CallbackURLs", "LogoutURLs"):
            if properties.get(field) != [console_url]:
                problems.append(f"[{name}] {client}'s {field} are {properties.get(field)}, not [{console_url}]: "
                                "the pool does not send operators back to the console from this deploy")
        if not properties.get("AllowedOAuthFlowsUserPoolClient") or properties.get("AllowedOAuthFlows") != ["code"]:
            problems.append(f"[{name}] {client} has no authorization code flow")
    return problems


class SignIn(unittest.TestCase):
    def setUp(self):
        from transform import PARAMETER_SETS

        self.sets = PARAMETER_SETS
        self.template = (ROOT / "template.yaml").read_text()

    def test_the_documented_token_is_cognitos_access_token_without_a_custom_scope(self):
        token = claims(documented_token())
        self.assertEqual(token["token_use"], "access")
        self.assertNotIn("aud", token)
        self.assertEqual(token["scope"], "aws.cognito.signin.user.admin")
        self.assertIn("ALLOW_USER_PASSWORD_AUTH", re.search(r"ExplicitAuthFlows: \[([^\]]*)\]", self.template).group(1))

    def test_every_deployable_parameter_set_lets_its_users_in(self):
        self.assertEqual(refusals(self.template, self.sets), [])

    def test_a_scope_with_the_stacks_own_pool_is_refused_before_anything_is_made(self):
        """Without the rule RequiredScopeNeedsIssuer, a required scope with the stack's own pool
        deploys and answers every route 403: the check names the routes; with it, the set is
        refused by CloudFormation and never deployed."""
        from samtranslator.yaml_helper import yaml_parse
        from transform import refusing_rules

        own_pool_scope = {"own-pool-scope": {"RequiredScope": "packets/use"}}
        self.assertEqual(refusing_rules(yaml_parse(self.template), own_pool_scope["own-pool-scope"]),
                         ["RequiredScopeNeedsIssuer"])
        without_rule = re.sub(r"\n  RequiredScopeNeedsIssuer:\n(    .*\n|\s*#.*\n)+", "\n", self.template)
        self.assertNotIn("RequiredScopeNeedsIssuer:", without_rule)
        problems = refusals(without_rule, own_pool_scope)
        self.assertTrue(problems and all("refused: scope" in problem for problem in problems), problems)
        self.assertTrue(any("POST /packets/{packet_id}/grab" in problem for problem in problems), problems)


class OperatorsSignIn(unittest.TestCase):
    def setUp(self):
        from transform import PARAMETER_SETS

        self.sets = {**PARAMETER_SETS, **OPERATORS_SETS}
        self.template = (ROOT / "template.yaml").read_text()

    def test_the_console_signs_operators_in_and_out_from_the_first_deploy(self):
        self.assertEqual(console_sign_in_problems(self.template, self.sets), [])

    def test_a_client_that_waits_for_a_second_deploy_is_named(self):
        """The two-deploy shape: no callback or sign-out URL until OperatorsConsoleCallbackUrl is given."""
        waiting = re.sub(r"\n      (CallbackURLs|LogoutURLs): .*", "", self.template)
        self.assertNotEqual(waiting, self.template)
        problems = console_sign_in_problems(waiting, {"defaults": {}})
        self.assertEqual(len(problems), 2, problems)
        self.assertTrue(all("does not send operators back to the console" in problem for problem in problems), problems)

    def test_the_operators_authorizer_in_the_body_of_the_api_the_distribution_fronts_closes_a_circle(self):
        """What forced the second deploy: the distribution's /ops/* origin an API whose OpenAPI body
        names the client, as a SAM HttpApi's authorizer does."""
        import copy

        template = copy.deepcopy(transformed(self.template, {}))
        self.assertIsNone(circle(template))
        resources = template["Resources"]
        schemes = resources["HttpApi"]["Properties"]["Body"]["components"]["securitySchemes"]
        schemes["OperatorsAuthorizer"] = {"x-amazon-apigateway-authorizer": {"jwtConfiguration": {"audience": [{"Ref": "OperatorsUserPoolClient"}]}}}
        (origin,) = [o for o in resources["ConsoleDistribution"]["Properties"]["DistributionConfig"]["Origins"] if o["Id"] == "operators-api"]
        origin["DomainName"] = {"Fn::Sub": "${HttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"}
        found = circle(template)
        self.assertEqual(set(found or []), {"ConsoleDistribution", "HttpApi", "OperatorsUserPoolClient"}, found)

    def test_the_console_comes_back_to_the_url_its_client_allows(self):
        """The console's redirect and logout_uri are its origin and vite's base (consoleBase() in
        console/src/oidcAuth.ts): ConsoleUrl's path."""
        vite = (ROOT / "console" / "vite.config.ts").read_text()
        self.assertIn("base: '/console/',", vite)
        self.assertIn("`${window.location.origin}${import.meta.env.BASE_URL}`", (ROOT / "console" / "src" / "oidcAuth.ts").read_text())
        stack = Stack(transformed(self.template, {}), {})
        _, outputs = console_config(stack)
        self.assertTrue(outputs["ConsoleUrl"].endswith(".DomainName/console/"), outputs["ConsoleUrl"])


if __name__ == "__main__":
    unittest.main()
