-- snapshot.lua: a packet's fields, how many shares are left, how long its grab log is and the
-- log's first page, read at one instant. The caller reads the rest of the log, up to that
-- length, a page a call (LRANGE): the log only grows at its end while the packet lives, so the
-- entries before the length read here are the ones this instant saw (only a re-sync's replace
-- rewrites it; one by another settle run between two pages mixes two logs, which settle's
-- conditional writes and persisted.lua's check of the mark's last entry refuse to trust). No
-- call returns more than a page of it, whatever the packet's size (a campaign's holds 100,000).
--
-- KEYS[1]  rp:{<id>}:packet
-- KEYS[2]  rp:{<id>}:pool (the shares not yet taken, then two '~'; see grab.lua)
-- KEYS[3]  rp:{<id>}:grabs (the grab log, after a head '~' on a packet loaded since the marks;
--          the caller leaves it out, record.rs)
-- ARGV     the packet hash's fields to read (adapters/redis/record.rs, SNAPSHOT_FIELDS)
--
-- LOG_PAGE  log entries per reply (scripts.rs's LOG_PAGE; a test holds them equal)
--
-- Returns {fields, shares left, log length, the first LOG_PAGE log entries in grab order}:
-- fields are the values of ARGV's fields in that order (false where unset); all false when
-- Redis holds no such packet.

-- The lists' mark, no grab and no share (keys.rs's LIST_MARK, checked there).
local LIST_MARK = '~'
local LOG_PAGE = 5000
local fields = redis.call('HMGET', KEYS[1], unpack(ARGV))
local head = redis.call('LINDEX', KEYS[2], 0)
local shares_left = (head and head ~= LIST_MARK) and tonumber(string.match(head, ':(%d+)$')) + 1 or 0
return {fields, shares_left, redis.call('LLEN', KEYS[3]), redis.call('LRANGE', KEYS[3], 0, LOG_PAGE - 1)}
