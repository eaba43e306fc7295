"""docs/DEPLOY.md's sign-in, followed on Cognito's recorded answers, against the JWT authorizer of
every parameter set a deployment may use.

The token DEPLOY.md's commands yield (`initiate-auth --auth-flow USER_PASSWORD_AUTH`, then
`--query AuthenticationResult.AccessToken`) is read from `fixtures/cognito/initiate-auth.json`,
an answer in the shapes AWS documents, and held to API Gateway's rule for an HTTP API's JWT
authorizer ("Control access to HTTP APIs with JWT authorizers": `iss` must be the issuer; `aud`,
or `client_id` when there is no `aud`, one of the audiences; when the route has scopes, the
token's `scope` or `scp` must hold one of them) on every route of the transformed template. A
parameter set the template's Rules refuse is never deployed, so it is not held to the rule; one
that creates the stack's pool must let its users in.
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

from cfn import Stack  # noqa: E402

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
    """(issuer, audiences, scopes of each route) of the stack's JWT authorizer, resolved."""
    apis = [n for n, r in stack.template["Resources"].items() if r["Type"] == "AWS::ApiGatewayV2::Api"]
    body = stack.template["Resources"][apis[0]]["Properties"]["Body"]  # resolved piece by piece below
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


if __name__ == "__main__":
    unittest.main()
