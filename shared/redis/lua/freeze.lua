-- freeze.lua: closes a packet to fresh grabs while settle re-syncs it from the ledger, and
-- measures its grab log at that instant, returning its first page (the caller reads the rest). The freeze carries the re-sync's token, and the
-- replace that ends it (load.lua 'replace') happens only while that token is still there: a
-- grab acknowledged after the log read here can never be replaced away. A failover that lost
-- the freeze lost the token too, and so does a second re-sync's freeze; either way the replace
-- is refused and settle tries again on its next pass.
--
-- KEYS[1]  rp:{<id>}:packet  hash (see load.lua); open_until becomes 'F:<token>' here, which
--                            grab.lua answers with "re-syncing, try again shortly" (12)
-- KEYS[2]  rp:{<id>}:pool    list: the shares not yet taken
-- KEYS[3]  rp:{<id>}:grabs   list: the grab log (its head '~', if any, is returned: the caller
--                            leaves it out, scripts.rs)
-- ARGV[1]  the re-sync's token
--
-- LOG_PAGE  log entries per reply (scripts.rs's LOG_PAGE; a test holds them equal)
--
-- Returns {state, log length, the log's first LOG_PAGE entries in grab order}: state 0 when
-- Redis holds nothing of the packet (nothing changed); 1 when frozen; 2 when frozen although
-- the packet hash was gone while its pool or log was not (the hash is created holding only the
-- freeze). The caller reads the rest of the log a page a call: frozen, it takes no fresh grab,
-- so it stays as read here until the re-sync's replace.

local LOG_PAGE = 5000

local held = redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3])
if held == 0 then
  return {0, 0, {}}
end
local state = redis.call('EXISTS', KEYS[1]) == 1 and 1 or 2
redis.call('HSET', KEYS[1], 'open_until', 'F:' .. ARGV[1])
return {state, redis.call('LLEN', KEYS[3]), redis.call('LRANGE', KEYS[3], 0, LOG_PAGE - 1)}
