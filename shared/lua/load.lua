-- load.lua: makes a packet grabbable: its meta and its list of shares. Idempotent.
--
-- KEYS[1]  rp:{<id>}:meta    hash, created here (see grab.lua for its fields)
-- KEYS[2]  rp:{<id>}:shares  list of shares in cents, created here
-- ARGV[1]  keep_until, epoch ms: when the packet's keys expire (a while after the packet does)
-- ARGV[2]  a JSON object of the packet's fields: sender, kind, split, greeting, total_cents,
--          count, created_at, expires_at (the two times in epoch ms)
-- ARGV[3..] the shares, in the order they are handed out
--
-- Returns 1 when loaded now, 0 when the packet was already loaded (nothing is changed).

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local packet = cjson.decode(ARGV[2])
local shares = {}
local remaining_cents = 0
for i = 3, #ARGV do
  shares[#shares + 1] = ARGV[i]
  remaining_cents = remaining_cents + tonumber(ARGV[i])
end

redis.call('HSET', KEYS[1],
  'sender', packet.sender,
  'kind', packet.kind,
  'split', packet.split or '',
  'greeting', packet.greeting or '',
  'total_cents', packet.total_cents,
  'count', packet.count,
  'created_at', packet.created_at,
  'expires_at', packet.expires_at,
  'keep_until', ARGV[1],
  'status', 'open',
  'remaining_cents', remaining_cents,
  'remaining_count', #shares,
  'grabbed', 0)
redis.call('PEXPIREAT', KEYS[1], ARGV[1])
if #shares > 0 then
  for first = 1, #shares, 500 do
    redis.call('RPUSH', KEYS[2], unpack(shares, first, math.min(first + 499, #shares)))
  end
  redis.call('PEXPIREAT', KEYS[2], ARGV[1])
end
return 1
