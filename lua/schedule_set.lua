-- delayq: write one recurring schedule's definition (a new schedule, a replaced one, paused or
-- resumed), keeping when it last fired, and index it by its next occurrence.
-- Not in Redisson.
--
-- Helpers: guard
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: schedules          delayq_schedules:{NAME}
-- KEYS[3]: schedule           delayq_schedule:{NAME}:ID
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- ARGV[3]: the schedule's id (its member in KEYS[2])
-- ARGV[4]: the revision the caller read, or '' to write whatever is stored
-- ARGV[5]: the next occurrence, epoch ms, or '' when there is none (ended)
-- ARGV[6 + 2k]: a field of the definition
-- ARGV[7 + 2k]: its value
-- Returns: the new revision, or -1, touching nothing, when the stored revision is not ARGV[4].
local rev = redis.call('hget', KEYS[3], 'rev')
if ARGV[4] ~= '' and rev ~= ARGV[4] then
    return -1
end
local last = redis.call('hget', KEYS[3], 'last_ms')
redis.call('del', KEYS[3])
local fields = {}
for i = 6, #ARGV do
    fields[#fields + 1] = ARGV[i]
end
local new_rev = (tonumber(rev) or 0) + 1
redis.call('hset', KEYS[3], 'rev', new_rev, unpack(fields))
if last then
    redis.call('hset', KEYS[3], 'last_ms', last)
end
local paused = redis.call('hget', KEYS[3], 'paused') == '1'
if ARGV[5] ~= '' then
    redis.call('hset', KEYS[3], 'next_ms', ARGV[5])
end
if ARGV[5] == '' or paused then
    redis.call('zadd', KEYS[2], 'inf', ARGV[3])
else
    redis.call('zadd', KEYS[2], ARGV[5], ARGV[3])
end
return new_rev
