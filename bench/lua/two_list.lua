-- two_list.lua: seed 004_a34bb8da67039d28's grab, verbatim: JSON shares in an unconsumed list,
-- one moved to the consumed list and the user marked in a dedupe hash. Run by the seeds'
-- comparison (bench/src/seeds.rs) and by `make profile-grab` (bench/profile/grab_lua.py).
--
-- KEYS[1] the unconsumed list, KEYS[2] the consumed list, KEYS[3] the dedupe hash, KEYS[4] the user
-- Returns the share taken, as JSON with the user, or nil (already grabbed, or none left).
if redis.call('hexists', KEYS[3], KEYS[4]) ~= 0 then
  return nil
else
  local hongBao = redis.call('rpop', KEYS[1]);
  if hongBao then
    local x = cjson.decode(hongBao);
    x['userId'] = KEYS[4];
    local re = cjson.encode(x);
    redis.call('hset', KEYS[3], KEYS[4], KEYS[4]);
    redis.call('lpush', KEYS[2], re);
    return re;
  end
end
return nil
