-- grab.lua: one user grabs one share of one packet, atomically, in one round trip.
--
-- KEYS[1]  rp:{<id>}:meta    hash: status, expires_at, remaining_cents, remaining_count, grabbed, persisted
-- KEYS[2]  rp:{<id>}:shares  list: the shares not yet taken, in cents
-- KEYS[3]  rp:{<id>}:users   hash: user -> "<amount>:<grabbed_at_ms>"
-- KEYS[4]  rp:{<id>}:log     list: every grab as JSON {seq, user, amount, at}, in grab order
-- KEYS[5]  rp:{<id>}:lookup  string: what DynamoDB said of an id Redis does not hold:
--                            'pending' while one caller asks it, then 'absent' or 'recorded'
-- ARGV[1]  the user (the caller's verified `sub`)
-- ARGV[2]  now, epoch milliseconds
-- ARGV[3]  the lookup lease, milliseconds: how long one caller may take to ask DynamoDB
--
-- Returns {outcome, amount, grabbed_at_ms, remaining_count, dirtied}, outcome one of
--   0 not in Redis, and this caller now holds the lookup: ask DynamoDB, then record its verdict
--   7 not in Redis, DynamoDB recorded it lately: ask DynamoDB, nothing to record
--   6 not in Redis, another caller is asking DynamoDB right now: try again shortly
--   5 not in Redis, DynamoDB said lately there is no such packet
--   1 grabbed, 2 already grabbed (amount and time of that grab), 3 sold out,
--   4 expired (at or after expires_at, or closed with shares left).
-- Checks run in this order: unknown, already grabbed (answered whatever the packet's state),
-- expired, sold out; only then is a share popped.
-- dirtied is 1 when this grab is the packet's only one settle has not persisted (the log held
-- exactly `persisted` entries before it): the caller then marks the packet for settle, once per
-- batch of grabs rather than once per grab. Otherwise 0.

local meta = redis.call('HMGET', KEYS[1], 'expires_at', 'remaining_count', 'status', 'persisted')
if not meta[1] then
  local verdict = redis.call('GET', KEYS[5])
  if verdict == 'absent' then
    return {5, 0, 0, 0, 0}
  elseif verdict == 'recorded' then
    return {7, 0, 0, 0, 0}
  elseif verdict then
    return {6, 0, 0, 0, 0}
  end
  redis.call('SET', KEYS[5], 'pending', 'PX', ARGV[3])
  return {0, 0, 0, 0, 0}
end
local expires_at = tonumber(meta[1])
local remaining_count = tonumber(meta[2])

local prior = redis.call('HGET', KEYS[3], ARGV[1])
if prior then
  local amount, at = string.match(prior, '^(%d+):(%d+)$')
  return {2, tonumber(amount), tonumber(at), remaining_count, 0}
end

local now = tonumber(ARGV[2])
if meta[3] ~= 'open' or now >= expires_at then
  if remaining_count == 0 then
    return {3, 0, 0, 0, 0}
  end
  return {4, 0, 0, remaining_count, 0}
end

if remaining_count == 0 then
  return {3, 0, 0, 0, 0}
end
-- The first write must be one Redis refuses when it is out of memory (HINCRBY): under
-- noeviction a full Redis then fails the grab before anything changed. (LPOP frees memory and
-- is allowed, and once a script has written, Redis lets it finish.)
local seq = redis.call('HINCRBY', KEYS[1], 'grabbed', 1)
local share = redis.call('LPOP', KEYS[2])
if not share then
  redis.call('HINCRBY', KEYS[1], 'grabbed', -1)
  return {3, 0, 0, 0, 0}
end
redis.call('HSET', KEYS[3], ARGV[1], share .. ':' .. ARGV[2])
local logged = redis.call('RPUSH', KEYS[4], cjson.encode({seq = seq, user = ARGV[1], amount = tonumber(share), at = now}))
redis.call('HINCRBY', KEYS[1], 'remaining_cents', -tonumber(share))
remaining_count = redis.call('HINCRBY', KEYS[1], 'remaining_count', -1)
local dirtied = 0
if logged - 1 == tonumber(meta[4] or '0') then
  dirtied = 1
end
return {1, tonumber(share), now, remaining_count, dirtied}
