"""A client generated from openapi.yaml by a well-known generator (openapi-python-client, from
PyPI) tells API Gateway's own answers from the app's: a throttled grab (429 `{"message": …}`)
is not a passphrase lockout (429 `too_many_attempts`), an unknown route (404 `{"message": …}`)
is not an unknown packet (404 `not_found`), the JWT authorizer's 401 is not the app's, a
withdrawal's receipt (201, or 200 for a retry) is not one of its refusals (402
`insufficient_funds`, 422 `idempotency_key_reused`, 400). Every success answer carrying amounts
names the stack's currency (`"currency": {"code": "CNY", "exponent": 2}`), and the decoded model
must expose it. Each shape goes through the generated `_parse_response` of the operation that can
receive it; then the local API's own answers (a refused token, an unknown packet, the fuzzing
user's wallet and a withdrawal by that user, who holds no money) go through the same client over
HTTP. Usage: generated_client.py <base url> <bearer token> (scripts/fuzz.sh runs it
with the local API it started). Exits non-zero on the first mismatch.
"""

import importlib
import json
import os
import subprocess
import sys
import tempfile

import httpx

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATOR = os.path.join(os.path.dirname(sys.executable), "openapi-python-client")


def generate(into):
    config = os.path.join(into, "config.json")
    with open(config, "w") as file:
        json.dump({"post_hooks": [], "project_name_override": "client", "package_name_override": "red_packets_client"}, file)
    subprocess.run(
        [GENERATOR, "generate", "--path", os.path.join(HERE, "..", "openapi.yaml"), "--meta", "none",
         "--output-path", os.path.join(into, "red_packets_client"), "--config", config],
        check=True, capture_output=True,
    )
    sys.path.insert(0, into)
    return importlib.import_module("red_packets_client")


def answering(client_module, status, body):
    """A client whose every request is answered with `status` and `body`."""
    transport = httpx.MockTransport(lambda request: httpx.Response(status, json=body))
    return client_module.AuthenticatedClient(base_url="https://example", token="t", httpx_args={"transport": transport})


def error_code(parsed):
    """The `code` of a decoded `Error`, as a string (the generator makes it an enum)."""
    code = parsed.error.code
    return str(code.value if hasattr(code, "value") else code)


def named_currency(parsed):
    """The `(code, exponent)` of a decoded answer's `currency`; None when it has none."""
    currency = getattr(parsed, "currency", None)
    return None if currency is None else (currency.code, currency.exponent)


def main():
    base_url, token = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as into:
        client = generate(into)
        grab = importlib.import_module("red_packets_client.api.default.grab_packet")
        send = importlib.import_module("red_packets_client.api.default.send_packet")
        withdraw = importlib.import_module("red_packets_client.api.default.request_withdrawal")
        wallet = importlib.import_module("red_packets_client.api.default.my_wallet")
        models = importlib.import_module("red_packets_client.models")
        packet_id = "0123456789abcdef0123456789abcdef"
        currency = {"code": "CNY", "exponent": 2}
        receipt = {
            "withdrawal_id": "wd-5f0c2a9e4b7d41c68e93a1f2d6b8c047", "user": "alice", "amount_cents": 2000,
            "destination": "card-7731", "status": "pending", "requested_at": "2026-11-24T08:00:00.000Z",
            "created": True, "balance_cents": 3000, "currency": currency,
        }
        replayed = {**receipt, "status": "paid", "resolved_at": "2026-11-24T09:30:00.000Z", "reference": "payout-1",
                    "created": False}
        share = {"packet_id": packet_id, "user": "alice", "amount_cents": 1234, "grabbed_at": "2026-11-24T08:00:00.000Z",
                 "remaining_count": 3, "already_grabbed": False, "currency": currency}
        view = {
            "packet_id": packet_id, "sender": "alice", "kind": "fixed", "split": None, "greeting": None,
            "total_cents": 100, "count": 1, "remaining_cents": 100, "remaining_count": 1, "status": "open",
            "created_at": "2026-11-24T08:00:00.000Z", "expires_at": "2026-11-25T08:00:00.000Z", "grabs": [], "grab_count": 0,
            "best_luck": None, "settled": False, "refund_cents": None, "has_passphrase": False, "eligible": True,
            "split_version": 2, "commitment": "a" * 64, "seed": None, "currency": currency,
        }
        page = {
            "balance_cents": 3000, "next_cursor": None, "currency": {"code": "JPY", "exponent": 0},
            "items": [{"kind": "withdrawal", "amount_cents": 2000, "reference": receipt["withdrawal_id"], "status": "pending",
                       "at": "2026-11-24T08:00:00.000Z"}],
        }
        cases = [
            (grab, 200, share, models.GrabResponse, None),
            (grab, 429, {"message": "Too Many Requests"}, models.GatewayMessage, None),
            (grab, 429, {"error": {"code": "too_many_attempts", "message": "too many"}}, models.Error, "too_many_attempts"),
            (grab, 401, {"message": "Unauthorized"}, models.GatewayMessage, None),
            (grab, 404, {"message": "Not Found"}, models.GatewayMessage, None),
            (grab, 404, {"error": {"code": "not_found", "message": "no such packet"}}, models.Error, "not_found"),
            (grab, 403, {"message": "Forbidden"}, models.GatewayMessage, None),
            (grab, 403, {"error": {"code": "wrong_passphrase", "message": "wrong"}}, models.Error, "wrong_passphrase"),
            (grab, 500, {"message": "Internal Server Error"}, models.GatewayMessage, None),
            (grab, 503, {"message": "Service Unavailable"}, models.GatewayMessage, None),
            (grab, 503, {"error": {"code": "unavailable", "message": "redis is unavailable"}}, models.Error, "unavailable"),
            (send, 201, view, models.PacketView, None),
            (send, 429, {"message": "Too Many Requests"}, models.GatewayMessage, None),
            (send, 429, {"error": {"code": "limit_exceeded", "message": "limit", "field": "max_sends_per_day"}}, models.Error, "limit_exceeded"),
            (withdraw, 201, receipt, models.WithdrawalReceipt, None),
            (withdraw, 200, replayed, models.WithdrawalReceipt, None),
            (withdraw, 402, {"error": {"code": "insufficient_funds", "message": "short"}}, models.Error, "insufficient_funds"),
            (withdraw, 422, {"error": {"code": "idempotency_key_reused", "message": "another body"}}, models.Error, "idempotency_key_reused"),
            (withdraw, 400, {"error": {"code": "invalid_request", "message": "bad", "field": "destination"}}, models.Error, "invalid_request"),
            (withdraw, 429, {"message": "Too Many Requests"}, models.GatewayMessage, None),
            (wallet, 200, page, models.WalletPage, None),
            (wallet, 404, {"error": {"code": "not_found", "message": "no wallets"}}, models.Error, "not_found"),
        ]
        withdrawal = models.WithdrawalRequest(amount_cents=2000, destination="card-7731")
        for operation, status, body, expected, code in cases:
            http = answering(client, status, body)
            if operation is grab:
                parsed = operation.sync_detailed(packet_id=packet_id, client=http).parsed
            elif operation is withdraw:
                parsed = operation.sync_detailed(client=http, body=withdrawal, idempotency_key="generated-client-1").parsed
            elif operation is wallet:
                parsed = operation.sync_detailed(client=http).parsed
            else:
                request = models.SendRequest(total_cents=100, count=1)
                parsed = operation.sync_detailed(client=http, body=request, idempotency_key="generated-client-1").parsed
            name = f"{operation.__name__.rsplit('.', 1)[-1]} {status} {json.dumps(body)}"
            if not isinstance(parsed, expected):
                sys.exit(f"{name}: decoded as {type(parsed).__name__}, expected {expected.__name__}")
            if code is not None and error_code(parsed) != code:
                sys.exit(f"{name}: code {parsed.error.code}")
            if isinstance(parsed, models.WithdrawalReceipt):
                decoded = (parsed.withdrawal_id, str(parsed.status.value), parsed.created, parsed.reference or None)
                if decoded != (body["withdrawal_id"], body["status"], body["created"], body.get("reference")):
                    sys.exit(f"{name}: decoded as {decoded}")
            if isinstance(parsed, models.WalletPage):
                decoded = (parsed.balance_cents, [(str(item.kind.value), item.amount_cents) for item in parsed.items])
                if decoded != (body["balance_cents"], [(item["kind"], item["amount_cents"]) for item in body["items"]]):
                    sys.exit(f"{name}: decoded as {decoded}")
            # Every success answer names its currency, and the model exposes it.
            if "currency" in body and named_currency(parsed) != (body["currency"]["code"], body["currency"]["exponent"]):
                sys.exit(f"{name}: currency decoded as {named_currency(parsed)}")
        # The local API's own answers, over HTTP, through the same client.
        live = client.AuthenticatedClient(base_url=base_url, token=token)
        refused = client.AuthenticatedClient(base_url=base_url, token="not-a-token")
        unknown = grab.sync_detailed(packet_id=packet_id, client=live)
        if unknown.status_code != 404 or not isinstance(unknown.parsed, models.Error):
            sys.exit(f"an unknown packet: {unknown.status_code} {unknown.parsed!r}")
        denied = grab.sync_detailed(packet_id=packet_id, client=refused)
        if denied.status_code != 401 or not isinstance(denied.parsed, models.GatewayMessage):
            sys.exit(f"a refused token: {denied.status_code} {denied.parsed!r}")
        if "invalid_token" not in denied.headers.get("www-authenticate", ""):
            sys.exit(f"a refused token without its www-authenticate: {dict(denied.headers)}")
        short = withdraw.sync_detailed(client=live, body=withdrawal, idempotency_key="generated-client-withdrawal-1")
        mine = wallet.sync_detailed(client=live)
        if os.environ.get("FUNDS", "wallet") == "none":
            # No wallets here (make test's fuzzing stack): both are the app's 404, not the gateway's.
            for name, answer in (("wallet", mine), ("withdrawal", short)):
                if answer.status_code != 404 or not isinstance(answer.parsed, models.Error) or error_code(answer.parsed) != "not_found":
                    sys.exit(f"the fuzzing user's {name} without wallets: {answer.status_code} {answer.parsed!r}")
        else:
            # The fuzzing user's wallet (never topped up): a page in the stack's currency.
            if mine.status_code != 200 or not isinstance(mine.parsed, models.WalletPage):
                sys.exit(f"the fuzzing user's wallet: {mine.status_code} {mine.parsed!r}")
            code, exponent = named_currency(mine.parsed)
            if code != os.environ.get("CURRENCY", "CNY") or not isinstance(exponent, int) or not 0 <= exponent <= 4:
                sys.exit(f"the fuzzing user's wallet in currency {code!r} with exponent {exponent!r}")
            # The fuzzing user was never topped up: a withdrawal is refused, and nothing is recorded.
            if short.status_code != 402 or not isinstance(short.parsed, models.Error) or error_code(short.parsed) != "insufficient_funds":
                sys.exit(f"a withdrawal with no money: {short.status_code} {short.parsed!r}")
        print(f"generated client (openapi-python-client): {len(cases)} answers and 4 live ones decoded as their shapes")


if __name__ == "__main__":
    main()
