-- What a daemon needs to keep a node's stack list in memory and bring it up to date by reading only the
-- stacks that changed, whichever process changed them (src/store/postgres.ts, #nodeList). PostgreSQL
-- only: a SQLite store has one writer, its daemon.
--
-- Each stacks row carries the top-level id of the transaction that last wrote it. A list read under a
-- snapshot is brought up to date by reading the node's rows whose writer that snapshot did not see
-- (pg_visible_in_snapshot): those committed since, or still running then, and nothing else. An insert
-- stamps itself through the default; an update through the trigger, so no statement (of any version, or
-- typed by hand) can forget it. Rows already here were written by transactions every snapshot sees: 0.
ALTER TABLE stacks ADD COLUMN written_xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE stacks ALTER COLUMN written_xid SET DEFAULT pg_current_xact_id();
CREATE INDEX stacks_by_writer ON stacks (selected_node_id, written_xid);

CREATE FUNCTION stacks_stamp_writer() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.written_xid := pg_current_xact_id();
  RETURN NEW;
END $$;
CREATE TRIGGER stacks_stamp_writer BEFORE UPDATE ON stacks
  FOR EACH ROW EXECUTE FUNCTION stacks_stamp_writer();

-- A row that leaves a node's list (deleted, truncated, or its ids changed: nothing in node-daemon does
-- any of these) leaves no row to read: it counts here instead, and a kept list that sees the count move
-- is read again whole.
ALTER TABLE store_version ADD COLUMN stacks_removed BIGINT NOT NULL DEFAULT 0;

CREATE FUNCTION stacks_count_removal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE store_version SET stacks_removed = stacks_removed + 1;
  RETURN NULL;
END $$;
CREATE TRIGGER stacks_count_removal AFTER DELETE OR TRUNCATE OR UPDATE OF selected_node_id, stack_small_id
  ON stacks FOR EACH STATEMENT EXECUTE FUNCTION stacks_count_removal();
