"""SyncBatchNorm: batch normalisation over the whole batch of all ranks (Horovod's API).

Each rank computes the sum and the sum of squares of its part of the batch per channel; one
allreduce of (sum, sum of squares, count) gives every rank the statistics of the whole batch.
The backward pass needs two more sums over the whole batch (of the output gradient, and of the
output gradient times the normalised input): one more allreduce. The weight and bias gradients
stay per rank, as in torch.nn.SyncBatchNorm: the DistributedOptimizer averages them.
"""
import torch
from torch.nn.modules.batchnorm import _BatchNorm

import riseml as _common


class SyncBatchNorm(_BatchNorm):
    """Applies batch normalisation over the batch of every rank of `process_set` (drop-in for
    torch.nn.BatchNorm1d/2d/3d in training; in eval mode it uses the running statistics)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_set=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("riseml: SyncBatchNorm expects at least 2-D input (got %d-D)"
                             % input.dim())

    def _members(self):
        ps = self.process_set or _common.global_process_set
        return ps.size() if _common.is_initialized() else 1

    def forward(self, input):
        self._check_input_dim(input)
        if not self.training and self.track_running_stats:
            return torch.nn.functional.batch_norm(
                input, self.running_mean, self.running_var, self.weight, self.bias, False, 0.0,
                self.eps)
        if self.momentum is None:
            momentum = None
        else:
            momentum = self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average
                momentum = 1.0 / float(self.num_batches_tracked)
        return _SyncBatchNormFunction.apply(
            input, self.weight, self.bias, self.running_mean, self.running_var, self.eps,
            momentum if (self.training and self.track_running_stats) else None,
            self.process_set)


def _channel_view(t, shape):
    """A per-channel vector shaped to broadcast over an input of `shape` (N, C, ...)."""
    return t.view((1, -1) + (1,) * (len(shape) - 2))


class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias, running_mean, running_var, eps, momentum, process_set):
        from riseml.torch import allreduce, Sum, global_process_set
        ps = process_set or global_process_set
        x = input.contiguous()
        dims = [0] + list(range(2, x.dim()))
        x64 = x.double()  # the sums in double: the whole batch's statistics stay exact
        # Every tensor made here lies on the input's device (a CUDA input reduces on its GPU).
        count = torch.tensor([x.numel() // x.size(1)], dtype=torch.float64, device=x.device)
        stats = torch.cat([x64.sum(dims), (x64 * x64).sum(dims), count])
        stats = allreduce(stats, op=Sum, name=None, process_set=ps)
        c = x.size(1)
        total = stats[2 * c].item()
        if total <= 1 and momentum is not None:
            raise ValueError("riseml: SyncBatchNorm needs more than one value per channel over "
                             "all ranks in training (got %d)" % total)
        mean = stats[:c] / total
        var = (stats[c:2 * c] / total - mean * mean).clamp(min=0.0)
        invstd = 1.0 / torch.sqrt(var + eps)
        if momentum is not None:
            with torch.no_grad():
                unbiased = var * (total / (total - 1))
                running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype) * momentum)
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)
        mean_x = _channel_view(mean, x.shape).to(x.dtype)
        invstd_x = _channel_view(invstd, x.shape).to(x.dtype)
        xhat = (x - mean_x) * invstd_x
        out = xhat
        if weight is not None:
            out = out * _channel_view(weight, x.shape)
        if bias is not None:
            out = out + _channel_view(bias, x.shape)
        ctx.save_for_backward(xhat, invstd_x, weight)
        ctx.total, ctx.process_set, ctx.has_bias = total, ps, bias is not None
        return out

    @staticmethod
    def backward(ctx, grad_output):
        from riseml.torch import allreduce, Sum
        xhat, invstd, weight = ctx.saved_tensors
        dy = grad_output.contiguous()
        dims = [0] + list(range(2, dy.dim()))
        sum_dy = dy.double().sum(dims)
        sum_dy_xhat = (dy.double() * xhat.double()).sum(dims)
        grad_weight = sum_dy_xhat.to(dy.dtype) if weight is not None else None
        grad_bias = sum_dy.to(dy.dtype) if ctx.has_bias else None
        c = dy.size(1)
        both = allreduce(torch.cat([sum_dy, sum_dy_xhat]), op=Sum, process_set=ctx.process_set)
        mean_dy = _channel_view(both[:c] / ctx.total, dy.shape).to(dy.dtype)
        mean_dy_xhat = _channel_view(both[c:] / ctx.total, dy.shape).to(dy.dtype)
        scale = invstd if weight is None else invstd * _channel_view(weight, dy.shape)
        grad_input = (dy - mean_dy - xhat * mean_dy_xhat) * scale
        return grad_input, grad_weight, grad_bias, None, None, None, None, None
