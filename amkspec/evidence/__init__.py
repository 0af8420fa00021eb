"""Evidence for a verdict (spec §3): certificates of acceptance and their independent checker,
witness replay, the explicit-state model checker and the exhaustive agreement of ``validate()``
with it on bounded domains. No torch, no z3."""
