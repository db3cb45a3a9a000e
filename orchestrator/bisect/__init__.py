"""`orch bisect`: find the commit where a recipe's metric steps. search is pure (a measure callable in, the answer
out); candidates lists the commits; driver and session build, run and store the probes."""
