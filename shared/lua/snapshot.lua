-- snapshot.lua: a packet's meta and its whole grab log, read at one instant.
--
-- KEYS[1]  rp:{<id>}:meta
-- KEYS[2]  rp:{<id>}:log
--
-- Returns {meta as HGETALL's flat field/value list, log entries in grab order}; {} for the
-- meta when Redis holds no such packet.

return {redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1)}
