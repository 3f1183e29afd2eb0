"""One adapter per tool (fio, IOzone, YCSB, pgbench, the database servers): the command line it is given and a
pure parser of its output into typed results, each workload type registered once (registry.py)."""
