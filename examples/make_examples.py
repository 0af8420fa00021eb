"""Write the bundled example programs: ``python3 examples/make_examples.py [OUT_DIR]``.

Every file in ``examples/`` is a builder of :data:`amkspec.programs.bundled.EXAMPLES`, written in
canonical form (amkspec must be importable: installed, or ``PYTHONPATH=.``);
``tests/test_examples.py`` checks that the committed files equal this script's output, so edit the
builders, never the JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

from amkspec.ir import dump
from amkspec.programs.bundled import EXAMPLES


def main(out_dir: Path) -> None:
    for name, make in EXAMPLES.items():
        dump(make(), out_dir / name)
        print(f"wrote {out_dir / name}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
