-- lookup.lua: what a grab of an id Redis does not hold does next (grab.lua and grab_many.lua
-- answered 14): wait for another caller's question to the ledger, take the ledger's answer of
-- lately, or ask the ledger itself under a lease. Apart from the grab scripts because its key
-- exists only for such an id: a script whose KEYS name a missing key is refused (TRYAGAIN)
-- while its slot migrates between shards, and the grabs of a packet Redis holds must not be.
--
-- KEYS[1]  rp:{<id>}:packet  the packet hash (see load.lua); only its existence is read
-- KEYS[2]  rp:{<id>}:lookup  string: what the ledger said of an id Redis does not hold:
--                            'pending' while one caller asks it, then 'absent' or 'recorded'
--
-- One constant is the library's (scripts.rs's tests hold it equal):
-- LOOKUP_LEASE_MS  how long one caller may take to ask the ledger (store.rs's LOOKUP_LEASE)
--
-- Returns an integer:
--   15 Redis holds the packet now (loaded since the grab script ran): grab again;
--   5 the ledger said lately there is no such packet;
--   6 another caller is asking the ledger right now: try again shortly;
--   7 the ledger recorded it lately: ask the ledger, nothing to record;
--   0 this caller now holds the lookup: ask the ledger, then record its verdict

local LOOKUP_LEASE_MS = 5000

if redis.call('EXISTS', KEYS[1]) == 1 then
  return 15
end
local verdict = redis.call('GET', KEYS[2])
if verdict == 'absent' then
  return 5
elseif verdict == 'recorded' then
  return 7
elseif verdict then
  return 6
end
redis.call('SET', KEYS[2], 'pending', 'PX', LOOKUP_LEASE_MS)
return 0
