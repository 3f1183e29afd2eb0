"""The run stage: a run started, executed and resumed (start.py, session.py), its rounds scheduled and
looped over (schedule.py, loop.py), each trial run by its kind (kinds/) and measured while it runs
(measure/). A run reaches its results through the ``Results`` protocol (results.py), never the store."""
