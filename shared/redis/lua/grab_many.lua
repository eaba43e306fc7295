#!lua
-- grab_many.lua: several users grab one share each of one packet, in one call: the grab
-- coalescer's batch (adapters/redis/coalesce.rs). Each user, in the batch's order, gets exactly
-- the answer grab.lua would give the same grabs made one by one at the batch's instant
-- (local/tests/it/grab_script.rs holds both to the library's rule, domain::grab_rule::decide), with grab.lua's checks in
-- grab.lua's order: already grabbed, unknown (the lookup lease), not open yet, not a recipient
-- or not a member of the packet's chat by ticket,
-- too many wrong passphrases, wrong passphrase, cancelled, re-syncing, expired, sold out. What a batch
-- saves is the commands: every user's fields are read in one HMGET, the shares taken in one
-- LPOP, the grabbers recorded in one HSET and logged in one RPUSH, whatever the batch's size.
--
-- KEYS[1]  rp:{<id>}:packet  the packet hash, as grab.lua reads and writes it ('last': the
--                            batch's last grab's log entry)
-- KEYS[2]  rp:{<id>}:pool    the shares not yet taken, then two '~' (see grab.lua)
-- KEYS[3]  rp:{<id>}:grabs   the grab log, after its head '~' (see grab.lua)
-- (no lookup key, as in grab.lua: an id Redis does not hold answers 14 for every grab)
-- ARGV[1]  now, epoch milliseconds: the batch's one instant, the latest clock reading among its
--          grabs (each read its clock before it queued, so none is judged before its own time)
-- ARGV[2]  the batch's grabs, one line each, in order: '<digest><grab field>\n', or
--          '<digest><grab field>\t<chat>\n' for a grab whose membership ticket admits the caller
--          to <chat> (verified by the caller), where digest is the passphrase's (64 hex digits)
--          or nothing for none, and the grab field ':<user>' (the caller's verified `sub`; it
--          holds no control character, so no tab or newline, and the line's first ':' starts
--          it, since a digest is hex)
--
-- WRONG_TRIES_ALLOWED is grab.lua's constant (see there).
--
-- Returns one string: one answer per line, in the batch's order, each as grab.lua returns it,
-- with the one-element array (the grab that dirtied the packet) written '!<grab>'. Two
-- arguments in and one string out, where a batch of 128 passed three arguments per grab and
-- returned an array: each argument and each reply element is a value Redis builds and frees.
-- One now for the batch, where each line carried its own: a time parsed and compared per
-- grab, and a string captured per line, cost 17% of a fresh grab's Redis time (see
-- BENCHMARKS.md).
--
-- Cost: two HMGETs (the packet's fields, then the users'), LINDEX, LPOP, HSET and RPUSH for a
-- batch of fresh grabs (HINCRBY per wrong passphrase; lookup.lua after it for an unknown packet),
-- against four commands a grab one by one. Under maxmemory the whole batch is refused (-OOM)
-- before anything changes, as a single grab is.

-- The lists' mark, no grab and no share (keys.rs's LIST_MARK, checked there).
local LIST_MARK = '~'
local WRONG_TRIES_ALLOWED = 5
local tonumber, byte = tonumber, string.byte
local packet = redis.call('HMGET', KEYS[1], 'open_until', 'persisted', 'gate', 'opens_at', 'chat_id')
local open_until, persisted, gate, opens_at, chat = packet[1], packet[2], packet[3], packet[4], packet[5]
-- Every user's grab field; and, on a packet with a gate, its recipient and wrong-try fields
-- and the digest it carried (a packet open to all reads no digest).
local per_user = gate and 3 or 1
local now = ARGV[1]
local grabbers, digests, tickets, fields = {}, {}, {}, nil
local grabs = 0
if gate then
  fields = {}
  for digest, grabber, ticket in string.gmatch(ARGV[2], '(%x*)(:[^\t\n]*)\t?([^\n]*)\n') do
    grabs = grabs + 1
    grabbers[grabs], digests[grabs], tickets[grabs] = grabber, digest, ticket
    local user = string.sub(grabber, 2)
    fields[3 * grabs - 2], fields[3 * grabs - 1], fields[3 * grabs] = grabber, '+' .. user, '!' .. user
  end
else
  for grabber in string.gmatch(ARGV[2], '%x*(:[^\t\n]*)[^\n]*\n') do
    grabs = grabs + 1
    grabbers[grabs] = grabber
  end
  fields = grabbers
end
local read = redis.call('HMGET', KEYS[1], unpack(fields))
-- Shares left (grab.lua's shares_left): the pool's head's left + 1; none at a mark.
local head = redis.call('LINDEX', KEYS[2], 0)
local left = (head and head ~= LIST_MARK) and tonumber(string.match(head, ':(%d+)$')) + 1 or 0
-- What the packet's state decides for every grab alike, once.
local closed = false
if open_until == '-1' then
  closed = 11
elseif open_until and byte(open_until) == 70 then
  closed = 12
end
local expired = open_until and not closed and tonumber(now) >= tonumber(open_until)
-- A scheduled packet, open, before its opening: grab.lua's 'W<opens_at>' for every fresh grab.
local not_yet = opens_at and tonumber(now) < tonumber(opens_at) and (tonumber(open_until) or 0) > 0
  and 'W' .. opens_at
local rules = gate and byte(gate) - 48 or 0
local recipients_only, members_only = rules % 2 == 1, rules >= 2
local secret = gate and #gate > 1 and string.sub(gate, 2)
local granted, granted_at = 0, {} -- the batch's fresh grabs, and each one's answer index
local granted_to = {}            -- grab field -> its place among the fresh grabs
local repeats = {}               -- answer index -> {place among the fresh grabs, shares left then}
local wrong = {}                 -- grab field -> wrong passphrases tried in this batch
local answers = {}

for i = 1, grabs do
  local grabber = grabbers[i]
  local prior = read[per_user * (i - 1) + 1]
  if granted_to[grabber] then
    repeats[i] = {granted_to[grabber], left}
  elseif prior then
    answers[i] = prior .. '/' .. left
  elseif not open_until then
    answers[i] = 14
  elseif not_yet then
    answers[i] = not_yet
  else
    local refused = nil
    if recipients_only and not read[3 * i - 1] then
      refused = 8
    elseif members_only and tickets[i] ~= chat then
      refused = 13
    elseif secret then
      local tried = tonumber(read[3 * i] or 0) + (wrong[grabber] or 0)
      if tried >= WRONG_TRIES_ALLOWED then
        refused = 10
      elseif digests[i] ~= secret then
        redis.call('HINCRBY', KEYS[1], fields[3 * i], 1)
        wrong[grabber] = (wrong[grabber] or 0) + 1
        refused = 9
      end
    end
    if refused then
      answers[i] = refused
    elseif closed then
      answers[i] = closed
    elseif expired then
      answers[i] = left == 0 and 3 or 4
    elseif left == 0 then
      answers[i] = 3
    else
      left = left - 1
      granted = granted + 1
      granted_at[granted] = i
      granted_to[grabber] = granted
    end
  end
end

if granted > 0 then
  local shares = redis.call('LPOP', KEYS[2], granted)
  local records, entries = {}, {}
  for j = 1, granted do
    local i = granted_at[j]
    local grabber = grabbers[i]
    local entry = shares[j] .. ':' .. now
    records[2 * j - 1] = grabber
    records[2 * j] = entry
    entries[j] = entry .. grabber
    answers[i] = entry
  end
  records[2 * granted + 1] = 'last'
  records[2 * granted + 2] = entries[granted]
  redis.call('HSET', KEYS[1], unpack(records))
  local logged = redis.call('RPUSH', KEYS[3], unpack(entries))
  for i, again in pairs(repeats) do
    answers[i] = answers[granted_at[again[1]]] .. '/' .. again[2]
  end
  if logged - granted == tonumber(persisted) then
    answers[granted_at[1]] = '!' .. answers[granted_at[1]]
  end
end
return table.concat(answers, '\n')
