#!/usr/bin/env python3
"""make preflight: the account's quotas against the parameters `make deploy` is about to use.

Reads, with the AWS CLI, the account's Lambda concurrency (`lambda get-account-settings`), API
Gateway's account-level throttling (`apigateway get-account` and Service Quotas), DynamoDB's
table-level throughput quotas, ElastiCache's regional quotas and what already counts against them,
and (GrabCompute managed-instances) EC2's On-Demand vCPU quota. Compares them with the parameters
of template.yaml as they would be deployed: the template's defaults, then samconfig.toml's
`parameter_overrides`, then KEY=VALUE arguments. Prints one line per check, what blocks the deploy
first and what limits a campaign after, then which quota to raise first.

Exit status: 1 when the deploy would be refused (or a setting would exceed what AWS applies),
0 otherwise, 2 on a usage error or when the AWS CLI answered nothing at all.

The comparison is pure (`compare`): it takes the parameters, the template's text and the CLI's
answers, so scripts/tests/test_preflight.py runs it on answers recorded in the shapes the AWS CLI
documents. `--answers DIR` does the same from the command line.

Python 3.11 standard library only; the AWS CLI (`aws`, v1 or v2) does the calls.
"""

import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# --- What AWS documents (DEPLOY.md's quota table cites each). -------------------------------

# Lambda keeps this much of the account's concurrency unreserved: a reservation that would leave
# less is refused (PutFunctionConcurrency; CloudFormation fails the function's create or update).
LAMBDA_MIN_UNRESERVED = 100

# Service Quotas codes. Where a code is not found, the quota is looked for by name in
# list-service-quotas, and then among AWS's defaults.
Q_LAMBDA_CONCURRENCY = ("lambda", "L-B99A9384", "Concurrent executions")
Q_APIGW_RATE = ("apigateway", "L-8A5B8E43", "Throttle rate")
Q_APIGW_BURST = ("apigateway", "L-CDF5615A", "Throttle burst rate")
Q_DDB_TABLE_READ = ("dynamodb", "L-CF0CBE56", "Table-level read throughput limit")
Q_DDB_TABLE_WRITE = ("dynamodb", "L-AB614373", "Table-level write throughput limit")
Q_EC_SERVERLESS = ("elasticache", "L-BBCDAECC", "Serverless Caches per Region")
Q_EC_NODES = ("elasticache", "L-DFE45DF3", "Nodes per Region")
Q_EC2_STANDARD_VCPU = ("ec2", "L-1216C47A", "Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances")
QUOTA_NAMES = {f"{service} {code}": name for service, code, name in (
    Q_LAMBDA_CONCURRENCY, Q_APIGW_RATE, Q_APIGW_BURST, Q_DDB_TABLE_READ, Q_DDB_TABLE_WRITE, Q_EC_SERVERLESS,
    Q_EC_NODES, Q_EC2_STANDARD_VCPU)}

# --- Estimates (not measured in AWS; stated in every line that uses them). -------------------

# Seconds one invocation holds an execution environment. Grab: one Redis script call inside the
# VPC (DEPLOY.md's cost table assumes ~4 ms billed). The other routes: DynamoDB calls (send
# measured 70 ms p50 against DynamoDB Local, BENCHMARKS.md).
GRAB_SECONDS = 0.010
OTHER_ROUTE_SECONDS = 0.100
# Settle: two one-minute schedules, each invocation draining 50 s; funds: one daily job.
SETTLE_EXECUTIONS = 2
FUNDS_EXECUTIONS = 1
# DynamoDB write request units per grab settle persists (DEPLOY.md's cost table: the claim, then
# the credit and balance in a transaction; without the wallet the claim, the grab item and its
# index entry).
WRU_PER_GRAB = {"wallet": 5, "none": 3}
# Read request units per read request (a GetItem, or a page of history under 4 KB).
RRU_PER_READ = 1

DEPLOY = "deploy"
CAMPAIGN = "campaign"


# --- template.yaml, read without a YAML library (only the shapes this template uses). ---------

def _section(text, name):
    """The lines of a top-level section (`Parameters:`, `Conditions:`, `Resources:`)."""
    lines, inside = [], False
    for line in text.splitlines():
        if re.match(r"^[A-Za-z]", line):
            inside = line.rstrip() == f"{name}:"
            continue
        if inside:
            lines.append(line)
    return lines


def _scalar(value):
    value = value.split(" #", 1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def template_defaults(text):
    """{parameter: its Default as a string} ("" for a parameter without one)."""
    params, current = {}, None
    for line in _section(text, "Parameters"):
        m = re.match(r"^  ([A-Za-z0-9]+):\s*$", line)
        if m:
            current = m.group(1)
            params[current] = ""
            continue
        m = re.match(r"^    Default:\s*(.*)$", line)
        if m and current:
            params[current] = _scalar(m.group(1))
    return params


def template_conditions(text):
    """{condition: (parameter, value, negated)} for `!Equals [!Ref P, v]` and its `!Not`."""
    conditions = {}
    for line in _section(text, "Conditions"):
        m = re.match(r"^  ([A-Za-z0-9]+):\s*(!Not\s*\[\s*)?!Equals\s*\[\s*!Ref\s+([A-Za-z0-9]+)\s*,\s*([^\]]*?)\s*\]", line)
        if m:
            conditions[m.group(1)] = (m.group(3), _scalar(m.group(4)), bool(m.group(2)))
    return conditions


def condition_holds(conditions, name, params):
    """Whether a condition holds; one this reader cannot evaluate counts as holding."""
    if name not in conditions:
        return True
    param, value, negated = conditions[name]
    equal = str(params.get(param, "")) == value
    return equal != negated


def _resources(text):
    """[(logical id, [its lines])] of the Resources section."""
    resources = []
    for line in _section(text, "Resources"):
        m = re.match(r"^  ([A-Za-z0-9]+):\s*$", line)
        if m:
            resources.append((m.group(1), []))
        elif resources:
            resources[-1][1].append(line)
    return resources


def reservations(text, params):
    """{function: (concurrency it reserves, the parameter that sets it or None)} for every
    function the parameters create, from its ReservedConcurrentExecutions line: a number, a
    `!Ref P`, or `!If [Condition, !Ref P, !Ref AWS::NoValue]`."""
    conditions = template_conditions(text)
    reserved = {}
    for name, lines in _resources(text):
        body = "\n".join(lines)
        if not re.search(r"^    Type: AWS::(Serverless|Lambda)::Function\s*$", body, re.M):
            continue
        m = re.search(r"^    Condition:\s*(\S+)", body, re.M)
        if m and not condition_holds(conditions, m.group(1), params):
            continue
        m = re.search(r"^      ReservedConcurrentExecutions:\s*(.+)$", body, re.M)
        if not m:
            continue
        value = m.group(1).strip()
        literal = re.fullmatch(r"(\d+)", value)
        ref = re.fullmatch(r"!Ref\s+([A-Za-z0-9]+)", value)
        cond = re.fullmatch(r"!If\s*\[\s*([A-Za-z0-9]+)\s*,\s*!Ref\s+([A-Za-z0-9]+)\s*,\s*!Ref\s+AWS::NoValue\s*\]", value)
        if literal:
            reserved[name] = (int(literal.group(1)), None)
        elif ref:
            reserved[name] = (int(params[ref.group(1)]), ref.group(1))
        elif cond:
            if condition_holds(conditions, cond.group(1), params):
                reserved[name] = (int(params[cond.group(2)]), cond.group(2))
        else:
            raise ValueError(f"{name}: ReservedConcurrentExecutions {value!r} is not a form preflight reads")
    return {name: r for name, r in reserved.items() if r[0] > 0}


def http_routes(text):
    """The HTTP API's routes, {(method, path)}, from the functions' HttpApi events."""
    routes = set()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\s+Type:\s*HttpApi\s*$", line):
            method = path = None
            for following in lines[i + 1:i + 8]:
                m = re.match(r"^\s+Method:\s*(\S+)", following)
                if m:
                    method = m.group(1).upper()
                m = re.match(r"^\s+Path:\s*(\S+)", following)
                if m:
                    path = m.group(1)
            if method and path:
                routes.add((method, path))
    return routes


# The HttpApi stage's throttling limits: (what preflight calls them, the setting's key).
THROTTLE_KEYS = (("rate", "ThrottlingRateLimit"), ("burst", "ThrottlingBurstLimit"))
DEFAULT_ROUTE_SETTINGS = "DefaultRouteSettings"


def _indent(line):
    return len(line) - len(line.lstrip())


def _children(lines, start):
    """The lines nested under lines[start] (deeper indented, up to the next line that is not),
    without blank and comment lines."""
    children = []
    for line in lines[start + 1:]:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if _indent(line) <= _indent(lines[start]):
            break
        children.append(line)
    return children


def _key(line):
    """(key, value text) of a `key: value` line, the key unquoted; None for another line."""
    m = re.match(r"^\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9$_]+):(?:\s+(.*?))?\s*$", line)
    if not m:
        return None
    return _scalar(m.group(1)), (m.group(2) or "").split(" #", 1)[0].strip()


def _settings(lines, start):
    """{ThrottlingRateLimit: value text, ...} of the mapping under lines[start]: its nested lines,
    or a flow mapping (`{ K: v, K2: v2 }`) on the line itself."""
    _, value = _key(lines[start])
    if value.startswith("{") and value.endswith("}"):
        items = [i for i in value[1:-1].split(",") if i.strip()]
    else:
        children = _children(lines, start)
        depth = min((_indent(l) for l in children), default=0)
        items = [l for l in children if _indent(l) == depth]
    settings = {}
    for item in items:
        kv = _key(item)
        if kv:
            settings[kv[0]] = kv[1]
    return settings


def stage_throttling(text):
    """The throttling the HttpApi's stage writes, as the template writes it: [(route key, {"rate":
    value text, "burst": value text})], RouteSettings' entries in the template's order, then
    DEFAULT_ROUTE_SETTINGS (the key under which DefaultRouteSettings is listed). A limit a
    setting does not write is absent from its dict. Read from the template's one
    AWS::Serverless::HttpApi (RouteSettings an HttpApi event would add are not read)."""
    for _, lines in _resources(text):
        if not any(re.match(r"^    Type:\s*AWS::Serverless::HttpApi\s*$", l) for l in lines):
            continue
        entries, default = [], {}
        for i, line in enumerate(lines):
            if re.match(r"^      DefaultRouteSettings:", line):
                default = _settings(lines, i)
            elif re.match(r"^      RouteSettings:\s*$", line):
                depth = None
                for j in range(i + 1, len(lines)):
                    if not lines[j].strip() or lines[j].lstrip().startswith("#"):
                        continue
                    if _indent(lines[j]) <= _indent(line):
                        break
                    depth = _indent(lines[j]) if depth is None else depth
                    if _indent(lines[j]) == depth and _key(lines[j]):
                        entries.append((_key(lines[j])[0], _settings(lines, j)))
        return [(key, {kind: s[name] for kind, name in THROTTLE_KEYS if name in s})
                for key, s in entries + [(DEFAULT_ROUTE_SETTINGS, default)]]
    return [(DEFAULT_ROUTE_SETTINGS, {})]


def _limit(value, params, where):
    """(the limit, the parameter that sets it or None) of a setting's value: `!Ref P` or a number."""
    ref = re.fullmatch(r"!Ref\s+([A-Za-z0-9]+)", value)
    if ref:
        if ref.group(1) not in params:
            raise ValueError(f"{where}: throttling {value!r} is not a parameter of template.yaml")
        return float(params[ref.group(1)]), ref.group(1)
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value), None
    raise ValueError(f"{where}: throttling {value!r} is not a form preflight reads")


def throttle_limits(text, params):
    """Every throttling limit the stage sets, once each: [(kind, value, its name)], the name its
    parameter's (or, for a number written in the template, the setting's), in stage_throttling's
    order, each setting's rate before its burst."""
    limits, seen = [], set()
    for key, written in stage_throttling(text):
        for kind, name in THROTTLE_KEYS:
            if kind not in written:
                continue
            where = DEFAULT_ROUTE_SETTINGS if key == DEFAULT_ROUTE_SETTINGS else f'RouteSettings "{key}"'
            value, param = _limit(written[kind], params, where)
            label = param or f"{where} {name}"
            if label not in seen:
                seen.add(label)
                limits.append((kind, value, label))
    return limits


def route_throttles(text, params):
    """{(method, path): {"rate": (value, name), "burst": (value, name)}} for every route of the
    HTTP API: its RouteSettings entry ("METHOD /path"), else DefaultRouteSettings, limit by limit
    (a limit its entry does not write is the default's). Names as throttle_limits'. A route with
    no rate anywhere is refused: only the account would throttle it."""
    written = stage_throttling(text)
    default = dict(written)[DEFAULT_ROUTE_SETTINGS]
    by_key = {key: s for key, s in written if key != DEFAULT_ROUTE_SETTINGS}
    throttles = {}
    for method, path in sorted(http_routes(text)):
        key = f"{method} {path}"
        own = by_key.get(key, {})
        throttle = {}
        for kind, name in THROTTLE_KEYS:
            if kind in own:
                where, value = f'RouteSettings "{key}"', own[kind]
            elif kind in default:
                where, value = DEFAULT_ROUTE_SETTINGS, default[kind]
            else:
                continue
            limit, param = _limit(value, params, where)
            throttle[kind] = (limit, param or f"{where} {name}")
        if "rate" not in throttle:
            raise ValueError(f"{key}: no ThrottlingRateLimit in the HttpApi's RouteSettings or DefaultRouteSettings")
        throttles[(method, path)] = throttle
    return throttles


def rate_sum(throttles, order=()):
    """(requests/s of these routes at their rate limits, the parts in words): one part per limit,
    "GrabRateLimit 5,000" or "ApiRateLimit 800 x 6 routes", in `order` (limits' names)."""
    groups = {}
    for route in throttles.values():
        value, name = route["rate"]
        groups[name] = (value, groups.get(name, (value, 0))[1] + 1)
    rank = {name: i for i, name in enumerate(order)}
    names = sorted(groups, key=lambda name: (rank.get(name, len(rank)), name))
    parts = [f"{name} {_n(groups[name][0])}" + (f" x {groups[name][1]} routes" if groups[name][1] > 1 else "")
             for name in names]
    return sum(value * count for value, count in groups.values()), " + ".join(parts) or "no routes"


def cache_nodes(text, waits_for_replicas=False):
    """Nodes the replication group of CacheMode nodes holds: shards x (1 primary + replicas). The
    replicas are a number, or `!If [WaitsForReplicas, <with>, <without>]` (GrabWaitReplicas > 0)."""
    shards = re.search(r"^\s+NumNodeGroups:\s*(\d+)", text, re.M)
    replicas = re.search(r"^\s+ReplicasPerNodeGroup:\s*(\d+)", text, re.M)
    chosen = re.search(r"^\s+ReplicasPerNodeGroup:\s*!If \[WaitsForReplicas, (\d+), (\d+)\]", text, re.M)
    count = int(replicas.group(1)) if replicas else 1
    if chosen:
        count = int(chosen.group(1) if waits_for_replicas else chosen.group(2))
    return int(shards.group(1) if shards else 2) * (1 + count)


# --- The parameters about to be deployed. --------------------------------------------------

def parse_overrides(value):
    """SAM's parameter_overrides: `Key=Value Key2="a b"` (one string), or a list of KEY=VALUE
    (samconfig.toml's list form, or arguments the shell already split)."""
    items = value if isinstance(value, list) else shlex.split(value or "")
    overrides = {}
    for item in items:
        key, sep, val = item.partition("=")
        if not sep:
            raise ValueError(f"parameter override {item!r} is not KEY=VALUE")
        overrides[key.strip()] = val
    return overrides


def samconfig_overrides(text, env="default"):
    """parameter_overrides of samconfig.toml's deploy command (else its global section)."""
    config = tomllib.loads(text).get(env, {})
    for command in ("deploy", "global"):
        value = config.get(command, {}).get("parameters", {}).get("parameter_overrides")
        if value:
            return parse_overrides(value)
    return {}


def deployed_parameters(template_text, samconfig_text, arguments, env="default"):
    """Template defaults, then samconfig.toml's overrides, then KEY=VALUE arguments."""
    params = template_defaults(template_text)
    layers = [("samconfig.toml", samconfig_overrides(samconfig_text, env) if samconfig_text else {}),
              ("the command line", parse_overrides(list(arguments)) if arguments else {})]
    for where, overrides in layers:
        for key, value in overrides.items():
            if key not in params:
                raise ValueError(f"{key} (from {where}) is not a parameter of template.yaml")
            params[key] = value
    return params


# --- The AWS CLI's answers. ----------------------------------------------------------------

def answer_key(args):
    """The name an answer is recorded under: the command's words and its option values."""
    return ".".join(a for a in args if not a.startswith("--"))


class RecordedAnswers:
    """Answers read from JSON files named by answer_key, later directories over earlier ones."""

    def __init__(self, *directories):
        self.directories = directories

    def __call__(self, args):
        key = answer_key(args)
        for directory in reversed(self.directories):
            path = os.path.join(directory, key + ".json")
            if os.path.exists(path):
                with open(path) as f:
                    return json.load(f)
        return None


class LiveAnswers:
    """Answers from the AWS CLI; a failed call answers None and is kept in `errors`."""

    def __init__(self, aws="aws", region=None, profile=None):
        self.base = [aws, "--output", "json"]
        if region:
            self.base += ["--region", region]
        if profile:
            self.base += ["--profile", profile]
        self.errors = {}
        self.calls = 0

    def __call__(self, args):
        self.calls += 1
        try:
            done = subprocess.run(self.base + list(args), capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            self.errors[answer_key(args)] = str(e)
            return None
        if done.returncode != 0:
            lines = [l for l in done.stderr.strip().splitlines() if l.strip()]
            self.errors[answer_key(args)] = lines[-1] if lines else f"exit {done.returncode}"
            return None
        return json.loads(done.stdout or "{}")


@dataclass
class Fact:
    value: float | None
    source: str


def quota(ask, spec, listed=None):
    """A quota's applied value: get-service-quota, else list-service-quotas (by code, then by
    name), else AWS's default (get-aws-default-service-quota)."""
    service, code, name = spec
    got = ask(["service-quotas", "get-service-quota", "--service-code", service, "--quota-code", code])
    if got and "Quota" in got and got["Quota"].get("Value") is not None:
        return Fact(float(got["Quota"]["Value"]), f"{service} {code}")
    if listed is not None:
        if service not in listed:
            listed[service] = ask(["service-quotas", "list-service-quotas", "--service-code", service]) or {}
        entries = listed[service].get("Quotas", [])
        for entry in entries:
            if entry.get("QuotaCode") == code and entry.get("Value") is not None:
                return Fact(float(entry["Value"]), f"{service} {code}")
        for entry in entries:
            if entry.get("QuotaName", "").lower() == name.lower() and entry.get("Value") is not None:
                return Fact(float(entry["Value"]), f"{service} {entry.get('QuotaCode', code)}")
    got = ask(["service-quotas", "get-aws-default-service-quota", "--service-code", service, "--quota-code", code])
    if got and "Quota" in got and got["Quota"].get("Value") is not None:
        return Fact(float(got["Quota"]["Value"]), f"{service} {code}, AWS's default (no applied value)")
    return Fact(None, f"{service} {code}")


def gather(ask, params):
    """Everything compare() reads, from the CLI's answers (None where a call did not answer)."""
    listed = {}
    facts = {}
    settings = ask(["lambda", "get-account-settings"]) or {}
    limit = settings.get("AccountLimit", {})
    facts["lambda_concurrency"] = Fact(limit.get("ConcurrentExecutions"), "lambda get-account-settings")
    facts["lambda_unreserved"] = Fact(limit.get("UnreservedConcurrentExecutions"), "lambda get-account-settings")
    if facts["lambda_concurrency"].value is None:
        facts["lambda_concurrency"] = quota(ask, Q_LAMBDA_CONCURRENCY, listed)

    # API Gateway: the rate is a Service Quotas quota; the burst AWS derives from it and shows in
    # the account's throttle settings.
    account = (ask(["apigateway", "get-account"]) or {}).get("throttleSettings", {})
    facts["api_rate"] = quota(ask, Q_APIGW_RATE, listed)
    if facts["api_rate"].value is None and account.get("rateLimit") is not None:
        facts["api_rate"] = Fact(float(account["rateLimit"]), "apigateway get-account")
    if account.get("burstLimit") is not None:
        facts["api_burst"] = Fact(float(account["burstLimit"]), "apigateway get-account")
    else:
        facts["api_burst"] = quota(ask, Q_APIGW_BURST, listed)

    facts["ddb_table_read"] = quota(ask, Q_DDB_TABLE_READ, listed)
    facts["ddb_table_write"] = quota(ask, Q_DDB_TABLE_WRITE, listed)

    stage = params.get("Stage", "prod")
    if params.get("CacheMode") == "nodes":
        facts["ec_nodes"] = quota(ask, Q_EC_NODES, listed)
        clusters = ask(["elasticache", "describe-cache-clusters"])
        groups = ask(["elasticache", "describe-replication-groups"])
        facts["ec_nodes_used"] = Fact(
            None if clusters is None else sum(int(c.get("NumCacheNodes", 1)) for c in clusters.get("CacheClusters", [])),
            "elasticache describe-cache-clusters")
        facts["ec_ours_exists"] = Fact(
            None if groups is None else float(any(g.get("Description") == f"red-packets-{stage}" for g in groups.get("ReplicationGroups", []))),
            "elasticache describe-replication-groups")
    else:
        facts["ec_serverless"] = quota(ask, Q_EC_SERVERLESS, listed)
        caches = ask(["elasticache", "describe-serverless-caches"])
        names = None if caches is None else [c.get("ServerlessCacheName") for c in caches.get("ServerlessCaches", [])]
        facts["ec_serverless_used"] = Fact(None if names is None else len(names), "elasticache describe-serverless-caches")
        facts["ec_ours_exists"] = Fact(None if names is None else float(f"red-packets-{stage}" in names),
                                       "elasticache describe-serverless-caches")

    if params.get("GrabCompute") == "managed-instances":
        facts["ec2_vcpu"] = quota(ask, Q_EC2_STANDARD_VCPU, listed)
    return facts


# --- The comparison. ---------------------------------------------------------------------------

@dataclass
class Check:
    kind: str            # DEPLOY (refused, or a setting AWS will not apply) or CAMPAIGN
    what: str            # the quota or limit, in words
    quota: str           # "service code", as Service Quotas names it ("" when none applies)
    have: float | None   # the account's value (None: the CLI did not answer)
    need: float          # what these parameters need
    why: str             # where the need comes from
    remedy: str = ""     # what to do instead of (or besides) raising the quota
    status: str = field(init=False, default="")

    def __post_init__(self):
        self.status = "unknown" if self.have is None else ("ok" if self.have >= self.need else "raise")


def _n(value):
    return "?" if value is None else f"{value:,.0f}"


def compare(params, template_text, facts):
    """The checks, in the order to act on them: what blocks the deploy, then what limits a
    campaign."""
    p = params
    checks = []
    reserved = reservations(template_text, p)
    reserved_total = sum(r for r, _ in reserved.values())
    concurrency = facts["lambda_concurrency"].value
    unreserved = facts["lambda_unreserved"].value
    held_elsewhere = (concurrency - unreserved) if concurrency is not None and unreserved is not None else 0
    who = ", ".join(f"{param or name}={r}" for name, (r, param) in sorted(reserved.items())) or "nothing"

    # Lambda: a reservation that would leave less than 100 unreserved is refused.
    if reserved_total:
        need = LAMBDA_MIN_UNRESERVED + reserved_total + held_elsewhere
        why = (f"{who} reserved by this stack, {_n(held_elsewhere)} by other functions of the account, and "
               f"Lambda keeps {LAMBDA_MIN_UNRESERVED} unreserved")
    else:
        need, why = 0, "nothing reserved by this stack, so no unreserved minimum to keep"
    checks.append(Check(DEPLOY, "Lambda concurrent executions", "lambda L-B99A9384", concurrency, need, why,
                        remedy="or set the *ReservedConcurrency parameters to 0" if reserved_total else ""))

    # API Gateway: a route's throttling cannot exceed the account's. Every limit the stage sets
    # (RouteSettings' and DefaultRouteSettings'), its bursts first.
    throttles = route_throttles(template_text, p)
    limits = throttle_limits(template_text, p)
    rate, burst = facts["api_rate"].value, facts["api_burst"].value
    for kind, value, param in sorted(limits, key=lambda limit: limit[0] != "burst"):
        burst_check = kind == "burst"
        have = burst if burst_check else rate
        what = "API Gateway account burst" if burst_check else "API Gateway account rate"
        remedy = (f"lower {param} to {_n(have)} (AWS sets the burst from the rate quota, apigateway L-8A5B8E43; "
                  f"it is not raised on its own)" if burst_check and have is not None
                  else f"or lower {param} to {_n(have)}" if have is not None else "")
        checks.append(Check(DEPLOY, what, "" if burst_check else "apigateway L-8A5B8E43", have, value,
                            f"{param}={_n(value)}: a route's throttling cannot exceed the account's", remedy=remedy))

    # ElastiCache: one more serverless cache, or the replication group's nodes, in the Region.
    exists = facts.get("ec_ours_exists", Fact(None, "")).value
    stage = p.get("Stage", "prod")
    if p.get("CacheMode") == "nodes":
        used, limit = facts["ec_nodes_used"].value, facts["ec_nodes"].value
        new = 0 if exists else cache_nodes(template_text, p.get("GrabWaitReplicas", "0") not in ("", "0"))
        have = None if used is None or limit is None else limit
        checks.append(Check(DEPLOY, "ElastiCache nodes per Region", "elasticache L-DFE45DF3", have,
                            (used or 0) + new,
                            f"{_n(used)} nodes in the Region, {new} more for red-packets-{stage} (CacheMode=nodes)"))
    else:
        used, limit = facts["ec_serverless_used"].value, facts["ec_serverless"].value
        new = 0 if exists else 1
        have = None if used is None or limit is None else limit
        checks.append(Check(DEPLOY, "ElastiCache serverless caches per Region", "elasticache L-BBCDAECC", have,
                            (used or 0) + new,
                            f"{_n(used)} serverless caches in the Region, {new} more for red-packets-{stage}"))

    # Campaign: Lambda concurrency for the routes' rates (Little's law on estimated durations),
    # each route at its own rate limit.
    order = [name for kind, _, name in limits if kind == "rate"]
    grab_routes = {r: t for r, t in throttles.items() if r[1].endswith("/grab")}
    other_routes = {r: t for r, t in throttles.items() if r not in grab_routes}
    grab_rate, grab_parts = rate_sum(grab_routes, order)
    other_rate, other_parts = rate_sum(other_routes, order)
    parts = []
    on_lambda = p.get("GrabCompute", "lambda") == "lambda"
    grab_need = math.ceil(grab_rate * GRAB_SECONDS) if on_lambda else 0
    if on_lambda:
        parts.append(f"grab {_n(grab_rate)}/s x {GRAB_SECONDS * 1000:.0f} ms = {grab_need}")
    other_need = math.ceil(other_rate * OTHER_ROUTE_SECONDS)
    parts.append(f"{len(other_routes)} other routes {_n(other_rate)}/s ({other_parts}) "
                 f"x {OTHER_ROUTE_SECONDS * 1000:.0f} ms = {other_need}")
    settle = reserved.get("SettleFunction", (SETTLE_EXECUTIONS, None))[0]
    parts.append(f"settle {settle}, funds {FUNDS_EXECUTIONS}")
    need = grab_need + other_need + settle + FUNDS_EXECUTIONS + held_elsewhere
    if reserved_total:
        need = max(need, LAMBDA_MIN_UNRESERVED + reserved_total + held_elsewhere)
    if held_elsewhere:
        parts.append(f"{_n(held_elsewhere)} reserved by other functions")
    checks.append(Check(CAMPAIGN, "Lambda concurrent executions at the throttle rates", "lambda L-B99A9384",
                        concurrency, need, "estimate: " + ", ".join(parts)))

    total_rate, total_parts = rate_sum(throttles, order)
    checks.append(Check(CAMPAIGN, "API Gateway account rate, all routes at their limits", "apigateway L-8A5B8E43",
                        rate, total_rate, total_parts))

    wru = WRU_PER_GRAB.get(p.get("Funds", "wallet"), WRU_PER_GRAB["wallet"])
    checks.append(Check(CAMPAIGN, "DynamoDB table-level write throughput", "dynamodb L-AB614373",
                        facts["ddb_table_write"].value, grab_rate * wru,
                        f"settle persisting {grab_parts} grabs/s x {wru} WRU (Funds={p.get('Funds', 'wallet')})"))
    read_routes = {r: t for r, t in other_routes.items() if r[0] == "GET"}
    read_rate, read_parts = rate_sum(read_routes, order)
    checks.append(Check(CAMPAIGN, "DynamoDB table-level read throughput", "dynamodb L-CF0CBE56",
                        facts["ddb_table_read"].value, read_rate * RRU_PER_READ,
                        f"{len(read_routes)} read routes ({read_parts}) x ~{RRU_PER_READ} RRU"))

    if not on_lambda:
        checks.append(Check(CAMPAIGN, "EC2 On-Demand Standard vCPUs (Lambda Managed Instances)", "ec2 L-1216C47A",
                            facts["ec2_vcpu"].value, float(p["GrabMaxVCpuCount"]),
                            f"GrabMaxVCpuCount={p['GrabMaxVCpuCount']} (other instances of the account count too)",
                            remedy=f"or lower GrabMaxVCpuCount to {_n(facts['ec2_vcpu'].value)}"))
    return checks


def render(checks):
    """(lines to print, exit status)."""
    order = {("raise", DEPLOY): 0, ("raise", CAMPAIGN): 1, ("unknown", DEPLOY): 2, ("unknown", CAMPAIGN): 3,
             ("ok", DEPLOY): 4, ("ok", CAMPAIGN): 5}
    lines = ["(deploy: the deploy is refused, or a setting exceeds what AWS applies; campaign: caps traffic)"]
    for c in sorted(checks, key=lambda c: order[(c.status, c.kind)]):
        label = "deploy  " if c.kind == DEPLOY else "campaign"
        quota = f" [{c.quota}]" if c.quota else ""
        if c.status == "raise":
            action = f"from {_n(c.have)} to {_n(c.need)}" + (f"; {c.remedy}" if c.remedy else "")
            if not c.quota and c.remedy:
                action = f"{_n(c.have)} < {_n(c.need)}: {c.remedy}"
            lines.append(f"raise    {label} {c.what}{quota} {action} ({c.why})")
        elif c.status == "unknown":
            lines.append(f"unknown  {label} {c.what}{quota}: the AWS CLI did not answer; needs {_n(c.need)} ({c.why})")
        else:
            lines.append(f"ok       {label} {c.what}{quota} {_n(c.have)} >= {_n(c.need)} ({c.why})")
    raises = [c for c in checks if c.status == "raise"]
    raises.sort(key=lambda c: order[(c.status, c.kind)])
    # The first quota to raise; a limit no request raises (the API burst) only when nothing else is.
    quotas = [c for c in raises if c.quota]
    if quotas:
        first = quotas[0]
        same = [c for c in quotas if c.quota == first.quota]
        target = max(c.need for c in same)
        deploy_need = max((c.need for c in same if c.kind == DEPLOY), default=None)
        note = f" ({_n(deploy_need)} for the deploy to be accepted)" if deploy_need is not None and deploy_need < target else ""
        name = QUOTA_NAMES.get(first.quota, first.what)
        lines.append(f"first:   raise {first.quota} \"{name}\" from {_n(first.have)} to {_n(target)}{note}")
    elif raises:
        lines.append(f"first:   {raises[0].what}: {raises[0].remedy}")
    else:
        lines.append("first:   nothing to raise")
    blocked = any(c.status == "raise" and c.kind == DEPLOY for c in checks)
    return lines, 1 if blocked else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="template parameters, over samconfig.toml's")
    parser.add_argument("--region")
    parser.add_argument("--profile")
    parser.add_argument("--aws", default="aws", help="the AWS CLI to run (default: aws on PATH)")
    parser.add_argument("--config-env", default="default", help="samconfig.toml's environment (default: default)")
    parser.add_argument("--template", default=os.path.join(ROOT, "template.yaml"))
    parser.add_argument("--samconfig", default=os.path.join(ROOT, "samconfig.toml"))
    parser.add_argument("--answers", action="append", metavar="DIR",
                        help="recorded AWS CLI answers instead of calling AWS (repeatable: later directories win)")
    args = parser.parse_args(argv)

    with open(args.template) as f:
        template_text = f.read()
    samconfig_text = ""
    if os.path.exists(args.samconfig):
        with open(args.samconfig) as f:
            samconfig_text = f.read()
    try:
        params = deployed_parameters(template_text, samconfig_text, args.overrides, args.config_env)
    except ValueError as e:
        print(f"preflight: {e}", file=sys.stderr)
        return 2

    ask = RecordedAnswers(*args.answers) if args.answers else LiveAnswers(args.aws, args.region, args.profile)
    region = args.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "the CLI's configured region"
    try:
        route_throttles(template_text, params)  # a route or setting preflight cannot read: say so first
        throttled = [name for _, _, name in throttle_limits(template_text, params) if name in params]
    except ValueError as e:
        print(f"preflight: {e}", file=sys.stderr)
        return 2
    shown = " ".join(f"{k}={params[k]}" for k in ("Stage", "CacheMode", "Funds", "GrabCompute", *throttled))
    print(f"preflight: {region}; parameters (template defaults, samconfig.toml [{args.config_env}], command line): {shown}")
    facts = gather(ask, params)
    if isinstance(ask, LiveAnswers) and ask.errors and len(ask.errors) == ask.calls:
        print("preflight: the AWS CLI answered nothing; credentials and region? Its last error:", file=sys.stderr)
        print("  " + list(ask.errors.values())[-1], file=sys.stderr)
        return 2
    checks = compare(params, template_text, facts)
    lines, status = render(checks)
    for line in lines:
        print(line)
    if isinstance(ask, LiveAnswers) and ask.errors and any(c.status == "unknown" for c in checks):
        # Calls that failed (some only because a fallback answered instead): why a check is unknown.
        for key, error in ask.errors.items():
            print(f"note:    aws {key.replace('.', ' ')}: {error}")
    return status


if __name__ == "__main__":
    sys.exit(main())
