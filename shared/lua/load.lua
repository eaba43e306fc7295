-- load.lua: makes a packet grabbable: its meta, its shares not yet taken, and (when settle
-- restores a packet Redis lost) the grabs DynamoDB already holds. Idempotent.
--
-- KEYS[1]  rp:{<id>}:meta    hash, created here (see grab.lua for its fields)
-- KEYS[2]  rp:{<id>}:shares  list of shares in cents, created here
-- KEYS[3]  rp:{<id>}:users   hash user -> "<amount>:<grabbed_at_ms>", filled from ARGV[3]
-- KEYS[4]  rp:{<id>}:log     list of grabs, filled from ARGV[3] (all already persisted)
-- ARGV[1]  keep_until, epoch ms: when the packet's keys expire (a while after the packet does)
-- ARGV[2]  a JSON object of the packet's fields: sender, kind, split, greeting, total_cents,
--          seed, count, created_at, expires_at (the two times in epoch ms)
-- ARGV[3]  a JSON array of grabs already made, [{seq, user, amount, at}] in seq order; [] at send
-- ARGV[4..] the shares not yet taken, in the order they are handed out
--
-- Returns 1 when loaded now, 0 when the packet was already loaded (nothing is changed).

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local packet = cjson.decode(ARGV[2])
local grabs = cjson.decode(ARGV[3])
-- Sequence numbers continue after the highest grab on record, even across gaps.
local last_seq = 0
for _, grab in ipairs(grabs) do
  if grab.seq > last_seq then last_seq = grab.seq end
end
local shares = {}
local remaining_cents = 0
for i = 4, #ARGV do
  shares[#shares + 1] = ARGV[i]
  remaining_cents = remaining_cents + tonumber(ARGV[i])
end

redis.call('HSET', KEYS[1],
  'sender', packet.sender,
  'kind', packet.kind,
  'split', packet.split or '',
  'greeting', packet.greeting or '',
  'seed', packet.seed,
  'total_cents', packet.total_cents,
  'count', packet.count,
  'created_at', packet.created_at,
  'expires_at', packet.expires_at,
  'keep_until', ARGV[1],
  'status', 'open',
  'remaining_cents', remaining_cents,
  'remaining_count', #shares,
  'grabbed', last_seq,
  'persisted', #grabs)
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
for first = 1, #shares, 500 do
  redis.call('RPUSH', KEYS[2], unpack(shares, first, math.min(first + 499, #shares)))
end
for _, grab in ipairs(grabs) do
  redis.call('HSET', KEYS[3], grab.user, string.format('%d:%d', grab.amount, grab.at))
  redis.call('RPUSH', KEYS[4], cjson.encode(grab))
end
for i = 2, 4 do
  redis.call('PEXPIREAT', KEYS[i], ARGV[1])
end
return 1
