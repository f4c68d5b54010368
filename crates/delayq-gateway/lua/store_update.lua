-- delayq-gateway: write a message's record (now with its entry's handle) only while the message
-- is still in the index (not delivered, given up or cancelled since its first record); with a
-- second key, also settle the message's deduplication claim there (see dedup_claim.lua).
-- Not in Redisson.
--
-- KEYS[1]: message index      delayq_gateway_messages:{QUEUE}
-- KEYS[2]: dedup id (optional) delayq_gateway_dedup:{QUEUE}:ID
-- ARGV[1]: the message id
-- ARGV[2]: the record (MessagePack)
-- Returns: HSET's answer, or -1 when the message was not in the index.
if KEYS[2] then
    local held = redis.call('GET', KEYS[2])
    if held and string.match(held, '^~%d+ (.+)$') == ARGV[1] then
        local ttl = redis.call('PTTL', KEYS[2])
        if ttl > 0 then
            redis.call('SET', KEYS[2], ARGV[1], 'PX', ttl)
        else
            redis.call('SET', KEYS[2], ARGV[1])
        end
    end
end
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
    return redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return -1
