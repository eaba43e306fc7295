#!lua
-- grab_many.lua: several users grab one share each of one packet, in one call: the grab
-- coalescer's batch (adapters/redis/coalesce.rs). Each user, in the batch's order, gets exactly
-- the answer grab.lua would give the same grabs made one by one (local/tests/grab_script.rs
-- holds both to the library's model), with grab.lua's checks in grab.lua's order: already
-- grabbed, unknown (the lookup lease), not a recipient, too many wrong passphrases, wrong
-- passphrase, cancelled, re-syncing, expired, sold out. What a batch saves is the commands:
-- every user's fields are read in one HMGET, the shares taken in one LPOP,
-- the grabbers recorded in one HSET and logged in one RPUSH, whatever the batch's size.
--
-- KEYS[1]  rp:{<id>}:packet  the packet hash, as grab.lua reads and writes it
-- KEYS[2]  rp:{<id>}:pool    the shares not yet taken
-- KEYS[3]  rp:{<id>}:grabs   the grab log
-- KEYS[4]  rp:{<id>}:lookup  what the ledger said of an id Redis does not hold
-- ARGV[1]  the lookup lease, milliseconds (grab.lua's ARGV[5])
-- ARGV[2]  wrong passphrases allowed per user (grab.lua's ARGV[7])
-- ARGV[3+3k], ARGV[4+3k], ARGV[5+3k]  for the k-th grab of the batch (k from 0): the user (the
--          caller's verified `sub`), now in epoch milliseconds as that grab read it, and the
--          digest of the passphrase it carried ('' for none)
--
-- Returns an array: one answer per grab, in the batch's order, each exactly as grab.lua returns
-- it (a bulk string, an integer, or a one-element array for the grab that dirtied the packet).
--
-- Cost: two HMGETs (the packet's fields, then the users'), LLEN, LPOP, HSET and RPUSH for a
-- batch of fresh grabs (HINCRBY per wrong passphrase, GET and SET for an unknown packet),
-- against four commands a grab one by one. Under
-- maxmemory the whole batch is refused (-OOM) before anything changes, as a single grab is.

local grabs = (#ARGV - 2) / 3
local packet = redis.call('HMGET', KEYS[1], 'open_until', 'persisted', 'gate')
local open_until, persisted, gate = packet[1], packet[2], packet[3]
-- Every user's grab field; and, on a packet with a gate, its recipient and wrong-try fields.
local per_user = gate and 3 or 1
local fields, grabbers = {}, {}
for k = 0, grabs - 1 do
  local user = ARGV[3 + 3 * k]
  grabbers[k + 1] = ':' .. user
  fields[per_user * k + 1] = grabbers[k + 1]
  if gate then
    fields[3 * k + 2] = '+' .. user
    fields[3 * k + 3] = '!' .. user
  end
end
local read = redis.call('HMGET', KEYS[1], unpack(fields))
local left = redis.call('LLEN', KEYS[2])
local verdict = false            -- the lookup's, once read
local granted = {}               -- the batch's fresh grabs: {answer index, now, grab field}
local granted_to = {}            -- user -> its place in `granted`
local repeats = {}               -- answer index -> {place in `granted`, shares left then}
local wrong = {}                 -- user -> wrong passphrases tried in this batch
local answers = {}

for k = 0, grabs - 1 do
  local i = k + 1
  local user, now, digest = ARGV[3 + 3 * k], ARGV[4 + 3 * k], ARGV[5 + 3 * k]
  local prior = read[per_user * k + 1]
  if granted_to[user] then
    repeats[i] = {granted_to[user], left}
  elseif prior then
    answers[i] = prior .. '/' .. left
  elseif not open_until then
    if verdict == false then
      verdict = redis.call('GET', KEYS[4])
    end
    if verdict == 'absent' then
      answers[i] = 5
    elseif verdict == 'recorded' then
      answers[i] = 7
    elseif verdict then
      answers[i] = 6
    else
      redis.call('SET', KEYS[4], 'pending', 'PX', ARGV[1])
      verdict = 'pending'
      answers[i] = 0
    end
  else
    local refused = nil
    if gate then
      if string.byte(gate) == 49 and not read[3 * k + 2] then
        refused = 8
      elseif #gate > 1 then
        local tried = tonumber(read[3 * k + 3] or 0) + (wrong[user] or 0)
        if tried >= tonumber(ARGV[2]) then
          refused = 10
        elseif digest ~= string.sub(gate, 2) then
          redis.call('HINCRBY', KEYS[1], '!' .. user, 1)
          wrong[user] = (wrong[user] or 0) + 1
          refused = 9
        end
      end
    end
    if refused then
      answers[i] = refused
    elseif open_until == '-1' then
      answers[i] = 11
    elseif string.byte(open_until) == 70 then
      answers[i] = 12
    elseif tonumber(now) >= tonumber(open_until) then
      answers[i] = left == 0 and 3 or 4
    elseif left == 0 then
      answers[i] = 3
    else
      left = left - 1
      granted[#granted + 1] = {i, now, grabbers[i]}
      granted_to[user] = #granted
    end
  end
end

if #granted > 0 then
  local shares = redis.call('LPOP', KEYS[2], #granted)
  local records, entries = {}, {}
  for j, grab in ipairs(granted) do
    local entry = shares[j] .. ':' .. grab[2]
    grab[4] = entry
    records[2 * j - 1] = grab[3]
    records[2 * j] = entry
    entries[j] = entry .. grab[3]
  end
  redis.call('HSET', KEYS[1], unpack(records))
  local logged = redis.call('RPUSH', KEYS[3], unpack(entries))
  for j, grab in ipairs(granted) do
    answers[grab[1]] = grab[4]
  end
  if logged - #granted == tonumber(persisted) then
    answers[granted[1][1]] = {granted[1][4]}
  end
end
for i, again in pairs(repeats) do
  answers[i] = granted[again[1]][4] .. '/' .. again[2]
end
return answers
