-- delayq-gateway: forget a message's pending claim of a deduplication id (its message could not
-- be stored); a claim taken over by another message meanwhile stays.
-- Not in Redisson.
--
-- KEYS[1]: dedup id           delayq_gateway_dedup:{QUEUE}:ID
-- ARGV[1]: the message id
-- Returns: 1 when the claim was deleted, else 0.
local held = redis.call('GET', KEYS[1])
if not held or string.match(held, '^~%d+ (.+)$') ~= ARGV[1] then
    return 0
end
return redis.call('DEL', KEYS[1])
