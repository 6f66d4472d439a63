"""The layers of ember, lowest first: a module may import its own layer and the layers below it,
never one above (``tests/test_import_graph.py`` checks every import of ``ember/`` against this
table, and that the module-level imports form no circle).

    core         the op table, the dtypes and the configuration (ember.toml): imports nothing
                 from ember above it
    kernels      the backends (reference, cpu, cuda): arrays and the core only
    tensor       Tensor, autodiff, devices; ``ember`` itself and ``ember.cuda`` are its public face
    record       records and configs (burnpack, safetensors)
    data         datasets, loaders, transforms
    nn           modules, params, layers, losses, LoRA
    optim        optimizers, gradient accumulation, lr schedulers
    interop      ONNX export/import, pretrained checkpoints
    distributed  communicators, sharded loading, gradient averaging, state sync (no train)
    train        the training runner (its DistributedDataParallel strategy drives distributed),
                 metrics, loggers, renderers, checkpoints
    tools        command-line helpers (precompile, autotune)

A package belongs to the layer whose entry is its longest matching prefix; ``ember`` names the
package's own ``__init__`` only. A new package is added here, in the layer whose imports it needs.
"""

from __future__ import annotations

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("ember.core", "ember.config", "ember._layers", "ember._deprecation", "ember._version")),
    ("kernels", ("ember.kernels",)),
    ("tensor", ("ember.tensor", "ember.cuda", "ember")),
    ("record", ("ember.record",)),
    ("data", ("ember.data",)),
    ("nn", ("ember.nn",)),
    ("optim", ("ember.optim",)),
    ("interop", ("ember.onnx", "ember.pretrained")),
    ("distributed", ("ember.distributed",)),
    ("train", ("ember.train",)),
    ("tools", ("ember.precompile", "ember.autotune")),
)


def layer_of(module: str) -> tuple[int, str] | None:
    """(rank, layer name) of a dotted module name, or None when no entry covers it."""
    best = None
    for rank, (name, packages) in enumerate(LAYERS):
        for package in packages:
            covers = module == package or (package != "ember" and module.startswith(package + "."))
            if covers and (best is None or len(package) > best[0]):
                best = (len(package), rank, name)
    return None if best is None else best[1:]
