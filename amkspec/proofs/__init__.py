"""Proof obligations of spec §3 and their algorithmic discharge (no torch, no z3)."""
