"""What analysis derives from a run's read model: statistics, verdicts, findings, checks over trials, advice and
plans. Pure functions over data: nothing here runs a tool or touches the host."""
