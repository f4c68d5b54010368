-- delayq: give back what a reliable consumer's claim list holds, onto the head of the target
-- list in the same order, when the consumer's lease ran out (it died between its blocking wait
-- and its take) or when the consumer closes. Not in Redisson. Idempotent; safe with several
-- reapers.
--
-- Helpers: time, guard, settle
-- KEYS[1]: target list        NAME
-- KEYS[2]: claim leases       delayq_claims:{NAME}
-- KEYS[3]: claim list         delayq_claim:{NAME}:CONSUMER
-- ARGV[1]: now: epoch ms, or 'server'
-- ARGV[2]: entry format (not used)
-- ARGV[3]: '1' to give back whatever the lease says (the consumer itself, closing)
-- Returns: the number of values given back; an error, touching nothing, when KEYS[3] is not
-- named like one of this queue's claim lists.
if not delayq_is_claim_of(KEYS[2], KEYS[3]) then
    return redis.error_reply('ERR delayq: ' .. KEYS[3] .. ' is not a claim list of ' .. KEYS[2])
end
local lease = redis.call('zscore', KEYS[2], KEYS[3])
if ARGV[3] ~= '1' and lease and tonumber(lease) > delayq_now(ARGV[1]) then
    return 0
end
local moved = 0
while redis.call('lmove', KEYS[3], KEYS[1], 'right', 'left') do
    moved = moved + 1
end
redis.call('zrem', KEYS[2], KEYS[3])
return moved
