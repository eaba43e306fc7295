-- persisted.lua: records that the first N grabs of a packet's log are in the ledger. The mark
-- only moves forward, so a slow settle run can never make a faster one's work count twice; and
-- only over the log settle read: the log's N-th entry must still be the grab settle recorded
-- last, so a failover that replaced the log's tail (other grabs at the same places) never has
-- grabs settle did not record counted as recorded.
--
-- KEYS[1]  rp:{<id>}:packet
-- KEYS[2]  rp:{<id>}:grabs (the grab log; a head '~' is not a grab)
-- ARGV[1]  N, how many grabs of the log the ledger has confirmed
-- ARGV[2]  the N-th entry's grab as settle read it: '<seq>:<amount>:<at_ms>:<user>'
--
-- Returns the mark after the call, in grabs (0 when Redis holds no such packet).

-- The lists' mark, no grab and no share (keys.rs's LIST_MARK, checked there).
local LIST_MARK = '~'
local persisted = redis.call('HGET', KEYS[1], 'persisted')
if not persisted then
  return 0
end
-- A log loaded since the marks starts with '~', which `persisted` counts and ARGV[1] does not.
local head = redis.call('LINDEX', KEYS[2], 0) == LIST_MARK and 1 or 0
local confirmed = tonumber(ARGV[1]) + head
if confirmed > tonumber(persisted) then
  local entry = redis.call('LINDEX', KEYS[2], confirmed - 1)
  local seq, amount, at, user = string.match(entry or '', '^(%d+):(%d+):%d+:(%d+):(.*)$')
  if seq and (seq .. ':' .. amount .. ':' .. at .. ':' .. user) == ARGV[2] then
    redis.call('HSET', KEYS[1], 'persisted', confirmed)
    return confirmed - head
  end
end
return math.max(tonumber(persisted) - head, 0)
