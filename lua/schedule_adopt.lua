-- delayq: move one recurring schedule's hash from its name before issue 38 (the id as it is) to
-- its name now (':' and '%' of the id escaped), so a schedule set before the upgrade goes on
-- firing from where it stood (revision, next and last occurrence kept: each occurrence once).
-- The name is left alone when it is another schedule's now: this queue's schedule whose escaped
-- id it ends with, or the schedule of a queue '{NAME}:...' named so (lib/item.lua's rule), or
-- when the id is not a schedule of this queue's.
-- Not in Redisson.
--
-- Helpers: guard, item
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: schedules          delayq_schedules:{NAME}
-- KEYS[3]: schedule           delayq_schedule:{NAME}:ID (the id escaped)
-- KEYS[4]: its old name       delayq_schedule:{NAME}:ID (the id as it is)
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: the schedule's id (its member in KEYS[2])
-- Returns: 1 when the hash was moved, else 0 (a hash under the name now, none under the old
-- one, an id the queue has no schedule of, or an old name another schedule holds now).
if redis.call('exists', KEYS[3]) == 1 or redis.call('exists', KEYS[4]) == 0 then
    return 0
end
if not redis.call('zscore', KEYS[2], ARGV[3]) or delayq_item_claimed(KEYS[2], ARGV[3]) then
    return 0
end
redis.call('rename', KEYS[4], KEYS[3])
return 1
