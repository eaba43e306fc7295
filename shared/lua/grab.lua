#!lua
-- grab.lua: one user grabs one share of one packet, atomically, in one round trip.
--
-- KEYS[1]  rp:{<id>}:packet  hash: the packet's fields (see load.lua), among them open_until
--                            (expires_at while open, 0 once closed) and persisted, and one
--                            field ':<user>' = '<seq>:<amount>:<left>:<at_ms>' per user who grabbed
-- KEYS[2]  rp:{<id>}:pool    list: the shares not yet taken, '<seq>:<amount>:<left>', in seq
--                            order (left: how many shares remain once this one is taken)
-- KEYS[3]  rp:{<id>}:grabs   list: the grab log, '<seq>:<amount>:<left>:<at_ms>:<user>', in grab order
-- KEYS[4]  rp:{<id>}:lookup  string: what the ledger said of an id Redis does not hold:
--                            'pending' while one caller asks it, then 'absent' or 'recorded'
-- ARGV[1]  the caller's field, ':<user>' (the user is the caller's verified `sub`)
-- ARGV[2]  now, epoch milliseconds
-- ARGV[3]  the lookup lease, milliseconds: how long one caller may take to ask the ledger
--
-- Returns, by type (the answers grabs meet most are bare strings: no table to build, which
-- measured ~3.6 us of Redis time per call):
--   bulk string '<seq>:<amount>:<left>:<at_ms>'          grabbed now
--   bulk string '<seq>:<amount>:<left>:<at_ms>/<left now>' already grabbed: that grab, and
--                                                        shares left now
--   array {'<seq>:<amount>:<left>:<at_ms>'}               grabbed now, and this grab is the
--                                                        packet's only one settle has not
--                                                        persisted (the log held exactly
--                                                        `persisted` entries before it): the
--                                                        caller marks the packet for settle,
--                                                        once per batch of grabs, not per grab
--   integer 3 sold out; 4 expired (at or after expires_at, or closed, with shares left);
--           5 not in Redis, the ledger said lately there is no such packet;
--           6 not in Redis, another caller is asking the ledger right now: try again shortly;
--           7 not in Redis, the ledger recorded it lately: ask the ledger, nothing to record;
--           0 not in Redis, and this caller now holds the lookup: ask the ledger, then record
--             its verdict
-- Checks run in this order: unknown, already grabbed (answered whatever the packet's state),
-- expired or closed, sold out; only then is a share popped.
--
-- Cost: a fresh grab is 4 commands (HMGET, LPOP, HSET, RPUSH), a repeat 2 (HMGET, LLEN). No
-- counter is kept and nothing is encoded: each share carries its seq and what is left after it.
-- The `#!lua` line makes Redis refuse the whole script with -OOM when it is over maxmemory
-- (noeviction), before anything changes; the store answers repeats from a read then.

local packet = redis.call('HMGET', KEYS[1], 'open_until', 'persisted', ARGV[1])
local prior = packet[3]
if prior then
  return prior .. '/' .. redis.call('LLEN', KEYS[2])
end
if not packet[1] then
  local verdict = redis.call('GET', KEYS[4])
  if verdict == 'absent' then
    return 5
  elseif verdict == 'recorded' then
    return 7
  elseif verdict then
    return 6
  end
  redis.call('SET', KEYS[4], 'pending', 'PX', ARGV[3])
  return 0
end

if tonumber(ARGV[2]) >= tonumber(packet[1]) then
  if redis.call('LLEN', KEYS[2]) == 0 then
    return 3
  end
  return 4
end

local share = redis.call('LPOP', KEYS[2])
if not share then
  return 3
end
local grab = share .. ':' .. ARGV[2]
redis.call('HSET', KEYS[1], ARGV[1], grab)
if redis.call('RPUSH', KEYS[3], grab .. ARGV[1]) - 1 == tonumber(packet[2]) then
  return {grab}
end
return grab
