#!lua
-- grab.lua: one user grabs one share of one packet, atomically, in one round trip: the fast
-- copy of the library's one grab rule (domain::grab_rule::decide; local/tests/it/grab_script.rs holds
-- them to each other): already grabbed, unknown, not open yet, not eligible, passphrase,
-- cancelled, expired, sold out, in that order.
--
-- KEYS[1]  rp:{<id>}:packet  hash: the packet's fields (see load.lua), among them open_until
--                            (expires_at while open, 0 once closed, -1 once cancelled,
--                            'F:<token>' while settle re-syncs it, see freeze.lua),
--                            persisted, opens_at (only on a scheduled packet: epoch ms),
--                            chat_id (only on a packet sent into a chat), gate (only on a
--                            packet with recipients, a passphrase or members only: a digit, 1
--                            for recipients-only plus 2 for members of chat_id only, then the
--                            passphrase's digest if any), one field '+<user>' per recipient, '!<user>' = wrong
--                            passphrases tried, ':<user>' = '<seq>:<amount>:<left>:<at_ms>'
--                            per user who grabbed, 'last' = the latest grab's log entry,
--                            written in the same HSET (the view's version: record.rs's
--                            VERSION_FIELDS)
-- KEYS[2]  rp:{<id>}:pool    list: the shares not yet taken, '<seq>:<amount>:<left>', in seq
--                            order (left: how many shares remain once this one is taken), then
--                            two '~' (load.lua): the key outlives its last share. Shares left:
--                            the head's left + 1, 0 when the head is '~' or the list is gone
--                            (a packet loaded before the marks)
-- KEYS[3]  rp:{<id>}:grabs   list: the grab log, '<seq>:<amount>:<left>:<at_ms>:<user>', in grab order,
--                            after a head '~' (load.lua, counted in `persisted`): the key exists
--                            before the first grab
--
-- A script whose KEYS name a key that does not exist is refused with TRYAGAIN for as long as
-- its slot migrates between shards (and a write inside it to a missing key fails it there), so
-- every key named here exists while the packet is held: the pool and the log carry their marks
-- from the load on, and the lookup key, which exists only for an id Redis does not hold, is
-- not among KEYS. Such an id answers 14, and the caller runs lookup.lua (scripts.rs's `grab`
-- does, so its callers see lookup.lua's answers).
-- ARGV[1]  the caller's grab field, ':<user>' (the user is the caller's verified `sub`)
-- ARGV[2]  now, epoch milliseconds
-- ARGV[3]  the digest of the passphrase the grab carried; '' or absent for none
-- ARGV[4]  the chat the grab's membership ticket admits the caller to (verified by the caller,
--          domain/membership.rs); absent for none
--
-- One constant is the library's, written here rather than passed with every call (each
-- argument is a value Redis builds and frees; scripts.rs's tests hold them equal):
-- WRONG_TRIES_ALLOWED  wrong passphrases allowed per user; every try after them is refused
--                      (domain/access.rs's MAX_WRONG_PASSPHRASES)
--
-- Returns, by type (the answers grabs meet most are bare strings: no table to build, which
-- measured ~3.6 us of Redis time per call):
--   bulk string '<seq>:<amount>:<left>:<at_ms>'          grabbed now
--   bulk string '<seq>:<amount>:<left>:<at_ms>/<left now>' already grabbed: that grab, and
--                                                        shares left now
--   bulk string 'W<opens_at>'                             not open yet (a scheduled packet, open
--                                                        and before its opens_at): no command
--                                                        past the first HMGET, one fewer than a
--                                                        sold-out answer
--   array {'<seq>:<amount>:<left>:<at_ms>'}               grabbed now, and this grab is the
--                                                        packet's only one settle has not
--                                                        persisted (the log held exactly
--                                                        `persisted` entries before it): the
--                                                        caller marks the packet for settle,
--                                                        once per batch of grabs, not per grab
--   integer 3 sold out; 4 expired (at or after expires_at, or closed, with shares left);
--           8 not eligible (not a recipient); 13 not a member (no ticket for the packet's chat); 9 wrong or missing passphrase (counted);
--           10 too many wrong passphrases; 11 cancelled by the sender;
--           12 settle is re-syncing the packet from the ledger: try again shortly;
--           14 not in Redis: run lookup.lua, which says what the ledger said of the id lately
--
-- Cost: a fresh grab of a packet open to all is 4 commands (HMGET, LPOP, HSET, RPUSH), a
-- repeat 2 (HMGET, LINDEX): the gate comes in the same HMGET, and only a packet that has one
-- reads the caller's recipient and wrong-try fields, in a second HMGET. No counter is kept and nothing is encoded:
-- each share carries its seq and what is left after it. The `#!lua` line makes Redis refuse
-- the whole script with -OOM when it is over maxmemory (noeviction), before anything changes;
-- the store answers repeats from a read then.

-- The lists' mark, no grab and no share (keys.rs's LIST_MARK, checked there).
local LIST_MARK = '~'
local WRONG_TRIES_ALLOWED = 5

-- Shares left: the pool's head's left + 1; none at a mark or without a pool.
local function shares_left()
  local head = redis.call('LINDEX', KEYS[2], 0)
  if not head or head == LIST_MARK then
    return 0
  end
  return tonumber(string.match(head, ':(%d+)$')) + 1
end

local packet = redis.call('HMGET', KEYS[1], 'open_until', 'persisted', ARGV[1], 'gate', 'opens_at')
local prior = packet[3]
if prior then
  return prior .. '/' .. shares_left()
end
local open_until = packet[1]
if not open_until then
  return 14
end

local opens_at = packet[5]
if opens_at and tonumber(ARGV[2]) < tonumber(opens_at) and (tonumber(open_until) or 0) > 0 then
  return 'W' .. opens_at
end

local gate = packet[4]
if gate then
  local user = string.sub(ARGV[1], 2)
  local wrong_tries_field = '!' .. user
  local caller = redis.call('HMGET', KEYS[1], '+' .. user, wrong_tries_field, 'chat_id')
  local rules = string.byte(gate) - 48
  if rules % 2 == 1 and not caller[1] then
    return 8
  end
  if rules >= 2 and ARGV[4] ~= caller[3] then
    return 13
  end
  if #gate > 1 then
    if tonumber(caller[2] or 0) >= WRONG_TRIES_ALLOWED then
      return 10
    end
    if ARGV[3] ~= string.sub(gate, 2) then
      redis.call('HINCRBY', KEYS[1], wrong_tries_field, 1)
      return 9
    end
  end
end

if open_until == '-1' then
  return 11
end
if string.byte(open_until) == 70 then
  return 12
end
if tonumber(ARGV[2]) >= tonumber(open_until) then
  if shares_left() == 0 then
    return 3
  end
  return 4
end

local share = redis.call('LPOP', KEYS[2])
if not share then
  return 3
end
if share == LIST_MARK then
  -- Sold out: the mark goes back (the second one kept the key meanwhile).
  redis.call('LPUSH', KEYS[2], LIST_MARK)
  return 3
end
local grab = share .. ':' .. ARGV[2]
local entry = grab .. ARGV[1]
redis.call('HSET', KEYS[1], ARGV[1], grab, 'last', entry)
if redis.call('RPUSH', KEYS[3], entry) - 1 == tonumber(packet[2]) then
  return {grab}
end
return grab
