-- load.lua: makes a packet grabbable: its fields, its shares not yet taken, and (when a packet
-- is reloaded from the ledger) the grabs the ledger already holds. A small packet comes whole
-- in the arguments; a large one (a campaign's, more entries than one call should carry) is
-- staged first under keys of this load's own, a bounded command at a time (scripts.rs), and
-- this script only writes its fields and renames the staged keys into place: no call, this one
-- included, carries or walks the whole of it.
--
-- KEYS[1]  rp:{<id>}:packet  hash, created here: open_until (expires_at; -1 for a packet
--                            the sender cancelled; 0 for one closed, as close.lua sets it;
--                            freeze.lua sets 'F:<token>') and persisted (log entries
--                            the ledger holds) first, as grab.lua reads them; then sender,
--                            kind, split, greeting, opens_at and chat_id (each only when set),
--                            seed, total_cents, count, created_at, expires_at; for a packet with
--                            recipients, a passphrase or members only, gate (a digit: 1 for
--                            recipients-only plus 2 for members of chat_id only, then the
--                            passphrase's digest if any), recipients (their JSON array) and
--                            '+<user>' = 1 per recipient; and ':<user>' =
--                            '<seq>:<amount>:<left>:<at_ms>' per grab
-- KEYS[2]  rp:{<id>}:pool    list of '<seq>:<amount>:<left>', created here from ARGV[5..]
--                            (left: how many shares follow it), then two '~'
-- KEYS[3]  rp:{<id>}:grabs   list: '~', then '<seq>:<amount>:<left>:<at_ms>:<user>' filled from
--                            ARGV[4]; `persisted` counts the '~'. The marks keep both keys in
--                            existence while the packet lives (grab.lua: a migrating slot refuses
--                            a script that names a missing key)
-- KEYS[4]  rp:{<id>}:packet:stage:<load>  staged: the ':<user>' fields of the grabs (or nothing)
-- KEYS[5]  rp:{<id>}:pool:stage:<load>    staged: the pool, entries as KEYS[2]'s (or nothing)
-- KEYS[6]  rp:{<id>}:grabs:stage:<load>   staged: the log, entries as KEYS[3]'s (or nothing)
-- ARGV[1]  'add': load unless Redis holds something of the packet already (send, restore);
--          or 'replace': what Redis holds of the packet gives way to the ledger's state
--          (settle's re-sync), only while the re-sync's freeze (ARGV[3]) still stands
-- ARGV[2]  a JSON object of the packet's fields (adapters/redis/record.rs, LoadFields): plain,
--          the [name, value] pairs stored as they are (sender, kind, seed, total_cents, count,
--          created_at, expires_at, split, greeting and opens_at when set); expires_at (epoch
--          ms); cancelled (true when the sender cancelled it); closed (true when it is closed to
--          grabs); recipients (a JSON array as a string) and passphrase (the digest), each
--          only when set; members_only (true when only members of chat_id may grab)
-- ARGV[3]  'replace' only: the token of the re-sync's freeze (freeze.lua); '' for 'add'
-- ARGV[4]  a JSON array of the grabs the ledger holds, as grab-log entries, in seq order ([] at
--          send); or 'staged': the grabs and the pool are in KEYS[4..6]
-- ARGV[5..] the shares not yet taken, '<seq>:<amount>', in the order they are handed out; or,
--          staged, what was staged: ARGV[5] grabbers (KEYS[4]'s fields), ARGV[6] KEYS[5]'s length
--          (the shares and their two '~'), ARGV[7] KEYS[6]'s length (the '~' and the grabs)
--
-- The keys get no TTL here: they live until settle has finalised the packet and retires them
-- (staged keys carry a TTL until they are renamed into place, which PERSIST takes off).
-- Returns 1 when loaded now; 0 when the packet was already loaded (nothing is changed);
-- 2 when a replace found its freeze gone or another's (nothing is changed); 3 when an add
-- found the packet hash gone but its pool or log still there (nothing is changed: the log may
-- hold grabs the ledger lacks, so only settle's re-sync, which records them, may replace it);
-- 4 when the staged keys hold less than was staged (one expired, a failover lost a chunk):
-- nothing is changed, and the caller stages again. Whenever nothing is changed, the staged
-- keys are dropped.

-- The lists' mark, no grab and no share (keys.rs's LIST_MARK, checked there).
local LIST_MARK = '~'
local staged = ARGV[4] == 'staged'
local function unchanged(answer)
  redis.call('UNLINK', KEYS[4], KEYS[5], KEYS[6])
  return answer
end

if staged and (redis.call('HLEN', KEYS[4]) ~= tonumber(ARGV[5])
    or redis.call('LLEN', KEYS[5]) ~= tonumber(ARGV[6]) or redis.call('LLEN', KEYS[6]) ~= tonumber(ARGV[7])) then
  return unchanged(4)
end
if ARGV[1] == 'replace' then
  if redis.call('HGET', KEYS[1], 'open_until') ~= 'F:' .. ARGV[3] then
    return unchanged(2)
  end
  redis.call('UNLINK', KEYS[1], KEYS[2], KEYS[3])
elseif redis.call('EXISTS', KEYS[1]) == 1 then
  return unchanged(0)
elseif redis.call('EXISTS', KEYS[2], KEYS[3]) > 0 then
  return unchanged(3)
end
local packet = cjson.decode(ARGV[2])
local grabs = staged and {} or cjson.decode(ARGV[4])
local hash = staged and KEYS[4] or KEYS[1]

local fields = {
  'open_until', (packet.cancelled and -1) or (packet.closed and 0) or packet.expires_at,
  'persisted', staged and redis.call('LLEN', KEYS[6]) or #grabs + 1,
}
for _, pair in ipairs(packet.plain) do
  fields[#fields + 1] = pair[1]
  fields[#fields + 1] = pair[2]
end
local recipients = type(packet.recipients) == 'string' and cjson.decode(packet.recipients) or {}
local passphrase = type(packet.passphrase) == 'string' and packet.passphrase or ''
local members_only = packet.members_only == true
if #recipients > 0 or passphrase ~= '' or members_only then
  fields[#fields + 1] = 'gate'
  fields[#fields + 1] = tostring((#recipients > 0 and 1 or 0) + (members_only and 2 or 0)) .. passphrase
end
if #recipients > 0 then
  fields[#fields + 1] = 'recipients'
  fields[#fields + 1] = packet.recipients
end
redis.call('HSET', hash, unpack(fields))
local members = {}
for _, user in ipairs(recipients) do
  members[#members + 1] = '+' .. user
  members[#members + 1] = 1
end
for first = 1, #members, 500 do
  redis.call('HSET', hash, unpack(members, first, math.min(first + 499, #members)))
end

if staged then
  redis.call('RENAME', KEYS[4], KEYS[1])
  redis.call('PERSIST', KEYS[1])
  redis.call('RENAME', KEYS[5], KEYS[2])
  redis.call('PERSIST', KEYS[2])
  redis.call('RENAME', KEYS[6], KEYS[3])
  redis.call('PERSIST', KEYS[3])
  return 1
end

local grabbers = {}
for _, entry in ipairs(grabs) do
  local grab, user = string.match(entry, '^(%d+:%d+:%d+:%d+)(:.+)$')
  grabbers[#grabbers + 1] = user
  grabbers[#grabbers + 1] = grab
end
for first = 1, #grabbers, 500 do
  redis.call('HSET', KEYS[1], unpack(grabbers, first, math.min(first + 499, #grabbers)))
end

local shares = {}
for i = 5, #ARGV do
  shares[#shares + 1] = ARGV[i] .. ':' .. (#ARGV - i)
end
for first = 1, #shares, 500 do
  redis.call('RPUSH', KEYS[2], unpack(shares, first, math.min(first + 499, #shares)))
end
redis.call('RPUSH', KEYS[2], LIST_MARK, LIST_MARK)
redis.call('RPUSH', KEYS[3], LIST_MARK)
for first = 1, #grabs, 500 do
  redis.call('RPUSH', KEYS[3], unpack(grabs, first, math.min(first + 499, #grabs)))
end
return 1
