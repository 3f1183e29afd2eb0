"""What measures a trial while it runs: the monitor's samples of CPUs, devices and processes, and the checks
that read them (each seed's measurement trap, caught as the trial ends)."""
