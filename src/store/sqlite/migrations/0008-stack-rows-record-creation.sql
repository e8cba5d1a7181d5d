-- From this version on, a StackCreatedEvent's key is no longer claimed in applied_events: the stack's row
-- records that its one creation event was applied (src/store/sqlite.ts, createStack; docs/DECISIONS.md,
-- "A stack's row records its creation event"). Nothing in the schema changes. This migration is here so
-- that an older node-daemon, which would look for those keys and apply the creations again, refuses the
-- store (store_too_new) instead.
SELECT 1;
