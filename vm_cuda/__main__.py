"""``python3 -m vm_cuda``: build the CPU library of the megakernel (CI runs this first); exit 2 on failure."""

from __future__ import annotations

import sys

from vm_cuda.build import BuildError, build_library


def main() -> int:
    """Build (or find in the cache) the release CPU build and print its path."""
    try:
        path = build_library("release")
    except (BuildError, OSError) as exc:  # no compiler, a compile error, an unusable cache
        print(f"vm_cuda: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
