\if true
SELECT 1;
