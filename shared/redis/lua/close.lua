-- close.lua: closes a packet to grabs once it is finished (no share left) or expired; after
-- this no grab succeeds. A packet neither finished nor expired is left open; a cancelled one
-- is closed already.
--
-- KEYS[1]  rp:{<id>}:packet (open_until: expires_at while open, 0 once closed, -1 once
--          cancelled, 'F:<token>' while settle re-syncs it: left as it is)
-- KEYS[2]  rp:{<id>}:pool (the shares not yet taken, then two '~': none left at a '~' head)
-- ARGV[1]  now, epoch milliseconds
-- ARGV[2]  'force': close it whatever its state, also while open or re-synced (quarantine); ''
--
-- Returns 0 when Redis holds no such packet, 1 when it is still open or being re-synced
-- (nothing changed),
-- 2 when it is closed (now, or by an earlier call).

-- The lists' mark, no grab and no share (keys.rs's LIST_MARK, checked there).
local LIST_MARK = '~'
local open_until = redis.call('HGET', KEYS[1], 'open_until')
if not open_until then
  return 0
end
if open_until == '0' or open_until == '-1' then
  return 2
end
if ARGV[2] == 'force' then
  redis.call('HSET', KEYS[1], 'open_until', 0)
  return 2
end
if string.byte(open_until) == 70 then
  return 1
end
local head = redis.call('LINDEX', KEYS[2], 0)
if tonumber(ARGV[1]) < tonumber(open_until) and head and head ~= LIST_MARK then
  return 1
end
redis.call('HSET', KEYS[1], 'open_until', 0)
return 2
