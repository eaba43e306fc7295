#!/usr/bin/env python3
"""docs/CAPACITY.md's tables, computed from the figures `make bench` measured and from template.yaml.

    python3 scripts/capacity.py                          print the tables
    python3 scripts/capacity.py --write FILE [FILE...]   put them between each FILE's markers
    python3 scripts/capacity.py --check FILE [FILE...]   fail when a FILE's tables are not these

The markers: docs/CAPACITY.md's capacity (the grab side) and capacity-reads (the read side of a
campaign), docs/DEPLOY.md's capacity-polls (the cost per million polls); each FILE gets the blocks
whose markers it holds, so both documents are written by
`python3 scripts/capacity.py --write docs/CAPACITY.md docs/DEPLOY.md`.

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

The read side (`read_section`, `polls_table`) prices a campaign packet's viewers polling it, from
bench/results/reads.json (`make bench-reads`: each answer's Redis commands, DynamoDB read units,
bytes and latency, a page and a 304, open and settled, of a small and a campaign-sized packet; and
a flood of viewers through a stand-in edge cache), the poll schedule docs/CLIENTS.md recommends,
and template.yaml's read routes, their function and the CloudFront behaviour in front of the shared
view (`load_read_deployment`). Without reads.json its markers hold a one-line note, and the grab
side is as before.
"""

import fnmatch
import json
import math
import re
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
    #
    # The read side. CloudFront's edge locations, each taken to revalidate an open packet's page on
    # its own (at most once per max-age) and to fetch a settled one once: AWS documents "600+ Points
    # of Presence and 13 regional edge caches" (EDGE_SOURCE). An upper bound: a miss goes through
    # a regional edge cache, and viewers of one campaign gather at the few locations near them.
    "edge_locations": 600,
    # A wallet poll that finds nothing changed: one GetItem of the user's balance item, under 4 KB:
    # 1 read unit strongly consistent. A history poll is built to compare (docs/DESIGN.md, "Tags
    # from versions"): a query of its page and a BatchGetItem of its statuses, a page of 20 small
    # items under 4 KB, about 1 read unit too. reads.json does not measure these polls; their
    # invocation is taken at `grab_seconds` (one round trip).
    "private_read_units": 1,
    # The history's and the wallet's poll each take the schedule docs/CLIENTS.md recommends, once
    # a grab (then stop: about a minute); the shared view is polled at that schedule's last
    # interval for as long as it is watched.
}

# AWS's count of CloudFront's locations, for ASSUMPTIONS["edge_locations"].
EDGE_SOURCE = "https://aws.amazon.com/documentation-overview/cloudfront"

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
    # The read side: DynamoDB on-demand read request units; CloudFront's HTTPS requests and data
    # transfer out to the internet (the United States, Mexico and Canada column, its first 10 TB a
    # month: Asia's run higher, $0.120 a GB in Hong Kong and Singapore, and later tiers lower) and
    # Origin Shield's requests (United States); API Gateway's own data transfer out, without the
    # edge, at EC2's rate from us-east-1 (first 10 TB). Sources: PRICE_SOURCES.
    "dynamodb_per_million_rru": {"PAY_PER_REQUEST": 0.125},
    "cloudfront_https_per_10k": 0.0100,
    "cloudfront_per_gb": 0.085,
    "origin_shield_per_10k": 0.0075,
    "internet_per_gb": 0.09,
}

# Where AWS lists the prices above.
PRICE_SOURCES = {
    "api": "https://aws.amazon.com/api-gateway/pricing/",
    "lambda": "https://aws.amazon.com/lambda/pricing/",
    "elasticache": "https://aws.amazon.com/elasticache/pricing/",
    "dynamodb": "https://aws.amazon.com/dynamodb/pricing/on-demand/",
    "cloudfront": "https://aws.amazon.com/cloudfront/pricing/",
    "internet": "https://aws.amazon.com/ec2/pricing/on-demand/",
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


# --- The read side of a campaign: a packet's viewers polling it (bench/results/reads.json).

READS_BEGIN, READS_END = "<!-- capacity-reads:begin -->", "<!-- capacity-reads:end -->"
POLLS_BEGIN, POLLS_END = "<!-- capacity-polls:begin -->", "<!-- capacity-polls:end -->"
NOT_MEASURED = ("Not measured yet: make bench-reads (bench/results/reads.json), then "
                "`python3 scripts/capacity.py --write docs/CAPACITY.md docs/DEPLOY.md`.\n")

# The read routes, found in the template by what they are. Before the shared view's route exists,
# the packet view's function stands for it.
SHARED_ROUTE = ("GET", "/packets/{packet_id}/shared")
PACKET_ROUTE = ("GET", "/packets/{packet_id}")
PRIVATE_ROUTES = (("GET", "/me/packets"), ("GET", "/me/wallet"))
SHARED_PATH_SAMPLE = "/packets/0123456789abcdef0123456789abcdef/shared"  # against CloudFront's PathPatterns

READ_STATES = ("open", "settled")
READ_ANSWERS = ("page", "not_modified")
READ_PATHS = {"none": "no edge cache", "edge": "CloudFront", "shield": "CloudFront + Origin Shield"}

SECONDS_PER_HOUR = 3600
MS_PER_SECOND = 1000
BITS_PER_BYTE = 8
BYTES_PER_KB = 2 ** 10  # ElastiCache's ECPU a KB, and AWS's GB of data transfer (2^30 bytes)
BYTES_PER_GB = BYTES_PER_KB ** 3
BITS_PER_GBIT = 1e9  # CloudFront's Gbps
REQUESTS_PER_PRICED_BATCH = 10_000  # CloudFront prices requests per 10,000

# The clients' polls, as docs/CLIENTS.md recommends them: the shared view's interval (the section
# on the shared view: "the app polls every 2.5 s"; else the SDK's watch, sdk/src/watch.ts's
# `intervalMs ?? 2_500`), and the history's backoff (its example loop, `for delay in [1, 2, ...]:`).
CLIENTS_SCHEDULE = re.compile(r"for delay in \[([0-9, ]+)\]")
CLIENTS_SHARED_INTERVAL = re.compile(r"polls every ([0-9]+(?:\.[0-9]+)?) s\b")
SDK_WATCH_INTERVAL = re.compile(r"intervalMs \?\? ([0-9_]+)")

# The read side's limits beyond LIMITS (which gives the API's, Lambda's and the cache's).
READ_LIMITS = {
    "dynamodb_partition_reads": ("DynamoDB read units/s per partition (one packet's grabs)", 3_000, "no",
                                 "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/bp-partition-key-design.html"),
    "dynamodb_table_reads": ("DynamoDB on-demand read units/s per table", 40_000, "yes (L-CF0CBE56)",
                             "https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html"),
    "cloudfront_requests": ("CloudFront requests/s per distribution", 250_000, "yes",
                            "https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cloudfront-limits.html"),
    "cloudfront_gbps": ("CloudFront data transfer per distribution, Gbps", 150, "yes",
                        "https://docs.aws.amazon.com/AmazonCloudFront/latest/DeveloperGuide/cloudfront-limits.html"),
}
READ_LIMITS_FROM_LIMITS = ("api", "lambda", "ecpu_slot", "ecpu_cache")
# Short names, for a table cell.
READ_LIMIT_SHORT = {
    "route_shared": "the shared view's route throttle", "route_private": "the history's and wallet's route throttles",
    "api": "API Gateway's account rate", "lambda": "Lambda concurrency", "ecpu_slot": "the packet's hash slot",
    "ecpu_cache": "the cache's ECPUs", "dynamodb_partition_reads": "the packet's partition reads",
    "dynamodb_table_reads": "the table's reads", "cloudfront_requests": "CloudFront's requests/s",
    "cloudfront_gbps": "CloudFront's Gbps",
}

# What to do about a read limit a level passes: {rate} is the parameter(s) the routes' throttles
# read, {to} the load with a quarter's headroom (as the grab side's).
READ_ADVICE = {
    "route_shared": "give the route {to}/s ({rate}, every route's default, or a RouteSettings entry of its own), "
                    "or Origin Shield",
    "route_private": "give each route {to}/s ({rate}, or RouteSettings entries of their own), or poll less often",
    "api": "request L-8A5B8E43 to {to}",
    "lambda": "request L-B99A9384 to {to}",
    "ecpu_slot": "Origin Shield (one revalidation per max-age, not one per location), or `CacheMode=nodes`",
    "ecpu_cache": "Origin Shield, or split the traffic over caches",
    "dynamodb_partition_reads": "the edge (a settled page fetched once per location), Origin Shield (once)",
    "dynamodb_table_reads": "request L-CF0CBE56 to {to}, or Origin Shield",
    "cloudfront_requests": "request CloudFront's requests/s per distribution to {to}",
    "cloudfront_gbps": "request CloudFront's data transfer rate per distribution to {to} Gbps",
}


class ReadsError(ValueError):
    """bench/results/reads.json or docs/CLIENTS.md is not in the shape the read side needs."""


def load_reads(root=ROOT):
    """bench/results/reads.json, checked; None when `make bench-reads` has not written it."""
    path = root / "bench" / "results" / "reads.json"
    if not path.exists():
        return None
    reads = json.loads(path.read_text())
    rows = {}
    for row in reads.get("packets", []):
        key = (row["shares"], row["state"], row["answer"])
        if row["state"] not in READ_STATES or row["answer"] not in READ_ANSWERS:
            raise ReadsError(f"{path}: a row of state {row['state']!r}, answer {row['answer']!r}")
        if key in rows:
            raise ReadsError(f"{path}: two rows for {key}")
        rows[key] = row
    sizes = sorted({shares for shares, _, _ in rows})
    if len(sizes) < 2:
        raise ReadsError(f"{path}: the read side compares two packet sizes, found {sizes}")
    for shares in sizes:
        for state in READ_STATES:
            for answer in READ_ANSWERS:
                if (shares, state, answer) not in rows:
                    raise ReadsError(f"{path}: no row for {shares} shares, {state}, {answer}")
    flood = reads.get("flood")
    if not flood or flood.get("state") != "open" or not flood.get("max_age_seconds"):
        raise ReadsError(f"{path}: no flood of an open packet (its max_age_seconds)")
    return {"commit": reads.get("commit"), "rows": rows, "sizes": sizes, "flood": flood}


def load_polling(root=ROOT):
    """How clients poll, from docs/CLIENTS.md (and the SDK): the shared view's interval and where
    it was read, the SDK's watch interval (None without one), and the history's and wallet's
    schedule (the waits of CLIENTS.md's example loop, in seconds)."""
    text = (root / "docs" / "CLIENTS.md").read_text()
    match = CLIENTS_SCHEDULE.search(text)
    if not match:
        raise ReadsError("docs/CLIENTS.md shows no `for delay in [...]` poll schedule for the history")
    schedule = [int(delay) for delay in match.group(1).split(",")]
    watch = root / "sdk" / "src" / "watch.ts"
    sdk = SDK_WATCH_INTERVAL.search(watch.read_text()) if watch.exists() else None
    sdk_seconds = int(sdk.group(1).replace("_", "")) / MS_PER_SECOND if sdk else None
    # The interval the section on the shared view states ("## ... the shared view polled").
    sections = [part for part in text.split("\n## ") if "shared view" in part.split("\n", 1)[0]]
    stated = CLIENTS_SHARED_INTERVAL.search(sections[0]) if sections else None
    if stated:
        shared, source = float(stated.group(1)), f"docs/CLIENTS.md (\"{stated.group(0)}\")"
    elif sdk_seconds:
        shared, source = sdk_seconds, "the SDK's `watchSharedPacket` default (sdk/src/watch.ts)"
    else:
        raise ReadsError("neither docs/CLIENTS.md (\"polls every N s\") nor sdk/src/watch.ts says how often "
                         "the shared view is polled")
    return {"shared": shared, "shared_from": source, "sdk": sdk_seconds, "schedule": schedule}


def _shared_view_edge(stack, api):
    """The CloudFront behaviour in front of the shared view, with its origin on `api`: its
    distribution, PathPattern, compression and whether its origin has Origin Shield; None if none."""
    for name in stack.created("AWS::CloudFront::Distribution"):
        config = stack.properties(name).get("DistributionConfig", {})
        origins = {origin.get("Id"): origin for origin in config.get("Origins", [])}
        for behavior in config.get("CacheBehaviors", []):
            if not fnmatch.fnmatchcase(SHARED_PATH_SAMPLE, str(behavior.get("PathPattern", ""))):
                continue
            origin = origins.get(behavior.get("TargetOriginId"), {})
            if not str(origin.get("DomainName", "")).startswith(f"{stack.physical_name(api)}.execute-api."):
                continue
            return {
                "distribution": name,
                "path_pattern": behavior["PathPattern"],
                "compress": bool(behavior.get("Compress", False)),
                "origin_shield": bool(origin.get("OriginShield", {}).get("Enabled", False)),
            }
    return None


def load_read_deployment(template_path=None, overrides=None, template=None):
    """What the read side prices, read from template.yaml at its parameters' defaults (and
    `overrides`): the shared view's route (or, before it exists, the packet view's), the history's
    and wallet's, their functions (memory, architecture) and throttles, the API's type, and the
    CloudFront behaviour in front of the shared view."""
    if template is None:
        template = load_template(template_path or ROOT / "template.yaml")
    stack = Stack(template, overrides)
    routes = _http_routes(stack)
    shared = SHARED_ROUTE if SHARED_ROUTE in routes else PACKET_ROUTE
    for route in (shared, *PRIVATE_ROUTES):
        if route not in routes:
            raise TemplateError(f"no function created at the defaults serves {' '.join(route)}")
    function, api = routes[shared]
    api_type = stack.resources[api]["Type"]
    if api_type not in PRICES["api_per_million"]:
        raise TemplateError(f"{api} is an {api_type}: no request price for it")
    private, used = {}, []
    for route in PRIVATE_ROUTES:
        logical_id, route_api = routes[route]
        if stack.resources[route_api]["Type"] != api_type:
            raise TemplateError(f"{' '.join(route)} is on {route_api}, another kind of API than {api}")
        private[route] = {"function": _priced_function(stack, logical_id, []),
                          "rate": _throttle(stack, route_api, route, used)}
    shared_rate = _throttle(stack, api, shared, used)
    return {
        "shared_route": shared,
        "shared_route_declared": shared == SHARED_ROUTE,
        "function": _priced_function(stack, function, []),
        "api": api,
        "api_type": api_type,
        "shared_rate": shared_rate,
        "rate_parameters": sorted(_parameters_read(stack, used)),
        "private": private,
        "edge": _shared_view_edge(stack, api),
    }


def _answer_costs(row, state, answer):
    """One answer's ECPUs, read units, bytes and the seconds its invocation is billed: every Redis
    command an ECPU, and an open page's LRANGE one more for each KB past the first it carries
    (taken as the answer's bytes); the measured p50, at least one round trip's `grab_seconds`."""
    extra = max(0, row["bytes"] / BYTES_PER_KB - 1) if (state, answer) == ("open", "page") else 0
    return {
        "ecpu": row["redis_commands"] + extra,
        "rru": row["dynamodb_read_units"],
        "bytes": row["bytes"],
        "seconds": max(row["p50_ms"] / MS_PER_SECOND, ASSUMPTIONS["grab_seconds"]),
    }


def read_campaign(reads, polling, deployment, read_deployment):
    """The read side's inputs in one place: the campaign packet (the largest measured), each
    answer's costs, how clients poll, the levels' packets, how long a packet takes to grab at 1x,
    and an edge location's revalidations of an open packet a second."""
    shares = reads["sizes"][-1]
    flood = reads["flood"]
    costs = {state: {answer: _answer_costs(reads["rows"][(shares, state, answer)], state, answer)
                     for answer in READ_ANSWERS} for state in READ_STATES}
    return {
        "reads": reads,
        "shares": shares,
        "costs": costs,
        "interval": polling["shared"],
        "polling": polling,
        "schedule": polling["schedule"],
        "window": shares / deployment["grab_rate"],
        "per_edge": max(flood["reached_per_second"], 1 / flood["max_age_seconds"]),
        "edges": ASSUMPTIONS["edge_locations"],
        "levels": [(name, grabs / deployment["grab_rate"]) for name, _, grabs in levels(deployment)],
        "deployment": deployment,
        "rd": read_deployment,
    }


def _query_duration(function, invocations, seconds):
    return invocations * seconds * function["gb"] * function["gb_second_price"]


def read_hour(c, state, path, packets):
    """What `packets` campaign packets' viewers (every grabber) cost on `path` ("none", "edge",
    "shield"). Open: an hour of polls at the shared view's interval; a viewer's polls read a page
    while its packet is being grabbed (its first, and half the grabbing's polls on average: the
    grabbers arrive over it) and 304s after. Settled: each viewer's last poll, which reads the
    settled page; CLIENTS.md has clients stop there. At the edge, every location (with Origin
    Shield, the shield alone) revalidates an open packet at most `per_edge` times a second, a
    page while it is being grabbed, and fetches a settled (immutable) page once."""
    page, unchanged = c["costs"][state]["page"], c["costs"][state]["not_modified"]
    viewers = packets * c["shares"]
    shield_requests = 0.0
    caches = c["edges"] if path == "edge" else 1
    if state == "open":
        polls = viewers * SECONDS_PER_HOUR / c["interval"]
        pages = min(polls, viewers * (1 + c["window"] / c["interval"] / 2))
        if path == "none":
            origin, origin_pages = polls, pages
        else:
            origin = min(polls, packets * caches * c["per_edge"] * SECONDS_PER_HOUR)
            origin_pages = min(origin, packets * caches * (1 + c["per_edge"] * c["window"]))
            if path == "shield":
                shield_requests = min(polls, packets * c["edges"] * c["per_edge"] * SECONDS_PER_HOUR)
    else:
        polls = pages = viewers
        origin = origin_pages = viewers if path == "none" else min(viewers, packets * caches)
        if path == "shield":
            shield_requests = min(viewers, packets * c["edges"])
    origin_unchanged = origin - origin_pages
    bytes_out = pages * page["bytes"] + (polls - pages) * unchanged["bytes"]
    rd, d, p = c["rd"], c["deployment"], PRICES
    ecpu = origin_pages * page["ecpu"] + origin_unchanged * unchanged["ecpu"]
    rru = origin_pages * page["rru"] + origin_unchanged * unchanged["rru"]
    data_gb = bytes_out / BYTES_PER_GB
    cost = {
        "CloudFront requests": 0.0 if path == "none" else polls * p["cloudfront_https_per_10k"] / REQUESTS_PER_PRICED_BATCH,
        "data transfer out": data_gb * (p["internet_per_gb"] if path == "none" else p["cloudfront_per_gb"]),
        "Origin Shield requests": shield_requests * p["origin_shield_per_10k"] / REQUESTS_PER_PRICED_BATCH,
        "API Gateway": origin * p["api_per_million"][rd["api_type"]] / 1e6,
        "Lambda requests": origin * p["lambda_per_million"] / 1e6,
        "Lambda duration": (_query_duration(rd["function"], origin_pages, page["seconds"])
                            + _query_duration(rd["function"], origin_unchanged, unchanged["seconds"])),
        "ElastiCache ECPUs": ecpu * p["ecpu_per_million"][d["cache_engine"]] / 1e6,
        "DynamoDB reads": rru * p["dynamodb_per_million_rru"][d["billing_mode"]] / 1e6,
    }
    return {"polls": polls, "pages": pages, "cloudfront_requests": 0.0 if path == "none" else polls,
            "data_gb": data_gb, "origin": origin, "origin_pages": origin_pages, "shield_requests": shield_requests,
            "ecpu": ecpu, "rru": rru, "cost": cost, "total": sum(cost.values())}


def private_polls(c, packets):
    """The history's and the wallet's polls of `packets` campaign packets' grabbers, each route on
    CLIENTS.md's schedule once a grab: their count, the most a route takes a second (every viewer
    on the schedule at once), their read units and cost."""
    viewers = packets * c["shares"]
    schedule, rd, d, p = c["schedule"], c["rd"], c["deployment"], PRICES
    per_route = viewers * len(schedule)
    cost = 0.0
    for route in PRIVATE_ROUTES:
        function = rd["private"][route]["function"]
        cost += (per_route * (p["api_per_million"][rd["api_type"]] + p["lambda_per_million"]) / 1e6
                 + _query_duration(function, per_route, ASSUMPTIONS["grab_seconds"]))
    rru = per_route * len(PRIVATE_ROUTES) * ASSUMPTIONS["private_read_units"]
    cost += rru * p["dynamodb_per_million_rru"][d["billing_mode"]] / 1e6
    return {"polls": per_route * len(PRIVATE_ROUTES), "per_route_per_second": viewers * len(schedule) / sum(schedule),
            "rru": rru, "cost": cost}


def read_limits(c):
    """The read side's limits: the routes' throttles (the template's), LIMITS' API, Lambda and
    cache rows, and READ_LIMITS."""
    rd = c["rd"]
    private_rate = min(route["rate"] for route in rd["private"].values())
    api_limits = limits(c["deployment"])
    table = {
        "route_shared": (f"API Gateway route throttle, {' '.join(rd['shared_route'])}", rd["shared_rate"],
                         "yes: the template's throttle, up to the account's", "template.yaml"),
        "route_private": (f"API Gateway route throttle, {' and '.join(' '.join(r) for r in PRIVATE_ROUTES)} (each)",
                          private_rate, "yes: the template's throttle, up to the account's", "template.yaml"),
    }
    table.update({key: api_limits[key] for key in READ_LIMITS_FROM_LIMITS})
    table.update(READ_LIMITS)
    return table


def read_burst(c, state, path, packets):
    """Each read limit's load in the busiest seconds of `state`, per second in the limit's unit:
    open, while the packet is being grabbed (every viewer's poll reads a page, every edge
    location's revalidation too), with the history's and wallet's polls after the grabs; settled,
    the poll interval in which every viewer's last poll reads the settled page (each edge location
    fetching it once)."""
    page = c["costs"][state]["page"]
    viewers = packets * c["shares"]
    polls = viewers / c["interval"]
    if path == "none":
        origin = polls
    else:
        caches = packets * (c["edges"] if path == "edge" else 1)
        origin = min(polls, caches * (c["per_edge"] if state == "open" else 1 / c["interval"]))
    private = private_polls(c, packets)["per_route_per_second"] if state == "open" else 0.0
    routes = len(PRIVATE_ROUTES)
    edge = path != "none"
    return {
        "route_shared": origin,
        "route_private": private,
        "api": origin + routes * private,
        "lambda": origin * page["seconds"] + routes * private * ASSUMPTIONS["grab_seconds"],
        "ecpu_slot": origin / packets * page["ecpu"],
        "ecpu_cache": origin * page["ecpu"],
        "dynamodb_partition_reads": origin / packets * page["rru"],
        "dynamodb_table_reads": origin * page["rru"] + routes * private * ASSUMPTIONS["private_read_units"],
        "cloudfront_requests": polls if edge else 0.0,
        "cloudfront_gbps": polls * page["bytes"] * BITS_PER_BYTE / BITS_PER_GBIT if edge else 0.0,
    }


def read_loads(c, path, packets):
    """Each read limit's load at `packets` on `path`: the busier state's."""
    loads = {}
    for state in READ_STATES:
        for key, load in read_burst(c, state, path, packets).items():
            loads[key] = max(loads.get(key, 0.0), load)
    return loads


def read_binding(c, path, packets):
    """The read limits' shares of their defaults at `packets` on `path`, largest first."""
    table = read_limits(c)
    ratios = {key: load / table[key][1] for key, load in read_loads(c, path, packets).items()}
    return sorted(ratios.items(), key=lambda item: -item[1])


def count(value):
    """A count or a quantity for a table cell: whole above 100, else one decimal, else two
    significant digits."""
    if value == 0:
        return "0"
    if value >= 100 or float(value).is_integer():
        return f"{value:,.0f}"
    if value >= 1:
        return f"{value:,.1f}"
    return f"{value:.2g}"


def money(value):
    """Dollars: cents from $1, else two significant digits."""
    if value == 0:
        return "$0"
    if value >= 1:
        return f"${value:,.2f}"
    return f"${value:.{max(2, 1 - math.floor(math.log10(value)))}f}"


def _ratio(large, small):
    if small == 0:
        return "-" if large == 0 else "n/a (0 at the small packet)"
    return f"{large / small:,.2f}x"


def _path_of_template(rd):
    edge = rd["edge"]
    if edge is None:
        return "none"
    return "shield" if edge["origin_shield"] else "edge"


def _template_edge_sentence(rd):
    edge = rd["edge"]
    route = " ".join(rd["shared_route"])
    served = (f"{route} is served by {rd['function']['logical_id']} at {rd['function']['memory_mb']:,} MB "
              f"({rd['function']['memory_from']}), {rd['function']['architecture']}, throttled at {rd['shared_rate']:,}/s")
    if not rd["shared_route_declared"]:
        served += f" (template.yaml declares no {' '.join(SHARED_ROUTE)} yet: its function stands for it)"
    if edge is None:
        return served + "; no CloudFront behaviour sends it to the API, so the template deploys the no-edge rows."
    return (served + f"; {edge['distribution']}'s {edge['path_pattern']} behaviour caches it"
            + (" through Origin Shield" if edge["origin_shield"] else ", without Origin Shield")
            + (", compressed (`Compress`: the bytes below, measured uncompressed, are an upper bound of what is billed)"
               if edge["compress"] else "")
            + f": template.yaml deploys the {READ_PATHS[_path_of_template(rd)]} rows.")


def read_section(c):
    """The markdown between docs/CAPACITY.md's capacity-reads markers."""
    reads, rd, d = c["reads"], c["rd"], c["deployment"]
    small, large = reads["sizes"][0], reads["sizes"][-1]
    flood = reads["flood"]
    lines = [
        f"Measured by `make bench-reads` (bench/results/reads.json, commit {reads['commit']}): one answer of each "
        "kind, its Redis commands, DynamoDB read units (by AWS's rules), bytes and latency (p50 and p99 against "
        "the local Redis and DynamoDB Local).",
        "",
        "| packet | state | answer | Redis commands | DynamoDB read units | bytes | p50 ms | p99 ms | samples |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for shares in reads["sizes"]:
        for state in READ_STATES:
            for answer in READ_ANSWERS:
                row = reads["rows"][(shares, state, answer)]
                lines.append(
                    f"| {shares:,} shares | {state} | {'page' if answer == 'page' else '304'} | {count(row['redis_commands'])} | "
                    f"{count(row['dynamodb_read_units'])} | {row['bytes']:,} | {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | "
                    f"{row['samples']:,} |")
    for state in READ_STATES:
        big, little = reads["rows"][(large, state, "page")], reads["rows"][(small, state, "page")]
        lines.append(
            f"| {large:,} ÷ {small:,} | {state} | page | {_ratio(big['redis_commands'], little['redis_commands'])} | "
            f"{_ratio(big['dynamodb_read_units'], little['dynamodb_read_units'])} | {_ratio(big['bytes'], little['bytes'])} | "
            f"{_ratio(big['p50_ms'], little['p50_ms'])} | {_ratio(big['p99_ms'], little['p99_ms'])} | |")
    interval, schedule, polling = c["interval"], c["schedule"], c["polling"]
    one_x = levels(d)[0]
    per_level = ", ".join(f"{name.split(' (')[0]}: {count(packets)}" for name, packets in c["levels"])
    lines += [
        "",
        f"Through a stand-in edge cache: {flood['viewers']:,} viewers polling an open packet "
        f"(`max-age={flood['max_age_seconds']}`) for {flood['seconds']:.0f} s sent {flood['polls']:,} polls, and "
        f"{flood['reached_function']:,} reached the function: {flood['reached_per_second']:.2f}/s, against one "
        f"revalidation per max-age ({1 / flood['max_age_seconds']:.2f}/s). An edge location is taken to "
        f"revalidate an open packet {c['per_edge']:.2f} times a second, the higher of the two.",
        "",
        "**The campaign.** Each level is the grab tables' (above), in campaign packets of "
        f"{large:,} shares: one at 1x, grabbed in {c['window']:,.0f} s at the template's {one_x[2]:,} grabs/s, "
        f"and at each level as many as its grab rate is times 1x's ({per_level}). Every grabber watches its "
        f"packet: {large:,} viewers a packet. They poll the shared view every {interval:g} s, as "
        f"{polling['shared_from']} recommends, while it is open, and stop once it is settled (CLIENTS.md: "
        "\"do not ask again\"), so a settled packet costs each viewer's last poll, its settled page. Each "
        "polls its history and its wallet once after its grab on CLIENTS.md's backoff "
        f"({', '.join(f'{delay} s' for delay in schedule)}: {len(schedule)} polls each, about {sum(schedule)} s), "
        "then stops.",
    ]
    if polling["sdk"] and polling["sdk"] != interval:
        lines += ["", f"The SDK's `watchSharedPacket` (sdk/src/watch.ts) polls every {polling['sdk']:g} s by default: "
                      f"{interval / polling['sdk']:.2f}x the open packet's polls below."]
    lines += [
        "",
        "**The edge.** " + _template_edge_sentence(rd) + " "
        f"With CloudFront, each of its {c['edges']:,} edge locations (AWS documents \"600+ Points of Presence "
        f"and 13 regional edge caches\", {EDGE_SOURCE}) is taken to revalidate an open packet on its own and "
        "to fetch a settled (immutable) one once: an upper bound, since a miss goes through one of the "
        "regional edge caches and a campaign's viewers gather at the locations near them. Origin Shield puts "
        "one Region's cache in front of the origin: one revalidation per max-age per packet whatever the "
        "locations, at the price of a request to the shield for each location's.",
        "",
        "A poll's answer: a page (1,000 grabs) while the packet changes (its grabbing, half of it on average "
        "for a grabber, who arrives during it, and the viewer's first poll), a 304 after. What reaches "
        f"API Gateway + Lambda ({rd['function']['logical_id']}) reads what the bench measured; an invocation is "
        f"billed its measured p50, at least {ASSUMPTIONS['grab_seconds'] * MS_PER_SECOND:.0f} ms (one round trip "
        "in the VPC). Prices: CloudFront "
        f"${PRICES['cloudfront_https_per_10k']:.4f} per 10,000 HTTPS requests and ${PRICES['cloudfront_per_gb']:.3f} "
        f"a GB out (the United States' column, first 10 TB), Origin Shield ${PRICES['origin_shield_per_10k']:.4f} per "
        f"10,000 requests ({PRICE_SOURCES['cloudfront']}); without the edge, API Gateway's data transfer out at "
        f"${PRICES['internet_per_gb']:.2f} a GB ({PRICE_SOURCES['api']}, {PRICE_SOURCES['internet']}); "
        f"API Gateway ${PRICES['api_per_million'][rd['api_type']]:.2f} per million requests ({PRICE_SOURCES['api']}), "
        f"Lambda ${PRICES['lambda_per_million']:.2f} per million and "
        f"${rd['function']['gb_second_price']:.10f} per GB-s ({PRICE_SOURCES['lambda']}), "
        f"ElastiCache Serverless ({d['cache_engine']}) ${PRICES['ecpu_per_million'][d['cache_engine']]:.4f} per million ECPUs "
        f"({PRICE_SOURCES['elasticache']}), DynamoDB on-demand "
        f"${PRICES['dynamodb_per_million_rru'][d['billing_mode']]:.3f} per million read request units "
        f"({PRICE_SOURCES['dynamodb']}).",
    ]
    for state in READ_STATES:
        title = ("An hour of an open packet (its first: the grabbing's pages, then 304s)" if state == "open"
                 else "The packet settled: every viewer's last poll, its settled page")
        cost_column = "cost per hour" if state == "open" else "cost"
        lines += [
            "",
            f"**{title}**",
            "",
            "| level | viewers (packets) | path | polls | CloudFront requests | data out, GB | reach API Gateway + Lambda "
            f"| ECPUs | DynamoDB read units | {cost_column} | per million polls |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, packets in c["levels"]:
            for path, label in READ_PATHS.items():
                h = read_hour(c, state, path, packets)
                mark = " (the template's)" if path == _path_of_template(rd) else ""
                lines.append(
                    f"| {name} | {count(packets * c['shares'])} ({count(packets)}) | {label}{mark} | {count(h['polls'])} | "
                    f"{count(h['cloudfront_requests'])} | {count(h['data_gb'])} | {count(h['origin'])} | {count(h['ecpu'])} | "
                    f"{count(h['rru'])} | {money(h['total'])} | {money(h['total'] / h['polls'] * 1e6)} |")
    lines += [
        "",
        "**The history's and the wallet's polls** (private: never cached at the edge; the wallet's 304 after one "
        "GetItem of the balance item, the history's too once every packet on its page has ended (while one is "
        "open, after its page is built, a query and a BatchGetItem): "
        f"{ASSUMPTIONS['private_read_units']} read unit each, an estimate: reads.json does not measure them), once a "
        "campaign:",
        "",
        "| level | viewers | polls | at most a second, per route | DynamoDB read units | cost |",
        "|---|---|---|---|---|---|",
    ]
    for name, packets in c["levels"]:
        q = private_polls(c, packets)
        lines.append(f"| {name} | {count(packets * c['shares'])} | {count(q['polls'])} | {count(q['per_route_per_second'])} | "
                     f"{count(q['rru'])} | {money(q['cost'])} |")
    table = read_limits(c)
    lines += [
        "",
        "**What binds first on the read side**, in the busiest seconds (the busier state's load, as a share "
        "of the limit's default): open, while the packet is being grabbed, when every viewer's poll and every "
        "edge location's revalidation reads a page, with the history's and wallet's polls after the grabs; "
        "settled, the interval in which every viewer's last poll reads the settled page (every viewer polling "
        "at once: an upper bound).",
        "",
        "| level | " + " | ".join(READ_PATHS.values()) + " |",
        "|---|" + "---|" * len(READ_PATHS),
    ]
    for name, packets in c["levels"]:
        cells = []
        for path in READ_PATHS:
            ranked = read_binding(c, path, packets)
            first, ratio = ranked[0]
            over = sum(1 for _, share in ranked[1:] if share > 1)
            cell = f"{table[first][0]} ({ratio:.0%}){' **over**' if ratio > 1 else ''}"
            if over:
                cell += f"; {over} more over"
            cells.append(cell)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    template_path = _path_of_template(rd)
    rate = " and ".join(f"`{name}`" for name in rd["rate_parameters"]) or "the template's throttle"
    lines += ["", f"Before a campaign, on the template's path ({READ_PATHS[template_path]}):", "",
              "| level | over their default | what to do |", "|---|---|---|"]
    for name, packets in c["levels"]:
        over = [key for key, share in read_binding(c, template_path, packets) if share > 1]
        loads = read_loads(c, template_path, packets)
        todo = "; ".join(f"{READ_LIMIT_SHORT[key]}: {READ_ADVICE[key].format(rate=rate, to=number(loads[key] * 1.25))}"
                         for key in over) or "nothing"
        lines.append(f"| {name} | {', '.join(READ_LIMIT_SHORT[key] for key in over) or 'none'} | {todo} |")
    lines += ["", "| limit | default | raisable | source |", "|---|---|---|---|"]
    for key, (name, default, raisable, source) in table.items():
        lines.append(f"| {name} | {default:,} | {raisable} | {source} |")
    return "\n".join(lines) + "\n"


def polls_table(c):
    """The markdown between docs/DEPLOY.md's capacity-polls markers: the cost per million polls of
    the shared view on the template's path, open and settled, part by part, and the history's and
    wallet's."""
    rd = c["rd"]
    path = _path_of_template(rd)
    _, packets = c["levels"][0]
    hours = {state: read_hour(c, state, path, packets) for state in READ_STATES}
    bare = {state: read_hour(c, state, "none", packets) for state in READ_STATES}

    def per_million(h, part):
        return money(h["cost"][part] / h["polls"] * 1e6)

    how = {
        "CloudFront requests": f"every poll, at ${PRICES['cloudfront_https_per_10k']:.4f} per 10,000 HTTPS requests",
        "data transfer out": ("every answer's bytes (pages while the packet changes, then 304s), at "
                              + (f"CloudFront's ${PRICES['cloudfront_per_gb']:.3f} a GB" if path != "none"
                                 else f"API Gateway's ${PRICES['internet_per_gb']:.2f} a GB")),
        "Origin Shield requests": f"each edge location's revalidation, at ${PRICES['origin_shield_per_10k']:.4f} per 10,000",
        "API Gateway": f"what reaches it, at ${PRICES['api_per_million'][rd['api_type']]:.2f} per million",
        "Lambda requests": f"what reaches it, at ${PRICES['lambda_per_million']:.2f} per million",
        "Lambda duration": (f"{rd['function']['logical_id']} at {rd['function']['memory_mb']:,} MB, each answer's measured p50 "
                            f"(at least {ASSUMPTIONS['grab_seconds'] * MS_PER_SECOND:.0f} ms)"),
        "ElastiCache ECPUs": "the measured Redis commands, and an open page's KB",
        "DynamoDB reads": "the measured read units (a settled page's Query; a 304 reads none)",
    }
    reach = {state: count(h["origin"] / h["polls"] * 1e6) for state, h in hours.items()}
    lines = [
        f"The shared view (`{' '.join(rd['shared_route'])}`) on the template's path ({READ_PATHS[path]}): a "
        f"{c['shares']:,}-share campaign packet's viewers polling it every {c['interval']:g} s for its first hour "
        "open, and each one's last poll once it is settled (docs/CAPACITY.md, \"The read side of a campaign\"; "
        f"bench/results/reads.json, commit {c['reads']['commit']}). Of a million polls, {reach['open']} of an open "
        f"packet's reach API Gateway and Lambda, and {reach['settled']} of a settled one's.",
        "",
        "| part | per million polls, open | per million last polls, settled | how |",
        "|---|---|---|---|",
    ]
    for part in hours["open"]["cost"]:
        if path == "none" and part == "CloudFront requests" or path != "shield" and part == "Origin Shield requests":
            continue
        lines.append(f"| {part} | {per_million(hours['open'], part)} | {per_million(hours['settled'], part)} | {how[part]} |")
    total = {state: money(h["total"] / h["polls"] * 1e6) for state, h in hours.items()}
    bare_total = {state: money(h["total"] / h["polls"] * 1e6) for state, h in bare.items()}
    lines.append(f"| **total** | **~{total['open']}** | **~{total['settled']}** | the template's path: {READ_PATHS[path]} |")
    if path != "none":
        lines.append(f"| without the edge cache | ~{bare_total['open']} | ~{bare_total['settled']} | every poll reaches "
                     "API Gateway and Lambda, and data transfer out is API Gateway's |")
    q = private_polls(c, packets)
    lines.append(f"| a history or wallet poll (private, never cached) | ~{money(q['cost'] / q['polls'] * 1e6)} | "
                 f"~{money(q['cost'] / q['polls'] * 1e6)} | API Gateway, Lambda at "
                 f"{ASSUMPTIONS['grab_seconds'] * MS_PER_SECOND:.0f} ms, the wallet's one GetItem or the history's "
                 f"query ({ASSUMPTIONS['private_read_units']} read unit, an estimate) |")
    return "\n".join(lines) + "\n"


def read_blocks(root=ROOT, deployment=None, reads=None):
    """The read side's two blocks, (capacity-reads, capacity-polls): computed when reads.json
    exists (or `reads` is given), else the one-line note."""
    reads = reads if reads is not None else load_reads(root)
    if reads is None:
        return NOT_MEASURED, NOT_MEASURED
    deployment = deployment or load_deployment(root / "template.yaml")
    c = read_campaign(reads, load_polling(root), deployment, load_read_deployment(root / "template.yaml"))
    return read_section(c), polls_table(c)


def blocks(root=ROOT, deployment=None, reads=None):
    """Every generated block, by its markers."""
    deployment = deployment or load_deployment(root / "template.yaml")
    section, polls = read_blocks(root, deployment, reads)
    return {
        (BEGIN, END): tables(load_figures(root, deployment), deployment),
        (READS_BEGIN, READS_END): section,
        (POLLS_BEGIN, POLLS_END): polls,
    }


def replaced(text, block, begin=BEGIN, end=END):
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + block + text[stop:]


def rendered(text, generated):
    """`text` with each block of `generated` whose markers it holds put between them."""
    for (begin, end), block in generated.items():
        if begin in text:
            text = replaced(text, block, begin, end)
    return text


def main(argv):
    if len(argv) >= 3 and argv[1] in ("--write", "--check"):
        generated = blocks()
        status = 0
        for name in argv[2:]:
            path = Path(name)
            text = path.read_text()
            if not any(begin in text for begin, _ in generated):
                print(f"{path}: no capacity markers")
                status = 1
                continue
            expected = rendered(text, generated)
            if argv[1] == "--write":
                path.write_text(expected)
            elif text != expected:
                print(f"{path}: the capacity tables are not what scripts/capacity.py computes; run: "
                      "python3 scripts/capacity.py --write docs/CAPACITY.md docs/DEPLOY.md")
                status = 1
        return status
    for block in blocks().values():
        print(block)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
