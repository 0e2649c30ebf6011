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
                 gradient_predivide_factor, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        from riseml import Adasum, Average, Sum
        if op not in (Average, Sum, Adasum):
            raise ValueError("riseml: DistributedOptimizer supports op=Average, Sum or Adasum")
        self._sparse_as_dense = sparse_as_dense
        self._process_set = process_set
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
            # Zeros until the first backward, as Horovod: state can be broadcast at once.
            p.grad = p.data.new(p.size()).zero_()
            p_tmp = p.expand_as(p)
            grad_acc = p_tmp.grad_fn.next_functions[0][0]
            grad_acc.register_hook(self._make_hook(p))
            self._grad_accs.append(grad_acc)

    def _included(self):
        """Ranks outside the optimizer's process set reduce nothing (Horovod's rule): their
        step() uses their own gradients."""
        return self._process_set is None or self._process_set.included()

    def _make_hook(self, p):
        def hook(*ignore):
            if not self._included():
                return
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
        from riseml.torch import allreduce_async_, sparse_allreduce_async
        if p.grad is None:  # not computed here but maybe elsewhere: submit zeros
            p.grad = p.data.new(p.size()).zero_()
        name = self._parameter_names.get(id(p))
        grad, layout = p.grad, "dense"
        if grad.is_sparse:
            if not self._sparse_as_dense:
                # Gathered, not reduced: the result replaces the gradient in synchronize().
                handle = sparse_allreduce_async(grad, name, self._op, self._process_set)
                return handle, (None, None, "sparse")
            # Reduced as a dense copy, given back sparse (optimizers like SparseAdam want it).
            grad, layout = grad.to_dense(), "sparse_as_dense"
        compressed, ctx = self._compression.compress(grad)
        if self._op == _common.Average:
            # The engine divides by size() for Average; the predivide factor is split over
            # prescale and postscale, as in Horovod.
            prescale = 1.0 / self._gradient_predivide_factor
            postscale = self._gradient_predivide_factor
        else:
            prescale = postscale = 1.0
        handle = allreduce_async_(compressed, name=name, op=self._op,
                                  prescale_factor=prescale, postscale_factor=postscale,
                                  process_set=self._process_set)
        return handle, (ctx, compressed, layout)

    def synchronize(self):
        """Waits for every gradient's allreduce (submitting those whose hook did not fire)."""
        from riseml.torch import synchronize
        if not self._included():
            self._synchronized = True
            return
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._allreduce_grad_async(p)
        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_grad_async(p)
        try:
            self._wait_for_handles(synchronize)
        except Exception:
            # A failed reduction (a peer died) never completes: drop every pending one, so
            # the step can be tried again after hvd.elastic's reset.
            self.drop_pending_reductions()
            raise

    def drop_pending_reductions(self):
        """Forgets the gradient reductions in flight (their engine is gone after a failure)."""
        self._handles.clear()
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        self._synchronized = False

    def _wait_for_handles(self, synchronize):
        for p, (handle, (ctx, compressed, layout)) in self._handles.items():
            output = synchronize(handle)
            self._allreduce_delay[p] = self.backward_passes_per_step
            if layout == "sparse":  # a sparse gradient's gathered sum
                p.grad = output
                continue
            result = self._compression.decompress(output, ctx)
            if layout == "sparse_as_dense":
                p.grad = result.to_sparse()
                continue
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
                # Horovod's wording, which scripts and tests match on.
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, set_to_none=True):
        """Drops the gradients (torch 2's default, which Horovod's scripts see): a sparse
        layer's next gradient then stays sparse instead of landing in a dense zero tensor."""
        if self._handles:
            raise AssertionError("riseml: zero_grad() called while gradients are being reduced;"
                                 " call step() or synchronize() first")
        return super(self.__class__, self).zero_grad(set_to_none=set_to_none)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=None, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=_common.global_process_set):
    """Wraps `optimizer` so gradients are averaged (op=Average, default), summed (Sum) or
    combined by adaptive summation (Adasum) over the ranks of `process_set` before each step.
    Sparse gradients are gathered (Horovod's way) unless sparse_as_dense. `num_groups` and
    `groups` (Horovod's grouping of allreduces) are accepted: the engine fuses by itself.
    Returns an instance of a subclass of optimizer's class."""
    if op is None:
        op = _common.Average
    if num_groups and groups:
        raise ValueError("riseml: pass num_groups or groups, not both")
    if groups is not None and not isinstance(groups, (int, list, tuple)):
        raise ValueError("riseml: groups must be an int or a list of lists of parameters")
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    wrapped = cls(optimizer.param_groups, named_parameters, compression,
                  backward_passes_per_step, op, gradient_predivide_factor, sparse_as_dense,
                  process_set)
    # Keep what the optimizer has accumulated (momenta, loaded checkpoints): Optimizer.__init__
    # started the wrapper with an empty state.
    wrapped.state = optimizer.state
    return wrapped
