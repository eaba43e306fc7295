-- persisted.lua: records that the first N grabs of a packet's log are in the ledger. The mark
-- only moves forward, so a slow settle run can never make a faster one's work count twice.
--
-- KEYS[1]  rp:{<id>}:packet
-- ARGV[1]  N, how many log entries the ledger has confirmed
--
-- Returns the mark after the call (0 when Redis holds no such packet).

local persisted = redis.call('HGET', KEYS[1], 'persisted')
if not persisted then
  return 0
end
local confirmed = tonumber(ARGV[1])
if confirmed > tonumber(persisted) then
  redis.call('HSET', KEYS[1], 'persisted', confirmed)
  return confirmed
end
return tonumber(persisted)
