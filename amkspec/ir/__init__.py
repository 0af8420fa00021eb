"""The AMK IR: data model, enums and codes, opcode registry, JSON format (spec §1, §5-§8).

Depends on attrs and cattrs only (no torch, no z3).
"""

from amkspec.ir.builder import ProgramBuilder
from amkspec.ir.enums import (
    ABI_MAX_INPUTS,
    ABI_MAX_OUTPUTS,
    ABI_MAX_RANK,
    ABI_MAX_WAITS,
    ABI_VERSION,
    IR_VERSION,
    MAX_THREADS_PER_BLOCK,
    ON_CHIP_SPACES,
    READONLY_KINDS,
    WARP,
    WEIGHT_KINDS,
    AttentionFlags,
    BufferKind,
    DType,
    FusedPattern,
    InstructionKind,
    MemSpace,
    QuantFlags,
)
from amkspec.ir.errors import AmkspecError, FormatError, VersionError, VersionWarning
from amkspec.ir.jsonio import dump, dumps, from_dict, load, loads, to_dict
from amkspec.ir.model import (
    Buffer,
    Counter,
    MegakernelProgram,
    Page,
    PageAllocation,
    ScheduleConfig,
    Task,
    Wait,
)
from amkspec.ir.opcodes import (
    OP_REGISTRY,
    PARAM_DEFAULTS,
    PARAM_FIELDS,
    PARAM_LAYOUT,
    OpSpec,
    default_text,
    param_default,
)
from amkspec.ir.targets import TARGETS, GpuTarget

__all__ = [
    "ABI_MAX_INPUTS", "ABI_MAX_OUTPUTS", "ABI_MAX_RANK", "ABI_MAX_WAITS", "ABI_VERSION",
    "IR_VERSION", "MAX_THREADS_PER_BLOCK", "ON_CHIP_SPACES", "OP_REGISTRY", "PARAM_DEFAULTS",
    "PARAM_FIELDS", "PARAM_LAYOUT", "READONLY_KINDS", "TARGETS", "WARP", "WEIGHT_KINDS", "AmkspecError",
    "AttentionFlags", "Buffer",
    "BufferKind", "Counter", "DType", "FormatError", "FusedPattern", "GpuTarget",
    "InstructionKind", "MegakernelProgram", "MemSpace", "OpSpec", "Page", "PageAllocation",
    "ProgramBuilder", "QuantFlags", "ScheduleConfig", "Task", "VersionError", "VersionWarning", "Wait",
    "default_text", "dump", "dumps", "from_dict", "load", "loads", "param_default", "to_dict",
]
