-- close.lua: closes a packet to grabs once it is finished (no share left) or expired; after
-- this no grab succeeds. A packet neither finished nor expired is left open.
--
-- KEYS[1]  rp:{<id>}:packet
-- KEYS[2]  rp:{<id>}:pool (the shares not yet taken)
-- ARGV[1]  now, epoch milliseconds
--
-- Returns 0 when Redis holds no such packet, 1 when it is still open (nothing changed),
-- 2 when it is closed (now, or by an earlier call).

local packet = redis.call('HMGET', KEYS[1], 'status', 'expires_at')
if not packet[1] then
  return 0
end
if packet[1] == 'closed' then
  return 2
end
if tonumber(ARGV[1]) < tonumber(packet[2]) and redis.call('LLEN', KEYS[2]) > 0 then
  return 1
end
redis.call('HSET', KEYS[1], 'status', 'closed')
return 2
