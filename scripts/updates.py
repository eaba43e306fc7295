"""What changing one parameter of a deployed stack does, derived from the SAM transform: the
functions whose traffic it reaches and how soon, and the resources it modifies and replaces.

    .local/venv/bin/python scripts/updates.py            check; exit 1 on any failure
    .local/venv/bin/python scripts/updates.py --write    also write docs/DEPLOY.md's table

For every parameter set of scripts/transform.py and every parameter changed alone to another value
it allows (its AllowedValues; MinValue and MaxValue; AllowedPattern, MinLength and MaxLength; the
values the template's conditions compare it with; a value the template's Rules refuse is skipped,
as CloudFormation refuses that update), the template is transformed for both values and each is
resolved (scripts/cfn.py's Stack: conditions evaluated, intrinsics resolved), then compared
resource by resource. The translator is run again only for a parameter it reads (noted as it
runs); for any other, the output is the same, and only the resources that depend on the parameter
(through references and conditions) are compared.

- A resource is replaced when its type changes or a value its schema lists in
  `createOnlyProperties` does (the schemas cfn-lint ships, scripts/deploy_policy.py `schema`); a
  replaced resource gets a new physical name, so what names it changes too. Removed or added: its
  condition flips. Modified: any other property changes.
- A function's configuration is what a version of it freezes: every property of its
  AWS::Lambda::Function but those Lambda keeps per function (FUNCTION_LEVEL, the ones aws-cdk's
  VERSION_LOCKED marks false: packages/aws-cdk-lib/aws-lambda/lib/function-hash.ts).
- CloudFormation refuses an update that replaces a resource under the name the template gives it
  (a name its schema's primaryIdentifier holds, unchanged) and rolls it back: the table says so,
  and nothing else of that update is counted.

It fails:
- when an aliased function's configuration changes and its AWS::Lambda::Version stays (same logical
  id, same createOnly properties): the alias keeps serving the old configuration, and the canary
  never runs. SAM names the version after the code and the unresolved environment
  (samtranslator's `_construct_version`), so each aliased function's `VersionDescription`, a
  createOnly property of the version, names the parameter values its configuration depends on;
- when a version is replaced and its function's configuration is not: Lambda publishes no version
  of a function that did not change, and the update fails ("A version for this Lambda function
  exists"; aws-cdk pull request 14586);
- when a version's description could exceed the 256 characters Lambda takes, with every parameter
  at its longest and each Number without a MaxValue at UNBOUNDED_DIGITS digits;
- when a change replaces or removes a resource that holds data or identities (HOLDS_DATA) and
  docs/DEPLOY.md's table does not say so, or such a resource lacks a DeletionPolicy or an
  UpdateReplacePolicy;
- when docs/DEPLOY.md's table is not the one derived here.
"""

import contextlib
import copy
import logging
import math
import os
import re
import re._constants as sre_constants
import re._parser as sre_parse
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import cfn  # noqa: E402
import deploy_policy  # noqa: E402
import transform  # noqa: E402
from samtranslator.sdk import parameter as sam_parameter  # noqa: E402
from samtranslator.yaml_helper import yaml_parse  # noqa: E402

DEPLOY_MD = ROOT / "docs" / "DEPLOY.md"
BEGIN, END = "<!-- parameter-updates:begin -->", "<!-- parameter-updates:end -->"

HOLDS_DATA = {
    "AWS::DynamoDB::Table",
    "AWS::S3::Bucket",
    "AWS::Cognito::UserPool",
    "AWS::SecretsManager::Secret",
    "AWS::ElastiCache::ReplicationGroup",
    "AWS::ElastiCache::ServerlessCache",
}
FUNCTION_LEVEL = {"CodeSigningConfigArn", "ReservedConcurrentExecutions", "Tags", "TenancyConfig"}
FUNCTION_TYPES = {"AWS::Lambda::Function", "AWS::Lambda::Version", "AWS::Lambda::Alias"}
DESCRIPTION_LIMIT = 256
# The digits of u32::MAX (4294967295). A Number parameter whose setting shared/core/src/settings.rs
# declares "1 or more" (AtLeast) has no MaxValue (local/tests/it/deployment.rs holds the two
# equal); shared/core/src/config.rs reads each into its field's type, a u32 for all of them but
# the two cents amounts (u64), and refuses a value that does not fit.
UNBOUNDED_DIGITS = 10
REPLACED = "~replaced"
STALE = "its configuration changes and its version stays: the alias keeps serving the old one"
UNCHANGED = "a new version of a configuration that did not change, which Lambda refuses"


class Resolved(cfn.Stack):
    """The stack for `parameters` after an update that replaced `replaced`: a replaced resource
    has a new physical name, so each Ref and attribute of it differs from the stack's before."""

    def __init__(self, template, parameters, replaced=frozenset()):
        super().__init__(template, parameters)
        self.replaced = replaced
        self._created = {}
        self._create_only = {}

    def created(self, kind=None):
        if kind not in self._created:
            self._created[kind] = super().created(kind)
        return self._created[kind]

    def create_only(self, logical_id):
        """The values of the resource's createOnly properties, resolved."""
        if logical_id not in self._create_only:
            schema = deploy_policy.schema(self.resources[logical_id]["Type"]) or {}
            properties = self.properties(logical_id)
            values = {}
            for path in schema.get("createOnlyProperties", []):
                value = properties
                for part in path.split("/")[2:]:
                    value = value.get(part) if isinstance(value, dict) else None
                values[path] = value
            self._create_only[logical_id] = values
        return self._create_only[logical_id]

    def custom_name(self, logical_id):
        """The name the template gives the resource (its schema's primaryIdentifier, when every
        part of it is a createOnly property the template sets), None when CloudFormation makes one up."""
        identifier = (deploy_policy.schema(self.resources[logical_id]["Type"]) or {}).get("primaryIdentifier", [])
        values = self.create_only(logical_id)
        if not identifier or any(values.get(path) is None for path in identifier):
            return None
        return [values[path] for path in identifier]

    def physical_name(self, logical_id):
        name = super().physical_name(logical_id)
        return name + REPLACED if logical_id in self.replaced else name

    def arn(self, logical_id):
        try:
            return super().arn(logical_id)
        except ValueError:
            return f"arn:{self.resources[logical_id]['Type']}:{self.physical_name(logical_id)}"

    def get_att(self, logical_id, attribute):
        value = super().get_att(logical_id, attribute)
        if logical_id in self.replaced and isinstance(value, str) and REPLACED not in value:
            return value + REPLACED
        return value


class _ReadValues(dict):
    """Parameter values that note each name the translator reads (all of them when it iterates)."""

    names = set()

    def __getitem__(self, name):
        self.names.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.names.add(name)
        return super().get(name, default)

    def _all(self):
        self.names.add("*")

    def __iter__(self):
        self._all()
        return super().__iter__()

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()

    def keys(self):
        self._all()
        return super().keys()


@contextlib.contextmanager
def noting_reads():
    original = sam_parameter.SamParameterValues.add_pseudo_parameter_values

    def add_and_note(self, session=None):
        original(self, session)
        self.parameter_values = _ReadValues(self.parameter_values)

    sam_parameter.SamParameterValues.add_pseudo_parameter_values = add_and_note
    try:
        yield
    finally:
        sam_parameter.SamParameterValues.add_pseudo_parameter_values = original


def translated(packaged, parameters):
    """The transform of `packaged` for `parameters`, and the parameter names the translator read."""
    _ReadValues.names = set()
    with noting_reads():
        output = transform.transform(copy.deepcopy(packaged), parameters, transform.NoManagedPolicies())
    return output, _ReadValues.names


# --- The values a parameter may take.


def pattern_examples(pattern):
    """Two strings `pattern` matches: the shortest, and one with every optional part present."""

    def walk(parsed, filled):
        text = ""
        for op, argument in parsed:
            if op == sre_constants.LITERAL:
                text += chr(argument)
            elif op == sre_constants.ANY or op == sre_constants.NOT_LITERAL:
                text += "x" if argument != ord("x") else "y"
            elif op == sre_constants.IN:
                text += first_member(argument)
            elif op == sre_constants.BRANCH:
                text += min((walk(branch, filled) for branch in argument[1]), key=len)
            elif op == sre_constants.SUBPATTERN:
                text += walk(argument[3], filled)
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                least, _, item = argument
                text += walk(item, filled) * (max(least, 1) if filled else least)
            elif op != sre_constants.AT:
                raise ValueError(f"a pattern this does not read: {pattern} ({op})")
        return text

    parsed = sre_parse.parse(pattern)
    return [walk(parsed, False), walk(parsed, True)]


def first_member(members):
    if members[0][0] == sre_constants.NEGATE:
        excluded = {chr(argument) for op, argument in members[1:] if op == sre_constants.LITERAL}
        return next(c for c in "xyz" if c not in excluded)
    op, argument = members[0]
    if op == sre_constants.LITERAL:
        return chr(argument)
    if op == sre_constants.RANGE:
        return chr(argument[0])
    return {sre_constants.CATEGORY_DIGIT: "0", sre_constants.CATEGORY_SPACE: " "}.get(argument, "a")


def longest_match(pattern):
    """The length of the longest string `pattern` matches, None when unbounded."""

    def walk(parsed):
        total = 0
        for op, argument in parsed:
            if op in (sre_constants.LITERAL, sre_constants.ANY, sre_constants.NOT_LITERAL, sre_constants.IN):
                total += 1
            elif op == sre_constants.BRANCH:
                lengths = [walk(branch) for branch in argument[1]]
                if None in lengths:
                    return None
                total += max(lengths)
            elif op == sre_constants.SUBPATTERN:
                inner = walk(argument[3])
                if inner is None:
                    return None
                total += inner
            elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                _, most, item = argument
                inner = walk(item)
                if most == sre_constants.MAXREPEAT or inner is None:
                    return None
                total += most * inner
        return total

    return walk(sre_parse.parse(pattern))


def admits(declared, value):
    """Whether CloudFormation takes `value` (text) for a parameter declared as `declared`."""
    value = str(value)
    if "AllowedValues" in declared:
        return value in {str(v) for v in declared["AllowedValues"]}
    if declared.get("Type") == "Number":
        try:
            number = float(value)
        except ValueError:
            return False
        return float(declared.get("MinValue", -math.inf)) <= number <= float(declared.get("MaxValue", math.inf))
    if "AllowedPattern" in declared and not re.fullmatch(declared["AllowedPattern"], value):
        return False
    return int(declared.get("MinLength", 0)) <= len(value) <= int(declared.get("MaxLength", 4096))


def compared_constants(source, name):
    """The constants the template's conditions and rules compare parameter `name` with."""
    found = []

    def walk(node):
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for key, argument in node.items():
                if key in ("Fn::Equals", "Fn::EachMemberEquals") and {"Ref": name} in argument:
                    found.extend(str(side) for side in argument if not isinstance(side, (dict, list)))
                walk(argument)

    walk(source.get("Conditions", {}))
    walk(source.get("Rules", {}))
    return found


def alternatives(source, name, current):
    """The values parameter `name` may take besides `current`, one of each kind."""
    declared = source["Parameters"][name]
    candidates = compared_constants(source, name)
    for parameters in [*transform.PARAMETER_SETS.values(), *(p for p, _ in transform.REFUSED_SETS.values())]:
        if name in parameters:
            candidates.append(str(parameters[name]))
    if "AllowedValues" in declared:
        candidates += [str(v) for v in declared["AllowedValues"]]
    elif declared.get("Type") == "Number":
        number = int(float(current))
        candidates += [str(number + 1), str(number - 1), str(declared.get("MinValue", number))]
    elif "AllowedPattern" in declared:
        candidates += pattern_examples(declared["AllowedPattern"])
    else:
        candidates += ["", "x", current + "x"]
    chosen = []
    for value in candidates:
        if value != current and value not in chosen and admits(declared, value):
            chosen.append(value)
    return chosen


def longest_value(declared):
    """The most characters a value of the parameter has, None when the template bounds none."""
    if "AllowedValues" in declared:
        return max(len(str(v)) for v in declared["AllowedValues"])
    if declared.get("Type") == "Number":
        if "MaxValue" not in declared:
            return None
        return max(len(str(declared["MaxValue"])), len(str(declared.get("MinValue", 0))))
    bounds = [int(declared["MaxLength"])] if "MaxLength" in declared else []
    if "AllowedPattern" in declared and longest_match(declared["AllowedPattern"]) is not None:
        bounds.append(longest_match(declared["AllowedPattern"]))
    return min(bounds) if bounds else None


# --- One update: a stack before, the same stack with one parameter changed.


def versioned(properties):
    """What a version of the function freezes of its resolved properties."""
    return {key: value for key, value in properties.items() if key not in FUNCTION_LEVEL}


def aliases(template):
    """Each aliased function's alias: {function: (alias, version)} (logical ids)."""
    found = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Alias":
            properties = resource["Properties"]
            found[properties["FunctionName"]["Ref"]] = (logical_id, properties["FunctionVersion"]["Fn::GetAtt"][0])
    return found


def shift(stack, alias):
    """How a new version reaches the alias's traffic: (CodeDeploy's configuration, minutes), or
    None when the alias moves at once."""
    update_policy = stack.resources[alias].get("UpdatePolicy", {}).get("CodeDeployLambdaAliasUpdate")
    if update_policy is None:
        return None
    group = update_policy["DeploymentGroupName"]["Ref"]
    name = stack.properties(group)["DeploymentConfigName"].removeprefix("CodeDeployDefault.Lambda")
    return name, shift_minutes(name)


def shift_minutes(configuration):
    """How long CodeDeploy's predefined Lambda configuration takes to move all the traffic."""
    canary = re.fullmatch(r"Canary(\d+)Percent(\d+)Minutes?", configuration)
    linear = re.fullmatch(r"Linear(\d+)PercentEvery(\d+)Minutes?", configuration)
    if canary:
        return int(canary[2])
    if linear:
        return math.ceil(100 / int(linear[1])) * int(linear[2])
    return 0


def dependents(template):
    """{parameter: the logical ids of the resources whose definition depends on it}: a reference
    to it, a condition that depends on it, or a reference to a resource that does."""
    users = defaultdict(set)
    for name, condition in template.get("Conditions", {}).items():
        for used in cfn.references(condition) | cfn.conditions_named(condition):
            users[used].add(name)
    for name, resource in template["Resources"].items():
        for used in cfn.references(resource) | cfn.conditions_named(resource):
            users[used].add(name)
    found = {}
    for parameter in template.get("Parameters", {}):
        reached, frontier = set(), [parameter]
        while frontier:
            for user in users[frontier.pop()] - reached:
                reached.add(user)
                frontier.append(user)
        found[parameter] = reached & set(template["Resources"])
    return found


class Update:
    """What CloudFormation does when `before` (a Resolved stack) is updated to `after_template`
    with `parameters`; only the resources in `affected` can differ (all when None)."""

    def __init__(self, before, after_template, parameters, affected=None):
        replaced = set()
        while True:
            after = Resolved(after_template, parameters, frozenset(replaced))
            existing = set(after.created())
            both = [r for r in before.created() if r in existing]
            common = [r for r in both if affected is None or r in affected]
            newly = {r for r in common if r not in replaced and self._replaces(before, after, r)}
            if not newly:
                break
            replaced |= newly
        self.before, self.after = before, after
        self.replaced = replaced
        self.removed = [r for r in before.created() if r not in existing]
        existed = set(before.created())
        self.added = [r for r in after.created() if r not in existed]
        self.modified = [r for r in common if r not in replaced and before.properties(r) != after.properties(r)]
        self.unreplaceable = [r for r in sorted(replaced) if before.custom_name(r) is not None
                              and before.custom_name(r) == after.custom_name(r)]
        self.reached, self.version_problems = {}, []
        if not self.unreplaceable:
            self._functions([r for r in both if before.resources[r]["Type"] == "AWS::Lambda::Function"])

    @staticmethod
    def _replaces(before, after, logical_id):
        if before.resources[logical_id]["Type"] != after.resources[logical_id]["Type"]:
            return True
        return before.create_only(logical_id) != after.create_only(logical_id)

    def _functions(self, functions):
        before, after = self.before, self.after
        aliased_before, aliased_after = aliases(before.template), aliases(after.template)
        for function in functions:
            if function in self.replaced:
                self.reached[function] = "replaced"
                continue
            old, new = before.properties(function), after.properties(function)
            configured = versioned(old) != versioned(new)
            if function in aliased_after:
                alias, version = aliased_after[function]
                republished = aliased_before.get(function, (None, None))[1] != version or version in self.replaced
                if configured and not republished:
                    self.version_problems.append((function, STALE))
                if republished and not configured:
                    self.version_problems.append((function, UNCHANGED))
                if configured:
                    self.reached[function] = ("version", shift(after, alias))
            elif configured:
                self.reached[function] = "latest"
            if function not in self.reached and old != new:
                self.reached[function] = "function"
        for function in self.removed:
            if before.resources[function]["Type"] == "AWS::Lambda::Function":
                self.reached[function] = "removed"
        for function in self.added:
            if after.resources[function]["Type"] == "AWS::Lambda::Function":
                self.reached[function] = "added"


# --- Every parameter of every parameter set.


class Findings:
    """Every parameter's updates across the parameter sets."""

    def __init__(self, source):
        self.source = source
        self.reached = defaultdict(dict)  # parameter -> function -> set of how
        self.modified = defaultdict(set)
        self.replaced = defaultdict(set)
        self.removed = defaultdict(set)
        self.added = defaultdict(set)
        self.data_lost = defaultdict(set)  # parameter -> data holders replaced or removed
        self.tried = defaultdict(set)  # parameter -> values tried
        self.refused = defaultdict(set)  # parameter -> resources it would replace under their own name
        self.failures = []
        self.stale = set()  # (parameter, function) whose configuration changes without a version

    def record(self, name, parameter, value, update):
        before, after = update.before, update.after
        self.tried[parameter].add(value)
        if update.unreplaceable:
            self.refused[parameter].update(update.unreplaceable)
            return
        for function, problem in update.version_problems:
            self.failures.append(f"[{name}] {parameter}={value!r}: {function}: {problem}")
            if problem == STALE:
                self.stale.add((parameter, function))
        for function, how in update.reached.items():
            self.reached[parameter].setdefault(function, set()).add(how)
        for group, stack, found in [(self.modified, after, update.modified), (self.replaced, after, update.replaced),
                                    (self.removed, before, update.removed), (self.added, after, update.added)]:
            for resource in found:
                if stack.resources[resource]["Type"] not in FUNCTION_TYPES:
                    group[parameter].add(resource)
        for resource in [*update.replaced, *update.removed]:
            if before.resources[resource]["Type"] in HOLDS_DATA:
                self.data_lost[parameter].add(resource)


def run(source=None, parameter_sets=None, parameters=None):
    """The findings for `source` (template.yaml's, parsed, when None), in `parameter_sets`
    (transform.py's PARAMETER_SETS when None), for `parameters` (all when None)."""
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
    source = source or yaml_parse((ROOT / "template.yaml").read_text())
    packaged = transform.packaged(source)
    findings = Findings(source)
    for name, overrides in (parameter_sets or transform.PARAMETER_SETS).items():
        output, reads = translated(packaged, overrides)
        before = Resolved(output, overrides)
        values = transform.parameter_values(source, overrides)
        affected = dependents(output)
        for parameter in parameters or source["Parameters"]:
            current = ",".join(values[parameter]) if isinstance(values[parameter], list) else str(values[parameter])
            for value in alternatives(source, parameter, current):
                changed = {**overrides, parameter: value}
                if transform.refusing_rules(source, changed):
                    continue
                if parameter in reads or "*" in reads:
                    update = Update(before, translated(packaged, changed)[0], changed)
                else:
                    update = Update(before, output, changed, affected[parameter])
                findings.record(name, parameter, value, update)
        findings.failures += [f for f in policy_failures(output) if f not in findings.failures]
    findings.failures += description_failures(source)
    return findings


def policy_failures(output):
    return [f"{r}: holds data or identities and has no {policy}"
            for r, resource in output["Resources"].items() if resource["Type"] in HOLDS_DATA
            for policy in ("DeletionPolicy", "UpdateReplacePolicy") if policy not in resource]


# --- The versions' descriptions.


def worst_length(source, node):
    """(characters, unbounded) of `node`'s longest value (an Fn::Sub, Fn::If, Ref or text), where
    `unbounded` lists the parameters it names whose length the template does not bound."""
    if isinstance(node, str):
        return len(node), []
    (function, argument), = node.items()
    if function == "Ref":
        longest = longest_value(source["Parameters"][argument]) if argument in source["Parameters"] else None
        return (0, [argument]) if longest is None else (longest, [])
    if function == "Fn::If":
        return max((worst_length(source, branch) for branch in argument[1:]),
                   key=lambda worst: worst[0] + len(worst[1]) * UNBOUNDED_DIGITS)
    if function == "Fn::Sub":
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        characters, unbounded = len(re.sub(r"\$\{[^}]*\}", "", text)), []
        for reference in re.findall(r"\$\{([^}]*)\}", text):
            length, names = worst_length(source, variables.get(reference, {"Ref": reference}))
            characters, unbounded = characters + length, unbounded + names
        return characters, unbounded
    raise ValueError(f"a description this does not read: {function}")


def descriptions(source):
    """Each aliased function's VersionDescription (SAM's), None when it has none."""
    return {name: resource["Properties"].get("VersionDescription")
            for name, resource in source["Resources"].items()
            if resource["Type"] == "AWS::Serverless::Function" and "AutoPublishAlias" in resource["Properties"]}


def unbounded_digits(source):
    """{function: how many digits each Number without MaxValue it names may have for its version's
    description to fit Lambda's 256 characters} (None: it names none)."""
    room = {}
    for function, description in descriptions(source).items():
        characters, unbounded = worst_length(source, description or "")
        room[function] = (DESCRIPTION_LIMIT - characters) // len(unbounded) if unbounded else None
    return room


def description_failures(source):
    failures = []
    for function, description in descriptions(source).items():
        characters, unbounded = worst_length(source, description or "")
        strangers = [name for name in unbounded if name not in source["Parameters"]]
        if strangers:
            failures.append(f"{function}: its VersionDescription names {', '.join(strangers)}, which is no parameter")
        texts = [name for name in unbounded if source["Parameters"].get(name, {}).get("Type", "Number") != "Number"]
        if texts:
            failures.append(f"{function}: its VersionDescription names {', '.join(texts)}, whose length the template "
                            f"does not bound: give it a MaxLength or a bounded AllowedPattern")
        longest = characters + len(unbounded) * UNBOUNDED_DIGITS
        if longest > DESCRIPTION_LIMIT:
            failures.append(f"{function}: its VersionDescription may have {longest} characters (each Number without "
                            f"MaxValue at {UNBOUNDED_DIGITS} digits), more than Lambda's {DESCRIPTION_LIMIT}")
    return failures


# --- docs/DEPLOY.md's table.


def traffic(how):
    """When a function's traffic has a change, as the table says it."""
    if how == "latest":
        return "at once (`$LATEST`)"
    if how == "function":
        return "at once (a setting of the function, not of a version)"
    if how in ("replaced", "added", "removed"):
        return how
    _, shifted = how
    if shifted is None or not shifted[1]:
        return "a new version, at once"
    configuration, minutes = shifted
    return f"a new version, then `{configuration}` ({minutes} min)"


def named(resource, data):
    return f"**`{resource}`**" if resource in data else f"`{resource}`"


def changes(findings, parameter):
    """The table's last column for `parameter`."""
    data = findings.data_lost[parameter]
    removed, added = findings.removed[parameter], findings.added[parameter]
    cell = [named(r, data) for r in sorted(findings.replaced[parameter])]
    for resource in sorted(removed | added):
        verb = "removes or adds" if resource in removed and resource in added else "removes" if resource in removed else "adds"
        cell.append(f"{verb} {named(resource, data)}")
    cell += [f"refused where it replaces `{r}`, under the name the template gives it" for r in sorted(findings.refused[parameter])]
    return ", ".join(cell) or "-"


def reach(findings, parameter):
    """The table's second column for `parameter`."""
    if not findings.tried[parameter]:
        return "not tried: the template allows no other value of it alone (its Rules)"
    functions_by_traffic = defaultdict(list)
    for function, hows in findings.reached[parameter].items():
        functions_by_traffic[" or ".join(sorted({traffic(how) for how in hows}))].append(function)
    ranked = sorted(functions_by_traffic.items(), key=lambda item: (traffic_rank(item[0]), item[0]))
    return "; ".join(f"{', '.join(f'`{f}`' for f in sorted(functions))}: {when}" for when, functions in ranked) or "no function"


def traffic_rank(when):
    """The canary first, then a new version at once, then at once, then the rest."""
    return next((rank for rank, words in enumerate(("then", "a new version", "at once")) if words in when), 3)


def table(findings):
    source = findings.source
    digits = [d for d in unbounded_digits(source).values() if d is not None]
    shifts = ", ".join(f"`{name}` {minutes} min" if minutes else f"`{name}` at once"
                       for name, minutes in deployment_shifts(source))
    lines = [
        f"Generated by `scripts/updates.py --write`: each parameter changed alone, from every parameter set "
        f"`scripts/transform.py` transforms, to the other values it allows. The functions whose configuration it "
        f"changes, and when their traffic has it: a new version, then CodeDeploy's shift (`DeploymentType`: {shifts}); "
        f"a new version at once (no canary); or at once, for a function without an alias (`$LATEST`) or a setting "
        f"Lambda keeps per function. Then what else it modifies, and what it replaces (a createOnly property changes), "
        f"removes or adds (a condition flips); the functions' versions and aliases are left to the second column. In "
        f"bold, what holds data or identities, which its DeletionPolicy and UpdateReplacePolicy keep. A version's "
        f"description names the values its function's "
        f"configuration depends on, within Lambda's {DESCRIPTION_LIMIT} characters while each Number without a "
        f"MaxValue has at most {min(digits) if digits else '-'} digits; with a longer one CloudFormation refuses the "
        f"version, and the update rolls back.",
        "",
        "| parameter | functions it reaches, and when their traffic has it | modifies | replaces, removes or adds |",
        "|---|---|---|---|",
    ]
    for parameter in source["Parameters"]:
        modified = ", ".join(f"`{r}`" for r in sorted(findings.modified[parameter])) or "-"
        lines.append(f"| `{parameter}` | {reach(findings, parameter)} | {modified} | {changes(findings, parameter)} |")
    return "\n".join(lines) + "\n"


def deployment_shifts(source):
    """(configuration, minutes) for each DeploymentType the template allows."""
    allowed = source["Parameters"].get("DeploymentType", {}).get("AllowedValues", [])
    return [(name, shift_minutes(name)) for name in allowed]


def replaced_block(text, block):
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + block + text[end:]


def data_loss_failures(findings, document):
    """Data holders a change replaces or removes that DEPLOY.md's table does not name in bold on
    that parameter's row."""
    rows = {}
    if BEGIN in document and END in document:
        for line in document[document.index(BEGIN):document.index(END)].splitlines():
            match = re.match(r"\| `([A-Za-z0-9]+)` \|", line)
            if match:
                rows[match[1]] = line
    return [f"{parameter}: replaces or removes {resource}, which holds data or identities, and docs/DEPLOY.md's table does not say so"
            for parameter, resources in findings.data_lost.items() for resource in sorted(resources)
            if f"`{resource}`**" not in rows.get(parameter, "")]


def main(argv):
    findings = run()
    document = DEPLOY_MD.read_text()
    failures = list(findings.failures)
    if BEGIN not in document or END not in document:
        failures.append(f"docs/DEPLOY.md has no {BEGIN} ... {END} block")
    else:
        derived = replaced_block(document, table(findings))
        if argv[1:] == ["--write"]:
            DEPLOY_MD.write_text(derived)
            document = derived
        elif derived != document:
            failures.append("docs/DEPLOY.md's table of parameter updates is not what scripts/updates.py derives: run it with --write")
        failures += data_loss_failures(findings, document)
    for failure in failures:
        print(failure)
    print(f"{len(findings.stale)} parameter -> function pairs reach a function's configuration without a new version; "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
