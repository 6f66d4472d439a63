"""The backend contract's op families, as Burn splits its backend traits (``FloatTensorOps``,
``ModuleOps``, ``ActivationOps``...): one class per family, each method declared once (a
primitive every backend implements, or a composite with its default composed from primitives).
:class:`ember.kernels.backend.Backend` joins them; :mod:`.declare` says how a method is declared
and how a fused override falls back."""
