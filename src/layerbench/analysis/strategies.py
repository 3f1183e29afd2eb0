"""The names of seed 000's container assignments, which analysis/plan.py makes: here, apart, so that
`plan --help` lists them without loading the analysis (pandas) that makes them."""

SATURATE_BANDWIDTH = "saturate-bandwidth"
PEAK_ONE_HOST = "peak-one-host"
SATURATE_EACH = "saturate-each"
PEAK_EACH = "peak-each"
CHEAPEST = "cheapest-for-target"
BEST_UNDER_P99 = "best-under-p99"
STRATEGIES = (SATURATE_BANDWIDTH, PEAK_ONE_HOST, SATURATE_EACH, PEAK_EACH, CHEAPEST, BEST_UNDER_P99)
