"""Loss op family: cross-entropy from logits, per sample, with label smoothing."""

from __future__ import annotations

from ember.kernels.families.declare import composite


class LossOps:
    """Cross-entropy per sample from logits ``[N, C]`` and int64 targets ``[N]``."""

    @composite(half=(1,))
    def cross_entropy(self, logits, targets, smoothing):
        """``(loss [N], lse [N])``: ``-(1 - s) logp[t] - (s / C) sum_j logp[j]`` over ``logp = log_softmax(logits)``."""
        # -(1 - s) logp[t] - (s / C) sum_j logp[j] over logp = log_softmax(logits), as PyTorch:
        # no cancellation of lse against the logits (the loss at |logit| ~ 3e38 is exact), and
        # NaN for a row with +inf or of -inf only
        n, c = logits.shape
        if c == 0:  # no classes, so no rows either (targets index a class): nothing to reduce
            lse = self.reshape(self._logsumexp(logits), (n,))
            return lse, lse
        logp, log_total = self._shifted_log_softmax(logits)
        lse = self.reshape(self.binary("add", self.reduce("max", logits, (1,), True), log_total), (n,))
        loss = self.full((n,), 0.0, self.dtype_of(logits))
        # terms of weight 0 are left out rather than multiplied by 0: a -inf (masked) logit
        # would turn them into NaN
        if smoothing < 1.0:
            picked = self.reshape(self.gather(logp, 1, self.reshape(targets, (n, 1))), (n,))
            loss = self.binary("sub", loss, self.binary("mul", picked, self._scalar(1.0 - smoothing, logits)))
        if smoothing:
            total = self.reduce("sum", logp, (1,), False)
            loss = self.binary("sub", loss, self.binary("mul", total, self._scalar(smoothing / c, logits)))
        return loss, lse

    @composite(half=())
    def cross_entropy_backward(self, logits, targets, lse, dloss, smoothing):
        """``dlogits [N, C] = (softmax(logits) - (1 - s) onehot - s / C) * dloss``."""
        n, c = logits.shape
        # exp(x - lse) normalised by its own row sum: lse = max + log(sum) rounds log(sum) away
        # at large |max| (the softmax of [1e20, 1e20] came out [1, 1]); the common error of the
        # shift cancels in the ratio
        p = self.unary("exp", self.binary("sub", logits, self.reshape(lse, (n, 1))))
        p = self.binary("div", p, self.reduce("sum", p, (1,), True))
        onehot = self.scatter_add(
            self.full((n, c), 0.0, self.dtype_of(logits)),
            1,
            self.reshape(targets, (n, 1)),
            self.full((n, 1), 1.0 - smoothing, self.dtype_of(logits)),
        )
        g = self.binary("sub", p, onehot)
        if smoothing:
            g = self.binary("sub", g, self._scalar(smoothing / c, logits))
        return self.binary("mul", g, self.reshape(dloss, (n, 1)))
