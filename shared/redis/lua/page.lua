-- page.lua: one page of a packet's view, read at one instant: the packet's fields, the pool's
-- head (the next share handed out, which says how many are left), how many grabs the log holds,
-- the log's entries of the page asked for and, when asked, one more entry (best luck's, which
-- the caller finds from the split). A page costs the same whatever the packet's size: no call
-- reads more of the log than the page and the one entry.
--
-- KEYS[1]  rp:{<id>}:packet
-- KEYS[2]  rp:{<id>}:pool (the shares not yet taken, then two '~'; see grab.lua)
-- KEYS[3]  rp:{<id>}:grabs (the grab log, after a head '~' on a packet loaded since the marks)
-- ARGV[1]  the page's first grab: its position in grab order, 1 for the first
-- ARGV[2]  the page's length: how many entries from it (0 for none)
-- ARGV[3]  the position of one more entry to return, 0 for none
-- ARGV[4…] the packet hash's fields to read (adapters/redis/record.rs, SNAPSHOT_FIELDS)
--
-- Returns {fields, pool head, grabs, page, entry}: fields are the values of ARGV[4…] in that
-- order (false where unset; all false when Redis holds no such packet); the pool head is its
-- first entry (false without a pool); grabs is the log's length without its head mark; page
-- is the entries from ARGV[1], at most ARGV[2] of them, in grab order; entry is the one at
-- ARGV[3] (false for none or past the end).

-- The lists' mark, no grab and no share (keys.rs's LIST_MARK, checked there).
local LIST_MARK = '~'
local fields = redis.call('HMGET', KEYS[1], unpack(ARGV, 4))
local head = redis.call('LINDEX', KEYS[2], 0)
local length = redis.call('LLEN', KEYS[3])
local mark = 0
if length > 0 and redis.call('LINDEX', KEYS[3], 0) == LIST_MARK then
  mark = 1
end
local page = {}
local first, size = tonumber(ARGV[1]) - 1 + mark, tonumber(ARGV[2])
if size > 0 then
  page = redis.call('LRANGE', KEYS[3], first, first + size - 1)
end
local entry = false
if tonumber(ARGV[3]) > 0 then
  entry = redis.call('LINDEX', KEYS[3], tonumber(ARGV[3]) - 1 + mark)
end
return {fields, head, length - mark, page, entry}
