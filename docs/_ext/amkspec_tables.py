"""Sphinx directive ``amkspec-table``: a table generated from the code at build time.

Usage (MyST)::

    ```{amkspec-table} tables:opcodes
    ```

The argument names ``module:function``; the function returns ``(headers, rows)``
where every cell is a string (inline reST is allowed). Modules are looked up on
``docs/_ext``, so each chapter keeps its generators in its own ``tables_*.py``.
"""

from __future__ import annotations

import importlib
from typing import Any

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList


class AmkspecTable(Directive):
    required_arguments = 1
    has_content = False

    def run(self) -> list[nodes.Node]:
        module_name, func_name = self.arguments[0].split(":")
        headers, rows = getattr(importlib.import_module(module_name), func_name)()
        return [self._table(headers, rows)]

    def _table(self, headers: list[str], rows: list[list[str]]) -> nodes.table:
        table = nodes.table(classes=["amkspec-generated"])
        group = nodes.tgroup(cols=len(headers))
        table += group
        group.extend(nodes.colspec(colwidth=1) for _ in headers)
        head = nodes.thead()
        head += self._row(headers)
        body = nodes.tbody()
        body.extend(self._row(r) for r in rows)
        group += head
        group += body
        return table

    def _row(self, cells: list[str]) -> nodes.row:
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            container = nodes.container()
            self.state.nested_parse(StringList([str(cell)]), self.content_offset, container)
            entry.extend(container.children)
            row += entry
        return row


def setup(app: Any) -> dict[str, Any]:
    app.add_directive("amkspec-table", AmkspecTable)
    return {"parallel_read_safe": True, "version": "1"}
