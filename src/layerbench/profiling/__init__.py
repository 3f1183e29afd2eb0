"""CPU profiles of a trial: perf's command lines and pure parsers of what perf prints."""
