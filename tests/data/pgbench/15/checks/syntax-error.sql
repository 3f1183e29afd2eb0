\set x random(1,
SELECT 1;
