"""Lowering a decoder and a ScheduleConfig into a megakernel program (spec §5; the lowering guide)."""

from amkspec.lower.lowering import LoweringError, lower, resolve_model, resolve_target

__all__ = ["LoweringError", "lower", "resolve_model", "resolve_target"]
