-- A usage group on stacks this process wrote last goes in one round trip, computed from the values its
-- own last commit left (postgres.ts, #recordUsage). Each of its updates changes a stack's rows only where
-- they still hold those values, and calls this with the rows it changed and the rows expected: any other
-- writer in between (another daemon's report, an indexer page) fails the transaction here, and the group
-- is read and written again the usual way.
CREATE FUNCTION node_daemon_usage_guard(matched bigint, expected bigint) RETURNS boolean
  LANGUAGE plpgsql AS $$
BEGIN
  IF matched <> expected THEN
    RAISE EXCEPTION 'the stacks changed since this process last wrote them' USING ERRCODE = 'NDU01';
  END IF;
  RETURN true;
END $$;
