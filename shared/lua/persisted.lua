-- persisted.lua: records that the first N grabs of a packet's log are in DynamoDB. The mark
-- only moves forward, so a slow settle run can never make a faster one's work count twice.
--
-- KEYS[1]  rp:{<id>}:meta
-- ARGV[1]  N, how many log entries DynamoDB has confirmed
--
-- Returns the mark after the call (0 when Redis holds no such packet).

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
local persisted = tonumber(redis.call('HGET', KEYS[1], 'persisted') or '0')
local confirmed = tonumber(ARGV[1])
if confirmed > persisted then
  redis.call('HSET', KEYS[1], 'persisted', confirmed)
  return confirmed
end
return persisted
