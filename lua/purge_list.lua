-- delayq: delete one of delayq's own lists (dead letters or quarantine) and say how long it was.
-- Not in Redisson.
--
-- Helpers: guard
-- KEYS[1]: target list        NAME (untouched: routes the call to the queue's slot)
-- KEYS[2]: the list           LIST (delayq_dead:{NAME} or delayq_quarantine:{NAME})
-- ARGV[1]: now (not used)
-- ARGV[2]: entry format (not used)
-- Returns: the number of members deleted.
local n = redis.call('llen', KEYS[2])
redis.call('unlink', KEYS[2]) -- freed off the main thread: a big list never blocks Redis
return n
