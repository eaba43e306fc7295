#!lua
-- grab.lua: one user grabs one share of one packet, atomically, in one round trip.
--
-- KEYS[1]  rp:{<id>}:packet  hash: the packet's fields (see load.lua), and one field
--                            '@<user>' = '<seq>:<amount>:<at_ms>' per user who grabbed
-- KEYS[2]  rp:{<id>}:pool    list: the shares not yet taken, '<seq>:<amount>', in seq order
-- KEYS[3]  rp:{<id>}:grabs   list: every grab, '<seq>:<amount>:<at_ms>:<user>', in grab order
-- KEYS[4]  rp:{<id>}:lookup  string: what the ledger said of an id Redis does not hold:
--                            'pending' while one caller asks it, then 'absent' or 'recorded'
-- ARGV[1]  the user (the caller's verified `sub`)
-- ARGV[2]  now, epoch milliseconds
-- ARGV[3]  the lookup lease, milliseconds: how long one caller may take to ask the ledger
--
-- Returns {outcome, grab, remaining_count, dirtied}, outcome one of
--   0 not in Redis, and this caller now holds the lookup: ask the ledger, then record its verdict
--   7 not in Redis, the ledger recorded it lately: ask the ledger, nothing to record
--   6 not in Redis, another caller is asking the ledger right now: try again shortly
--   5 not in Redis, the ledger said lately there is no such packet
--   1 grabbed, 2 already grabbed, 3 sold out,
--   4 expired (at or after expires_at, or closed with shares left).
-- grab is '<seq>:<amount>:<at_ms>' for 1 and 2 (the grab just made, or the earlier one), else ''.
-- Checks run in this order: unknown, already grabbed (answered whatever the packet's state),
-- expired, sold out; only then is a share popped.
-- dirtied is 1 when this grab is the packet's only one settle has not persisted (the log held
-- exactly `persisted` entries before it): the caller then marks the packet for settle, once per
-- batch of grabs rather than once per grab. Otherwise 0.
--
-- Cost: a fresh grab is 4 commands (HMGET, LPOP, HSET, RPUSH), a repeat 2 (HMGET, LLEN). No
-- counter is kept: the pool.s length is what is left, and each share carries its seq.
-- The `#!lua` line makes Redis refuse the whole script with -OOM when it is over maxmemory
-- (noeviction), before anything changes; the store answers repeats from a read then.

local packet = redis.call('HMGET', KEYS[1], 'expires_at', 'status', 'count', 'persisted', '@' .. ARGV[1])
local prior = packet[5]
if prior then
  return {2, prior, redis.call('LLEN', KEYS[2]), 0}
end
if not packet[1] then
  local verdict = redis.call('GET', KEYS[4])
  if verdict == 'absent' then
    return {5, '', 0, 0}
  elseif verdict == 'recorded' then
    return {7, '', 0, 0}
  elseif verdict then
    return {6, '', 0, 0}
  end
  redis.call('SET', KEYS[4], 'pending', 'PX', ARGV[3])
  return {0, '', 0, 0}
end

if packet[2] ~= 'open' or tonumber(ARGV[2]) >= tonumber(packet[1]) then
  local left = redis.call('LLEN', KEYS[2])
  if left == 0 then
    return {3, '', 0, 0}
  end
  return {4, '', left, 0}
end

local share = redis.call('LPOP', KEYS[2])
if not share then
  return {3, '', 0, 0}
end
local grab = share .. ':' .. ARGV[2]
redis.call('HSET', KEYS[1], '@' .. ARGV[1], grab)
local logged = redis.call('RPUSH', KEYS[3], grab .. ':' .. ARGV[1])
local seq = tonumber(string.sub(share, 1, string.find(share, ':', 1, true) - 1))
local dirtied = 0
if logged - 1 == tonumber(packet[4]) then
  dirtied = 1
end
return {1, grab, tonumber(packet[3]) - seq, dirtied}
