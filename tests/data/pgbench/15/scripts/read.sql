-- One account's balance, by a random id among :accounts per unit of scale (-D accounts=...).
\set aid random(1, :accounts * :scale)
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
