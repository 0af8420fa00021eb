"""Pictures of counterexamples and programs: witness timelines, program graphs, HTML reports.

A witness (spec §3, the JSON form documented in :mod:`amkspec.smt.witness`) becomes
a timeline (:func:`~amkspec.viz.timeline.timeline_figure`); a program becomes its
layered task graph (:func:`~amkspec.viz.graph.graph_figure`); ``explain``'s result
becomes one self-contained HTML file (:func:`~amkspec.viz.report.report_html`).

Rendering needs the ``viz`` extra (matplotlib), imported only when a picture is
drawn; the scene and layout modules are pure Python. Nothing in
:mod:`amkspec.ir` or :mod:`amkspec.proofs` imports this package.
"""
