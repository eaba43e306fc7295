-- cancel.lua: the sender takes back what is left: closes an open packet to grabs at once, as
-- cancelled (open_until -1). Settle refunds the rest as it does at expiry.
--
-- KEYS[1]  rp:{<id>}:packet (open_until: expires_at while open, 0 once closed, -1 once
--          cancelled, 'F:<token>' while settle re-syncs it)
-- KEYS[2]  rp:{<id>}:pool (the shares not yet taken, then two '~': none left at a '~' head)
-- ARGV[1]  now, epoch milliseconds
--
-- Returns 0 when Redis holds no such packet; 1 when it is cancelled (now, or by an earlier
-- call); 2 when every share is taken (nothing to cancel); 3 when it expired or was closed
-- with shares left; 4 when settle is re-syncing it (nothing changed: try again shortly).

-- The lists' mark, no grab and no share (keys.rs's LIST_MARK, checked there).
local LIST_MARK = '~'
local open_until = redis.call('HGET', KEYS[1], 'open_until')
if not open_until then
  return 0
end
if open_until == '-1' then
  return 1
end
if string.byte(open_until) == 70 then
  return 4
end
local head = redis.call('LINDEX', KEYS[2], 0)
if not head or head == LIST_MARK then
  return 2
end
if open_until == '0' or tonumber(ARGV[1]) >= tonumber(open_until) then
  return 3
end
redis.call('HSET', KEYS[1], 'open_until', -1)
return 1
