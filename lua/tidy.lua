-- delayq: drop delayq's indexes of a queue whose order list is gone, or give them its time to live.
-- Not in Redisson: Redisson's delete, clear and expire act on the timeout zset and the order list
-- alone, so after a Java delete, clear or expiry delayq's indexes of the list would stay (the value
-- index is about as large as the queue was).
--
-- Helpers: guard, queue
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: order list         redisson_delay_queue:{NAME}
-- KEYS[3]: position index     delayq_index:{NAME}
-- KEYS[4]: value index        delayq_values:{NAME}
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- Returns: how many of the two indexes were deleted.
local before = redis.call('exists', KEYS[3], KEYS[4])
delayq_tidy_index(KEYS[2], KEYS[3], KEYS[4])
return before - redis.call('exists', KEYS[3], KEYS[4])
