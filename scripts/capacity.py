#!/usr/bin/env python3
"""docs/CAPACITY.md's tables, computed from the figures `make bench` measured and from template.yaml.

    python3 scripts/capacity.py                  print the tables
    python3 scripts/capacity.py --write FILE     put them between FILE's capacity markers
    python3 scripts/capacity.py --check FILE     fail when FILE's tables are not these

The per-send and per-grab loads come from bench/results/campaign.json (`make bench-campaign`,
also written by `make bench`), bench/results/latest.json and, for the risk function on the bus,
bench/results/controls.json's pattern detection (`make bench-controls`). What the stack is made
of comes from template.yaml as it deploys with its parameters' defaults (`load_deployment`):
which function serves the send and the grab routes and which reads the grab events, each one's
memory and architecture, the routes' throttles (the 1x level), the API's type, the table's billing
mode, the cache's kind and engine, the grab rate's limit, the funds mode, settle's partition pace
and the events Pipe's batch; a template change moves the tables, and a stack the model cannot
price (Lambda Managed Instances, a node-based cache, a provisioned table) is refused, not
mispriced. The limits are AWS's documented defaults, each with its source (LIMITS). Where a
figure is an estimate rather than a measurement, ASSUMPTIONS names it. A new bench run or a
template change moves the tables: re-run --write.
"""

import json
import math
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from built_artifacts import CfnLoader  # noqa: E402  (YAML with CloudFormation's short-form tags)
from cfn import Stack  # noqa: E402  (conditions, !If, !Ref and !Sub for one parameter set)

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- capacity:begin -->", "<!-- capacity:end -->"

# The routes and the event the model prices, found in the template by what they are, not by name.
SEND_ROUTE = ("POST", "/packets")
GRAB_ROUTE = ("POST", "/packets/{packet_id}/grab")
GRAB_EVENT = "GrabRecorded"  # the risk function's per-grab event (docs/RISK.md)

# The load levels: multiples of the template's default throttles (the send and grab routes'
# ThrottlingRateLimit, read by `load_deployment`), and WeChat's 2017 New Year's Eve peak: 760,000
# red packets sent per second, at ten grabs a send.
MULTIPLES = [("1x (the template's throttles)", 1), ("10x", 10), ("100x", 100)]
WECHAT = ("WeChat 2017 peak", 760_000, 10)

# AWS's rules, not the template's: Lambda bills memory in GB of 1,024 MB; a function that
# declares no MemorySize gets 128 MB; one PutEvents request carries at most 10 entries.
MB_PER_GB = 1024
LAMBDA_DEFAULT_MEMORY_MB = 128
PUTEVENTS_MAX_ENTRIES = 10

# Estimates, not measurements: what this project cannot measure without an AWS account.
ASSUMPTIONS = {
    # A grab invocation in AWS: one Redis round trip inside the VPC (docs/DEPLOY.md's estimate).
    "grab_seconds": 0.010,
    # Packet views per grab: none counted. The grab's answer carries what the app shows; an app
    # that opens the packet's view before each grab doubles the grab's requests.
    "views_per_grab": 0,
    # Events per send (PacketSent, WalletDebited, the finalisation's) and per grab (its record).
    "events_per_send": 3,
    "events_per_grab": 1,
    # ElastiCache bills a simple read or write of up to 1 KB one ECPU, and a command that takes
    # more vCPU time proportionally more. One ECPU is taken as the engine CPU of a GET when the
    # network costs nothing (pipelined), measured on this machine's Redis 7.0 with
    # `redis-benchmark -n 1000000 -c 16 -P 16 -q GET k` between two `INFO cpu`: 0.79 to 0.85 us.
    # So a grab's ECPUs are an upper bound: unpipelined, a GET costs 11 us of the same CPU.
    "engine_us_per_ecpu": 0.82,
    # The grab rate across packets (docs/RISK.md), when the template's UserGrabLimit is on (above
    # 0): INCR and EXPIRE NX on the user's counter per grab, two simple commands of a few bytes,
    # one ECPU each. They land in the users' slots, spread over the cache, never in the hot packet's.
    "rate_ecpu_per_counted_grab": 2,
    # The risk function reads every grab's event (docs/RISK.md) when its rule takes GrabRecorded:
    # every packet taken as one the rules read (at most RiskMaxShares shares), an upper bound; a
    # campaign's grabs cost only the invocation. Its time is measured against DynamoDB Local,
    # whose latency stands for AWS's. (Lambda memory is the template's: `load_deployment`.)
}

# us-east-1 list prices, as docs/DEPLOY.md's cost table uses them, keyed by what the template
# chooses where the price depends on it (the API's type, the functions' architecture, the table's
# billing mode, the cache's engine). A choice with no price here is refused.
PRICES = {
    "api_per_million": {"AWS::Serverless::HttpApi": 1.00, "AWS::Serverless::Api": 3.50},
    "lambda_per_million": 0.20,
    "lambda_gb_second": {"arm64": 0.0000133334, "x86_64": 0.0000166667},
    "dynamodb_per_million_wru": {"PAY_PER_REQUEST": 0.625},
    "ecpu_per_million": {"valkey": 0.0023, "redis": 0.0034},
    "events_per_million": 1.00,
}

# AWS's limits on the path: default, whether it can be raised, and where AWS says so. A name's
# {events_per_request} is the Pipe's, from the template.
LIMITS = {
    "api": ("API Gateway requests/s, per account and Region", 10_000, "yes (Service Quotas L-8A5B8E43)",
            "https://docs.aws.amazon.com/apigateway/latest/developerguide/limits.html"),
    "lambda": ("Lambda concurrent executions, per Region", 1_000, "yes (L-B99A9384), to tens of thousands",
               "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"),
    "lambda_scaling": ("Lambda scaling, per function", 1_000, "no: 1,000 environments every 10 s",
                       "https://docs.aws.amazon.com/lambda/latest/dg/scaling-behavior.html"),
    "ecpu_slot": ("ElastiCache Serverless ECPU/s per hash slot (one packet's keys)", 30_000,
                  "no (90,000 reading from replicas)",
                  "https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/RedisConfiguration.html"),
    "ecpu_cache": ("ElastiCache Serverless ECPU/s per cache", 15_000_000, "no",
                   "https://docs.aws.amazon.com/AmazonElastiCache/latest/dg/RedisConfiguration.html"),
    "dynamodb_table": ("DynamoDB on-demand write units/s per table", 40_000, "yes (L-AB614373)",
                       "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"),
    "dynamodb_partition": ("DynamoDB write units/s per partition", 1_000, "no",
                           "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"),
    "putevents": ("EventBridge PutEvents requests/s (us-east-1; {events_per_request} events a request from the Pipe)", 10_000,
                  "yes (lower in most Regions: 2,400 in us-east-2, 1,200 in many)",
                  "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html"),
}


# What to do about a limit that cannot be raised, once a level passes it.
ADVICE = {
    "ecpu_slot": "one packet's hash slot, so deploy `CacheMode=nodes` (a shard's own CPU) for a packet this hot",
    "ecpu_cache": "a serverless cache's ECPUs, so split the traffic over caches (stacks) or node-based shards",
}

# The bench's (with the wallet, without) pairs, by the template's FUNDS.
FUNDS_COLUMN = {"wallet": 0, "none": 1}


class TemplateError(ValueError):
    """template.yaml declares something the model cannot price (or cannot find what it prices)."""


def load_template(path):
    with open(path, encoding="utf-8") as file:
        return yaml.load(file, Loader=CfnLoader)  # noqa: S506 - a SafeLoader subclass


def _globals(stack):
    return stack.template.get("Globals", {}).get("Function", {})


def _function_property(stack, logical_id, name):
    """The function's property as SAM deploys it, its own else Globals.Function's: (resolved value,
    raw value, where from), or (None, None, None) when neither declares it."""
    own = stack.resources[logical_id].get("Properties", {})
    for where, source in ((logical_id, own), ("Globals", _globals(stack))):
        if name in source:
            return stack.resolve(source[name]), source[name], where
    return None, None, None


def _environment(stack, logical_id):
    """The function's environment variables: Globals.Function's, overridden by its own (SAM merges the maps)."""
    variables = {}
    for source in (_globals(stack), stack.resources[logical_id].get("Properties", {})):
        variables.update(stack.resolve(source.get("Environment", {}).get("Variables", {})))
    return variables


def _raw_variable(stack, logical_id, name):
    """The unresolved expression of one environment variable (its own before Globals')."""
    for source in (stack.resources[logical_id].get("Properties", {}), _globals(stack)):
        variables = source.get("Environment", {}).get("Variables", {})
        if name in variables:
            return variables[name]
    return None


def _describe(raw, value, where, name):
    """How a figure was read, for the tables' preamble: `MemorySize 512`, `Globals MemorySize 256`,
    `MemorySize !Ref Memory (default 512)`."""
    prefix = "Globals " if where == "Globals" else ""
    if isinstance(raw, dict) and "Ref" in raw:
        return f"{prefix}{name} !Ref {raw['Ref']} (default {value})"
    if isinstance(raw, dict):
        return f"{prefix}{name} {next(iter(raw))} (at the defaults, {value})"
    return f"{prefix}{name} {value}"


def _priced_function(stack, logical_id, used):
    """What the cost model needs of one function: its memory and architecture as deployed."""
    if "CapacityProviderConfig" in stack.resources[logical_id].get("Properties", {}):
        raise TemplateError(
            f"{logical_id} runs on Lambda Managed Instances at these parameters: the model prices standard "
            "Lambda's GB-seconds, not a capacity provider's instances")
    memory, raw, where = _function_property(stack, logical_id, "MemorySize")
    if memory is None:
        memory, memory_from = LAMBDA_DEFAULT_MEMORY_MB, "no MemorySize: Lambda's default"
    else:
        memory_from = _describe(raw, memory, where, "MemorySize")
        used.append(raw)
    architectures, raw, _ = _function_property(stack, logical_id, "Architectures")
    if architectures:
        used.append(raw)
    architecture = architectures[0] if architectures else "x86_64"  # Lambda's default
    if architecture not in PRICES["lambda_gb_second"]:
        raise TemplateError(f"{logical_id}: no GB-second price for architecture {architecture}")
    return {
        "logical_id": logical_id,
        "memory_mb": int(memory),
        "memory_from": memory_from,
        "architecture": architecture,
        "gb": int(memory) / MB_PER_GB,
        "gb_second_price": PRICES["lambda_gb_second"][architecture],
    }


def _http_routes(stack):
    """(METHOD, path) -> (function, API) for the HttpApi events of every function created."""
    routes = {}
    for logical_id in stack.created("AWS::Serverless::Function"):
        for event in stack.resources[logical_id].get("Properties", {}).get("Events", {}).values():
            if event.get("Type") != "HttpApi":
                continue
            properties = stack.resolve(event.get("Properties", {}))
            route = (str(properties.get("Method", "")).upper(), properties.get("Path"))
            api = stack.logical_id(properties.get("ApiId"))
            if api is None:
                raise TemplateError(f"{logical_id}'s route {route} names no API of the template (an implicit API)")
            if route in routes:
                raise TemplateError(f"{route} is served by both {routes[route][0]} and {logical_id}")
            routes[route] = (logical_id, api)
    return routes


def _throttle(stack, api, route, used):
    """The route's steady rate: its RouteSettings', else the API's DefaultRouteSettings'."""
    properties = stack.resources[api].get("Properties", {})
    key = f"{route[0]} {route[1]}"
    for settings in (properties.get("RouteSettings", {}).get(key), properties.get("DefaultRouteSettings")):
        if settings and "ThrottlingRateLimit" in settings:
            raw = settings["ThrottlingRateLimit"]
            used.append(raw)
            rate = float(stack.resolve(raw))
            return int(rate) if rate.is_integer() else rate
    raise TemplateError(f"{api} declares no ThrottlingRateLimit for {key}: the 1x level is the template's throttles")


def _only(found, what):
    if len(found) != 1:
        raise TemplateError(f"expected one {what} in template.yaml, found {len(found)}: {found}")
    return found[0]


def load_deployment(template_path=None, overrides=None, template=None):
    """What the model prices, read from template.yaml (or `template`, as load_template reads one)
    as it deploys with its parameters' defaults (and `overrides`): its conditions, and each `!If`,
    take the branches those values select."""
    if template is None:
        template = load_template(template_path or ROOT / "template.yaml")
    stack = Stack(template, overrides)
    used = []  # the raw expressions read, for the parameters they refer to

    routes = _http_routes(stack)
    for route in (SEND_ROUTE, GRAB_ROUTE):
        if route not in routes:
            raise TemplateError(f"no function created at the defaults serves {' '.join(route)}")
    send, api = routes[SEND_ROUTE]
    grab, grab_api = routes[GRAB_ROUTE]
    if api != grab_api:
        raise TemplateError(f"send ({api}) and grab ({grab_api}) are on different APIs")
    api_type = stack.resources[api]["Type"]
    if api_type not in PRICES["api_per_million"]:
        raise TemplateError(f"{api} is an {api_type}: no request price for it")

    risk = []
    for logical_id in stack.created("AWS::Serverless::Function"):
        for event in stack.resources[logical_id].get("Properties", {}).get("Events", {}).values():
            if event.get("Type") == "EventBridgeRule":
                pattern = stack.resolve(event.get("Properties", {})).get("Pattern", {})
                if GRAB_EVENT in pattern.get("detail-type", []):
                    risk.append(logical_id)
    if len(risk) > 1:
        raise TemplateError(f"more than one function reads {GRAB_EVENT}: {risk}")

    functions = {"send": _priced_function(stack, send, used), "grab": _priced_function(stack, grab, used)}
    if risk:
        functions["risk"] = _priced_function(stack, risk[0], used)

    environment = _environment(stack, grab)
    for name in ("FUNDS", "USER_GRAB_LIMIT", "TABLE_NAME"):
        if name not in environment:
            raise TemplateError(f"{grab} has no {name} in its environment")
        used.append(_raw_variable(stack, grab, name))
    funds = environment["FUNDS"]
    if funds not in FUNDS_COLUMN:
        raise TemplateError(f"FUNDS={funds}: the bench measured only {sorted(FUNDS_COLUMN)}")

    table = stack.logical_id(environment["TABLE_NAME"])
    if table is None or stack.resources[table]["Type"] != "AWS::DynamoDB::Table":
        raise TemplateError(f"TABLE_NAME {environment['TABLE_NAME']!r} is not a table of the template")
    table_properties = stack.properties(table)
    billing_mode = table_properties.get("BillingMode", "PROVISIONED")  # CloudFormation's default
    if billing_mode not in PRICES["dynamodb_per_million_wru"]:
        raise TemplateError(f"{table} is {billing_mode}: the model prices on-demand write units")
    if table_properties.get("TableClass", "STANDARD") != "STANDARD":
        raise TemplateError(f"{table} is {table_properties['TableClass']}: the model prices the Standard class")

    cache_kinds = ("AWS::ElastiCache::ServerlessCache", "AWS::ElastiCache::ReplicationGroup", "AWS::ElastiCache::CacheCluster")
    cache = _only([name for name in stack.created() if stack.resources[name]["Type"] in cache_kinds], "cache")
    if stack.resources[cache]["Type"] != "AWS::ElastiCache::ServerlessCache":
        raise TemplateError(f"the cache is {cache} ({stack.resources[cache]['Type']}) at these parameters: "
                            "the model prices ElastiCache Serverless ECPUs and its limits")
    for name in (table, cache):
        if "Condition" in stack.resources[name]:
            used.append({"Condition": stack.resources[name]["Condition"]})
    engine = str(stack.properties(cache).get("Engine", "")).lower()
    if engine not in PRICES["ecpu_per_million"]:
        raise TemplateError(f"{cache}: no ECPU price for engine {engine!r}")

    settle = [name for name in stack.created("AWS::Serverless::Function")
              if "SETTLE_PARTITION_WRITE_UNITS" in _environment(stack, name)]
    settle = _only(settle, "function setting SETTLE_PARTITION_WRITE_UNITS")
    used.append(_raw_variable(stack, settle, "SETTLE_PARTITION_WRITE_UNITS"))

    buses = {stack.arn(name) for name in stack.created("AWS::Events::EventBus")}
    pipes = [name for name in stack.created("AWS::Pipes::Pipe") if stack.properties(name).get("Target") in buses]
    pipe = _only(pipes, "Pipe onto an event bus")
    batch = stack.properties(pipe).get("SourceParameters", {}).get("DynamoDBStreamParameters", {}).get("BatchSize")
    if batch is None:
        raise TemplateError(f"{pipe} declares no BatchSize")

    for logical_id in (send, grab, *risk):
        if "Condition" in stack.resources[logical_id]:
            used.append({"Condition": stack.resources[logical_id]["Condition"]})
    return {
        "functions": functions,
        "api": api,
        "api_type": api_type,
        "send_rate": _throttle(stack, api, SEND_ROUTE, used),
        "grab_rate": _throttle(stack, api, GRAB_ROUTE, used),
        "funds": funds,
        "user_grab_limit": int(environment["USER_GRAB_LIMIT"]),
        "table": table,
        "billing_mode": billing_mode,
        "cache": cache,
        "cache_engine": engine,
        "settle_function": settle,
        "settle_partition_write_units": int(_environment(stack, settle)["SETTLE_PARTITION_WRITE_UNITS"]),
        "pipe": pipe,
        "events_per_request": min(int(batch), PUTEVENTS_MAX_ENTRIES),
        "parameters": _parameters_read(stack, used),
    }


def _parameters_read(stack, expressions):
    """The parameters `expressions` (and the conditions they name) depend on, with their values."""
    names = set()
    pending = list(expressions)
    seen_conditions = set()
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending += node
        elif isinstance(node, dict):
            for key, value in node.items():
                if key == "Ref" and isinstance(value, str) and value in stack.parameters:
                    names.add(value)
                elif key == "Condition" and isinstance(value, str) and value not in seen_conditions:
                    seen_conditions.add(value)
                    pending.append(stack.template["Conditions"][value])
                elif key == "Fn::If" and value[0] not in seen_conditions:
                    seen_conditions.add(value[0])
                    pending += [stack.template["Conditions"][value[0]], value[1], value[2]]
                else:
                    pending.append(value)
    return {name: stack.parameters[name] for name in sorted(names)}


def limits(deployment):
    """LIMITS, their names filled in from the deployment."""
    return {key: (name.format(events_per_request=deployment["events_per_request"]), *rest)
            for key, (name, *rest) in LIMITS.items()}


def levels(deployment):
    """(name, sends/s, grabs/s) of each level: multiples of the template's throttles, and WeChat's peak."""
    send, grab = deployment["send_rate"], deployment["grab_rate"]
    name, sends, grabs_a_send = WECHAT
    return [(label, send * times, grab * times) for label, times in MULTIPLES] + [(name, sends, sends * grabs_a_send)]


def load_figures(root=ROOT, deployment=None):
    """The measured figures the tables use, by name (the send's and grab's write units of the
    template's FUNDS)."""
    deployment = deployment or load_deployment(root / "template.yaml")
    column = FUNDS_COLUMN[deployment["funds"]]
    results = root / "bench" / "results"
    campaign = json.loads((results / "campaign.json").read_text())
    latest = json.loads((results / "latest.json").read_text())
    details = campaign["details"]
    coalesced = next(flood for flood in details["floods"] if flood["design"] == "ours_coalesced")
    patterns = json.loads((results / "controls.json").read_text())["patterns"]
    risk_grab = next(event for event in patterns["events"] if event["detail_type"] == GRAB_EVENT)
    return {
        "send_wru": details["send_write_units"][column],
        "grab_wru": details["grab_write_units"][column],
        "redis_us_per_grab": coalesced["redis_cpu_us_per_fresh_grab"],
        "send_seconds": latest["details"]["send"]["p50_us"] / 1e6,
        "partition_ceiling": details["ledger_default"]["ceiling_units_per_s"],
        "units_per_share": details["ledger_default"]["partition_write_units"] / details["ledger_default"]["shares"],
        "risk_seconds": risk_grab["p50_us"] / 1e6,
        "risk_wru": risk_grab["write_units_per_event"],
    }


def _per_grab(figures, deployment):
    """Per grab: the risk function's invocations, its seconds, its write units, and the grab rate's ECPUs."""
    risk = 1 if "risk" in deployment["functions"] else 0
    rate_ecpu = ASSUMPTIONS["rate_ecpu_per_counted_grab"] if deployment["user_grab_limit"] > 0 else 0
    return risk, risk * figures["risk_seconds"], risk * figures["risk_wru"], rate_ecpu


def loads(figures, deployment, sends, grabs):
    """Each limit's load at `sends`/s and `grabs`/s, in the limit's own unit."""
    a = ASSUMPTIONS
    _, risk_seconds, risk_wru, rate_ecpu = _per_grab(figures, deployment)
    risk = grabs * risk_seconds
    concurrency = grabs * a["grab_seconds"] + sends * figures["send_seconds"] + risk
    ecpu_per_grab = figures["redis_us_per_grab"] / a["engine_us_per_ecpu"]
    events = sends * a["events_per_send"] + grabs * a["events_per_grab"]
    return {
        "api": sends + grabs * (1 + a["views_per_grab"]),
        "lambda": concurrency,
        # The environments needed, over the 1,000 a function may add each 10 s: 10 s steps.
        "lambda_scaling": max(grabs * a["grab_seconds"], sends * figures["send_seconds"], risk),
        # One packet grabbed at the whole grab rate: the hottest slot.
        "ecpu_slot": grabs * ecpu_per_grab,
        "ecpu_cache": grabs * (ecpu_per_grab + rate_ecpu),
        "dynamodb_table": sends * figures["send_wru"] + grabs * (figures["grab_wru"] + risk_wru),
        # The most a packet's partition takes: settle's pace (the template's), whatever the rate.
        "dynamodb_partition": deployment["settle_partition_write_units"],
        "putevents": events / deployment["events_per_request"],
    }


def cost_per_hour(figures, deployment, sends, grabs):
    """List-price dollars per hour at `sends`/s and `grabs`/s (API, Lambda, DynamoDB writes,
    ElastiCache compute, events; storage and idle floors left out)."""
    a, p, functions = ASSUMPTIONS, PRICES, deployment["functions"]
    risk_invocations, risk_seconds, risk_wru, rate_ecpu = _per_grab(figures, deployment)
    requests = sends + grabs * (1 + a["views_per_grab"])

    def duration(role, invocations, seconds):
        function = functions.get(role)
        return invocations * seconds * function["gb"] * function["gb_second_price"] if function else 0.0

    wru = sends * figures["send_wru"] + grabs * (figures["grab_wru"] + risk_wru)
    ecpu = grabs * (figures["redis_us_per_grab"] / a["engine_us_per_ecpu"] + rate_ecpu)
    events = sends * a["events_per_send"] + grabs * a["events_per_grab"]
    per_second = (
        requests * (p["api_per_million"][deployment["api_type"]] + p["lambda_per_million"]) / 1e6
        + grabs * risk_invocations * p["lambda_per_million"] / 1e6
        + duration("grab", grabs, a["grab_seconds"])
        + duration("send", sends, figures["send_seconds"])
        + duration("risk", grabs, risk_seconds)
        + wru * p["dynamodb_per_million_wru"][deployment["billing_mode"]] / 1e6
        + ecpu * p["ecpu_per_million"][deployment["cache_engine"]] / 1e6
        + events * p["events_per_million"] / 1e6
    )
    return per_second * 3600


def number(value):
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:,.1f}"


def template_summary(deployment):
    """One paragraph: what the tables read from template.yaml."""
    d, functions = deployment, deployment["functions"]
    settings = ", ".join(f"{name}={value}" for name, value in d["parameters"].items())

    def function(role, what):
        f = functions[role]
        return f"{what} on {f['logical_id']} at {f['memory_mb']:,} MB ({f['memory_from']}), {f['architecture']}"

    ran = [function("send", "send"), function("grab", "grab")]
    if "risk" in functions:
        ran.append(function("risk", f"the {GRAB_EVENT} events' risk rules"))
    rate = (f"on (UserGrabLimit {d['user_grab_limit']}: {ASSUMPTIONS['rate_ecpu_per_counted_grab']} ECPUs a grab)"
            if d["user_grab_limit"] > 0 else "off (no ECPUs a grab for it)")
    return (
        "Read from template.yaml as it deploys with its parameters' defaults (its conditions and `!If`s take "
        f"the branches these select: {settings}): " + "; ".join(ran) + "; "
        f"{' '.join(SEND_ROUTE)} throttled at {d['send_rate']:,}/s and {' '.join(GRAB_ROUTE)} at {d['grab_rate']:,}/s "
        f"(the 1x level), on {d['api']} ({d['api_type']}); {d['table']} billed {d['billing_mode']}; "
        f"{d['cache']} ({d['cache_engine']}); FUNDS={d['funds']}; the grab rate {rate}; "
        f"{d['settle_function']} paces a partition at {d['settle_partition_write_units']:,} write units/s "
        f"(SETTLE_PARTITION_WRITE_UNITS); {d['pipe']} puts {d['events_per_request']} events a PutEvents request."
    )


def tables(figures, deployment):
    """The markdown between the markers."""
    limit_table = limits(deployment)
    level_list = levels(deployment)
    ceiling = deployment["settle_partition_write_units"]
    measured_at = (f" (the bench ran settle at {figures['partition_ceiling']})"
                   if figures["partition_ceiling"] != ceiling else "")
    lines = [
        template_summary(deployment),
        "",
        "Measured here (bench/results/campaign.json, latest.json): "
        f"a send writes {figures['send_wru']:.1f} write units, a grab {figures['grab_wru']:.1f} "
        f"(FUNDS={deployment['funds']}, GSIs included); a coalesced fresh grab costs Redis {figures['redis_us_per_grab']:.2f} us "
        f"of CPU; a send takes {figures['send_seconds'] * 1000:.0f} ms (p50, DynamoDB Local); settle writes a "
        f"packet's partition at most {ceiling} units/s{measured_at}, {figures['units_per_share']:.1f} a share. "
        f"The risk function reads each grab's event off the grab path (bench/results/controls.json): "
        f"{figures['risk_seconds'] * 1000:.1f} ms (p50, DynamoDB Local) and {figures['risk_wru']:.1f} write units a grab, "
        "in the Lambda, scaling and table rows below.",
        "",
        "| limit | default | raisable | " + " | ".join(name for name, _, _ in level_list) + " | source |",
        "|---|---|---|" + "---|" * len(level_list) + "---|",
    ]
    level_loads = [loads(figures, deployment, sends, grabs) for _, sends, grabs in level_list]
    for key, (name, default, raisable, source) in limit_table.items():
        cells = []
        for load in level_loads:
            used = load[key]
            if key == "lambda_scaling":
                seconds = math.ceil(used / default) * 10
                cells.append(f"{number(used)} envs: {seconds} s from zero")
            else:
                marker = " **over**" if used > default else ""
                cells.append(f"{number(used)} ({used / default:.0%}){marker}")
        lines.append(f"| {name} | {default:,} | {raisable} | " + " | ".join(cells) + f" | {source} |")
    lines += ["", "| level | sends/s | grabs/s | binds first | raise before the campaign | cost per hour |", "|---|---|---|---|---|---|"]
    for (name, sends, grabs), load in zip(level_list, level_loads):
        ratios = {key: load[key] / limit_table[key][1] for key in limit_table if key not in ("lambda_scaling", "dynamodb_partition")}
        first = max(ratios, key=ratios.get)
        over = [key for key, ratio in ratios.items() if ratio > 1]
        raise_list = ", ".join(
            f"{limit_table[key][0].split(' per ')[0].split(',')[0]} to {number(load[key] * 1.25)}"
            for key in over if "no" != limit_table[key][2][:2]
        ) or "nothing"
        fixed = [ADVICE[key] for key in over if limit_table[key][2].startswith("no")]
        if fixed:
            raise_list += "; not raisable: " + "; ".join(fixed)
        lines.append(
            f"| {name} | {sends:,} | {grabs:,} | {limit_table[first][0]} ({ratios[first]:.0%}) | {raise_list} | "
            f"${cost_per_hour(figures, deployment, sends, grabs):,.2f} |"
        )
    return "\n".join(lines) + "\n"


def replaced(text, block):
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + block + text[end:]


def main(argv):
    deployment = load_deployment()
    block = tables(load_figures(ROOT, deployment), deployment)
    if len(argv) == 3 and argv[1] in ("--write", "--check"):
        path = Path(argv[2])
        text = path.read_text()
        expected = replaced(text, block)
        if argv[1] == "--write":
            path.write_text(expected)
            return 0
        if text != expected:
            print(f"{path}: the capacity tables are not what scripts/capacity.py computes; run it with --write")
            return 1
        return 0
    print(block, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
