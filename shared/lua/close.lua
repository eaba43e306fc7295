-- close.lua: closes a packet to grabs once it is finished (no share left) or expired; after
-- this no grab succeeds. A packet neither finished nor expired is left open.
--
-- KEYS[1]  rp:{<id>}:meta
-- ARGV[1]  now, epoch milliseconds
--
-- Returns 0 when Redis holds no such packet, 1 when it is still open (nothing changed),
-- 2 when it is closed (now, or by an earlier call).

local meta = redis.call('HMGET', KEYS[1], 'status', 'expires_at', 'remaining_count')
if not meta[1] then
  return 0
end
if meta[1] == 'closed' then
  return 2
end
if tonumber(meta[3]) > 0 and tonumber(ARGV[1]) < tonumber(meta[2]) then
  return 1
end
redis.call('HSET', KEYS[1], 'status', 'closed')
return 2
