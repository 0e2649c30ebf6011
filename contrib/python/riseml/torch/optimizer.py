"""DistributedOptimizer: averages gradients over the ranks while backward() runs.

A hook on each parameter's gradient accumulator submits the gradient to the engine as soon as
it is computed (so communication overlaps the rest of the backward pass); step() waits for all
of them, then runs the wrapped optimizer. Same contract as Horovod's.
"""
import contextlib
import warnings

import torch

import riseml as _common
from riseml.torch.compression import Compression


class _DistributedOptimizer(torch.optim.Optimizer):
    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor):
        super(self.__class__, self).__init__(params)
        from riseml import Average, Sum
        if op not in (Average, Sum):
            raise ValueError("riseml: DistributedOptimizer supports op=Average or op=Sum")
        if gradient_predivide_factor != 1.0 and op != Average:
            raise ValueError("riseml: gradient_predivide_factor needs op=Average")
        if backward_passes_per_step < 1:
            raise ValueError("riseml: backward_passes_per_step must be >= 1")
        self._compression = compression
        self._op = op
        self._gradient_predivide_factor = gradient_predivide_factor
        self.backward_passes_per_step = backward_passes_per_step

        if named_parameters is not None:
            named_parameters = list(named_parameters)
        else:
            named_parameters = [("allreduce.noname.%s.%s" % (i, j), p)
                                for i, group in enumerate(self.param_groups)
                                for j, p in enumerate(group["params"])]
        if any(not isinstance(p, tuple) or len(p) != 2 for p in named_parameters):
            raise ValueError("riseml: named_parameters should be a sequence of (name, parameter)"
                             " tuples, usually model.named_parameters()")
        names = [k for k, _ in named_parameters]
        if len(names) != len(set(names)):
            dups = sorted({n for n in names if names.count(n) > 1})
            raise ValueError("riseml: parameter names in named_parameters must be unique: %s"
                             % ", ".join(dups))
        all_params = {id(p) for group in self.param_groups for p in group["params"]}
        named = {id(p) for _, p in named_parameters}
        if all_params - named:
            raise ValueError("riseml: named_parameters was given but misses some of the "
                             "optimizer's parameters")
        self._parameter_names = {id(v): "grad." + k for k, v in named_parameters}
        self._handles = {}
        self._grad_accs = []
        self._requires_update = set()
        self._allreduce_delay = {}
        self._synchronized = False
        self._should_synchronize = True
        self._register_hooks()

    def _params(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.requires_grad:
                    yield p

    def _register_hooks(self):
        for p in self._params():
            self._requires_update.add(p)
            self._allreduce_delay[p] = self.backward_passes_per_step
            p.grad = p.data.new(p.size()).zero_()
            p_tmp = p.expand_as(p)
            grad_acc = p_tmp.grad_fn.next_functions[0][0]
            grad_acc.register_hook(self._make_hook(p))
            self._grad_accs.append(grad_acc)

    def _make_hook(self, p):
        def hook(*ignore):
            if p in self._handles and self._handles[p][0] is not None:
                if self._allreduce_delay[p] <= 0:
                    raise AssertionError(
                        "riseml: gradients were computed more than backward_passes_per_step "
                        "times before step(); raise backward_passes_per_step to accumulate "
                        "gradients locally")
            handle, ctx = None, None
            self._allreduce_delay[p] -= 1
            if self._allreduce_delay[p] == 0:
                handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    def _allreduce_grad_async(self, p):
        from riseml.torch import allreduce_async_
        if p.grad is None:  # not computed here but maybe elsewhere: submit zeros
            p.grad = p.data.new(p.size()).zero_()
        compressed, ctx = self._compression.compress(p.grad)
        if self._op == _common.Average:
            # The engine divides by size() for Average; the predivide factor is split over
            # prescale and postscale, as in Horovod.
            prescale = 1.0 / self._gradient_predivide_factor
            postscale = self._gradient_predivide_factor
        else:
            prescale = postscale = 1.0
        handle = allreduce_async_(compressed, name=self._parameter_names.get(id(p)), op=self._op,
                                  prescale_factor=prescale, postscale_factor=postscale)
        return handle, (ctx, compressed)

    def synchronize(self):
        """Waits for every gradient's allreduce (submitting those whose hook did not fire)."""
        from riseml.torch import synchronize
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, (ctx, compressed)) in self._handles.items():
            output = synchronize(handle)
            self._allreduce_delay[p] = self.backward_passes_per_step
            result = self._compression.decompress(output, ctx)
            if result.data_ptr() != p.grad.data_ptr():
                with torch.no_grad():
                    p.grad.copy_(result)
        self._handles.clear()
        self._synchronized = True

    @contextlib.contextmanager
    def skip_synchronize(self):
        """For step() after an explicit synchronize() (gradient clipping):

            optimizer.synchronize()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            with optimizer.skip_synchronize():
                optimizer.step()
        """
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("riseml: optimizer.step() called after optimizer.synchronize() "
                              "without skip_synchronize(): gradients are reduced twice")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, set_to_none=False):
        if self._handles:
            raise AssertionError("riseml: zero_grad() called while gradients are being reduced;"
                                 " call step() or synchronize() first")
        # Keep the gradient tensors (the hooks reduce them in place).
        return super(self.__class__, self).zero_grad(set_to_none=False)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=None, gradient_predivide_factor=1.0):
    """Wraps `optimizer` so gradients are averaged (op=Average, default) or summed over the
    ranks before each step. Returns an instance of a subclass of optimizer's class."""
    if op is None:
        op = _common.Average
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    wrapped = cls(optimizer.param_groups, named_parameters, compression,
                  backward_passes_per_step, op, gradient_predivide_factor)
    # Keep what the optimizer has accumulated (momenta, loaded checkpoints): Optimizer.__init__
    # started the wrapper with an empty state.
    wrapped.state = optimizer.state
    return wrapped
