#!lua
-- grab_many.lua: several users grab one share each of one packet, in one call: the grab
-- coalescer's batch (adapters/redis/coalesce.rs). Each user in turn meets exactly grab.lua's
-- decision: the body of grab.lua itself is spliced in below as the function `grab_one` (at
-- the marker line inside it), so a batch answers every user what the same grabs one by one, in
-- the batch's order, would have answered.
--
-- KEYS     as grab.lua: KEYS[1] the packet hash, KEYS[2] the pool, KEYS[3] the grab log,
--          KEYS[4] the lookup
-- ARGV[1]  the lookup lease, milliseconds (grab.lua's ARGV[5])
-- ARGV[2]  wrong passphrases allowed per user (grab.lua's ARGV[7])
-- ARGV[3+3k], ARGV[4+3k], ARGV[5+3k]  for the k-th user of the batch (k from 0): the user
--          (the caller's verified `sub`), now in epoch milliseconds as that grab read it, and
--          the digest of the passphrase it carried ('' for none)
--
-- Returns an array: one answer per user, in the batch's order, each exactly as grab.lua
-- returns it (a bulk string, an integer, or a one-element array for a grab that dirtied the
-- packet).
--
-- Cost: one script call for the batch; per user, grab.lua's commands (a fresh grab 4, a repeat
-- 2). Under maxmemory the whole batch is refused (-OOM) before anything changes, as a single
-- grab is.

local function grab_one(ARGV)
--@grab.lua
end

local answers = {}
for k = 3, #ARGV, 3 do
  local user = ARGV[k]
  answers[#answers + 1] = grab_one({':' .. user, '+' .. user, '!' .. user, ARGV[k + 1], ARGV[1], ARGV[k + 2], ARGV[2]})
end
return answers
