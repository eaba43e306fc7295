"""IAM's matching rules for identity-based policy statements, as the IAM User Guide states them,
for the checks that hold a function's role to the calls its code makes.

- Actions (`Action`, `NotAction`) match case-insensitively ("iam:ListAccessKeys" is
  "IAM:listaccesskeys"), with `*` for any run of characters and `?` for one.
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_action.html
- Resources (`Resource`, `NotResource`) match case-sensitively, `*` and `?` in any segment, `*`
  running across `/` and `:`.
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_resource.html
- An explicit Deny wins over any Allow; without an Allow, the answer is an implicit deny.
  https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html

No library in the package registries evaluates identity policies offline with these rules and
nothing else (the AWS policy simulator is an API call), so this stays small and is unit-tested
against the documentation's own examples (scripts/tests/test_iam.py). Statements with a
`Condition` are refused: the functions' policies carry none, and a condition would need a request
context this cannot know.
"""

import re

ALLOW, EXPLICIT_DENY, IMPLICIT_DENY = "Allow", "ExplicitDeny", "ImplicitDeny"


def _pattern(glob, ignore_case):
    expression = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile(expression + r"\Z", re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def action_matches(pattern, action):
    """Whether the policy's action `pattern` covers `action` (`dynamodb:BatchGetItem`)."""
    return _pattern(pattern, ignore_case=True).match(action) is not None


def resource_matches(pattern, arn):
    """Whether the policy's resource `pattern` covers the ARN `arn`."""
    return _pattern(pattern, ignore_case=False).match(arn) is not None


def _listed(value):
    return [value] if isinstance(value, str) else list(value or [])


def statement_applies(statement, action, arn):
    """Whether `statement` speaks of `action` on `arn` (whatever its effect)."""
    if "Condition" in statement:
        raise ValueError(f"a statement with a Condition cannot be evaluated here: {statement}")
    if "Action" in statement:
        action_ok = any(action_matches(p, action) for p in _listed(statement["Action"]))
    else:
        action_ok = not any(action_matches(p, action) for p in _listed(statement.get("NotAction")))
    if "Resource" in statement:
        resource_ok = any(resource_matches(p, arn) for p in _listed(statement["Resource"]))
    else:
        resource_ok = not any(resource_matches(p, arn) for p in _listed(statement.get("NotResource")))
    return action_ok and resource_ok


def decide(statements, action, arn):
    """IAM's answer for `action` on `arn` under `statements`: ALLOW, EXPLICIT_DENY or IMPLICIT_DENY."""
    applying = [s for s in statements if statement_applies(s, action, arn)]
    if any(s["Effect"] == "Deny" for s in applying):
        return EXPLICIT_DENY
    if any(s["Effect"] == "Allow" for s in applying):
        return ALLOW
    return IMPLICIT_DENY


def grants(statement):
    """Each (action pattern, resource pattern) an Allow statement grants."""
    if statement.get("Effect") != "Allow" or "Action" not in statement or "Resource" not in statement:
        return []
    return [(action, resource) for action in _listed(statement["Action"]) for resource in _listed(statement["Resource"])]
