-- From this version on, a StackCreatedEvent's key is no longer claimed in applied_events: the stack's row
-- records that its one creation event was applied (src/store/postgres.ts, createStack; docs/DECISIONS.md,
-- "A stack's row records its creation event"). An older node-daemon, which would look for those keys and
-- apply the creations again, refuses the database (store_too_new) when it opens it, because it does not know
-- this migration; one that is already running when this migration is applied does not notice, so stop the
-- older daemons before a newer one starts on the database.
--
-- A page learns which of the stacks it creates exist before it writes, and inserts the others in staged
-- statements that it does not wait for. Another daemon, indexing another source into the same database,
-- may create one of them meanwhile: the insert then skips it (ON CONFLICT DO NOTHING), and this check,
-- given the rows inserted and the rows expected, fails the transaction (SQLSTATE NDS01, retryable). The
-- indexer applies the page again (src/indexer/apply.ts) and finds that stack's creation a duplicate.
CREATE FUNCTION node_daemon_created_guard(inserted bigint, expected bigint) RETURNS boolean
  LANGUAGE plpgsql AS $$
BEGIN
  IF inserted <> expected THEN
    RAISE EXCEPTION 'a stack this transaction creates was created by another writer meanwhile'
      USING ERRCODE = 'NDS01';
  END IF;
  RETURN true;
END $$;
