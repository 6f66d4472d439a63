"""The ``torch`` backend: arrays are PyTorch tensors, computed on by PyTorch's kernels.

Like Burn's LibTorch backend (``tch``): ``Device("torch")`` computes on the CPU,
``Device("torch:cuda:N")`` on a CUDA GPU and ``Device("torch:mps")`` on Apple's Metal. The
primitives are PyTorch operations (:mod:`.primitives`), the composites PyTorch fuses are
overridden in one module per op family; everything runs on plain tensors under
``torch.no_grad()``: ember's tape stays the only autodiff. PyTorch is the optional extra
``ember[torch]``; ``import ember`` does not load it (the registry imports this package on
first use of a torch device).
"""
