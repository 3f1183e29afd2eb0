-- A deposit into one account, in its own transaction.
\set aid random(1, :accounts * :scale)
\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
END;
