"""`orch tune`: the fastest speculation settings for a model on this machine, found by racing with paired
statistics (race.py), guarded (guards.py), stored and resumable (session.py, driver.py), answered (answer.py)."""
