-- snapshot.lua: a packet's fields, how many shares are left and its whole grab log, read at
-- one instant.
--
-- KEYS[1]  rp:{<id>}:packet
-- KEYS[2]  rp:{<id>}:pool (the shares not yet taken)
-- KEYS[3]  rp:{<id>}:grabs (the grab log)
-- ARGV     the packet hash's fields to read (adapters/redis/record.rs, SNAPSHOT_FIELDS)
--
-- Returns {fields, shares left, log entries in grab order}: fields are the values of ARGV's
-- fields in that order (false where unset); all false when Redis holds no such packet.

local fields = redis.call('HMGET', KEYS[1], unpack(ARGV))
return {fields, redis.call('LLEN', KEYS[2]), redis.call('LRANGE', KEYS[3], 0, -1)}
