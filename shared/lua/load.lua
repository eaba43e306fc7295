-- load.lua: makes a packet grabbable: its meta, its shares not yet taken, and (when a packet is
-- reloaded from the ledger) the grabs the ledger already holds.
--
-- KEYS[1]  rp:{<id>}:meta    hash, created here (see grab.lua for its fields)
-- KEYS[2]  rp:{<id>}:shares  list of shares in cents, created here
-- KEYS[3]  rp:{<id>}:users   hash user -> "<amount>:<grabbed_at_ms>", filled from ARGV[3]
-- KEYS[4]  rp:{<id>}:log     list of grabs, filled from ARGV[3] (all already in the ledger)
-- ARGV[1]  'add': load unless Redis holds the packet already (send, restore); or 'replace':
--          whatever Redis holds of the packet gives way to the ledger's state (settle's re-sync)
-- ARGV[2]  a JSON object of the packet's fields: sender, kind, split and greeting (each only
--          when set), seed, total_cents, count, created_at, expires_at (the two in epoch ms)
-- ARGV[3]  a JSON array of grabs already made, [{seq, user, amount, at}] in seq order; [] at send
-- ARGV[4..] the shares not yet taken, in the order they are handed out
--
-- The keys get no TTL here: they live until settle has finalised the packet and retires them.
-- Returns 1 when loaded now, 0 when the packet was already loaded (nothing is changed).

if ARGV[1] == 'replace' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local packet = cjson.decode(ARGV[2])
local grabs = cjson.decode(ARGV[3])
-- Sequence numbers continue after the last share taken: grab `seq` takes share `seq`.
local last_seq = tonumber(packet.shares_taken)
local shares = {}
local remaining_cents = 0
for i = 4, #ARGV do
  shares[#shares + 1] = ARGV[i]
  remaining_cents = remaining_cents + tonumber(ARGV[i])
end

local fields = {
  'sender', packet.sender,
  'kind', packet.kind,
  'seed', packet.seed,
  'total_cents', packet.total_cents,
  'count', packet.count,
  'created_at', packet.created_at,
  'expires_at', packet.expires_at,
  'status', 'open',
  'remaining_cents', remaining_cents,
  'remaining_count', #shares,
  'grabbed', last_seq,
  'persisted', #grabs,
}
for _, optional in ipairs({'split', 'greeting'}) do
  if type(packet[optional]) == 'string' then
    fields[#fields + 1] = optional
    fields[#fields + 1] = packet[optional]
  end
end
redis.call('HSET', KEYS[1], unpack(fields))
for first = 1, #shares, 500 do
  redis.call('RPUSH', KEYS[2], unpack(shares, first, math.min(first + 499, #shares)))
end
for _, grab in ipairs(grabs) do
  redis.call('HSET', KEYS[3], grab.user, string.format('%d:%d', grab.amount, grab.at))
  redis.call('RPUSH', KEYS[4], cjson.encode(grab))
end
return 1
