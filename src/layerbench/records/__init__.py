"""What a trial and a run produced, typed, below both the run stage that makes them and the store that keeps
them: samples, checks, monitor points, profiles, the trial's recorded conditions, histograms."""
