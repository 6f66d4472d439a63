"""Operation fusion: element-wise ops recorded instead of run, then computed as one kernel.

A tensor op on a backend that fuses (``cpu``) gives back a :class:`~.lazy.Lazy` array — its op,
operands, shape and dtype — instead of computing; chains of such ops build a small graph.
When a value is needed (a sync point: ``.numpy()``, ``.item()``, printing, any backend call the
engine does not fuse, an optimizer step, or a graph grown past its limit) the graph is
compiled into one kernel, cached by its relative signature (the ops and their wiring, not the
sizes), and run. :mod:`.engine` decides what is recorded; :mod:`.plan` lays a graph out and
keeps the compiled kernels; the backend's chain runner (:mod:`ember.kernels.cpu.fused_chain`)
generates, compiles and runs it.
"""
