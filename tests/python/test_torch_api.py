"""riseml.torch on every rank: run alone and under riseml-launch -n 2 / -n 4."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
import riseml.torch as hvd  # noqa: E402
import riseml.torch as T  # noqa: E402 (its internals, for a distinct output)


def test_allreduce_variants():
    n, r = hvd.size(), hvd.rank()
    t = torch.full((3, 2), float(r + 1))
    assert torch.allclose(hvd.allreduce(t), torch.full((3, 2), (n + 1) / 2))
    assert torch.equal(t, torch.full((3, 2), float(r + 1)))
    assert torch.equal(hvd.allreduce(t, op=hvd.Sum), torch.full((3, 2), n * (n + 1) / 2))
    assert torch.equal(hvd.allreduce(t, op=hvd.Max), torch.full((3, 2), float(n)))
    assert torch.equal(hvd.allreduce(t, op=hvd.Min), torch.ones(3, 2))
    # in place keeps the storage: no copy
    ptr = t.data_ptr()
    hvd.allreduce_(t, op=hvd.Sum)
    assert t.data_ptr() == ptr and torch.equal(t, torch.full((3, 2), n * (n + 1) / 2))
    h = hvd.allreduce_async(torch.ones(5, dtype=torch.float64), name="a", op=hvd.Sum)
    assert torch.equal(hvd.synchronize(h), torch.full((5,), float(n), dtype=torch.float64))
    u = torch.ones(4)
    hvd.synchronize(hvd.allreduce_async_(u, op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0))
    assert torch.equal(u, torch.full((4,), 2.0 * n))
    assert hvd.allreduce(torch.ones(3, dtype=torch.bfloat16), op=hvd.Sum).dtype == torch.bfloat16
    assert torch.equal(hvd.allreduce(torch.ones(3, dtype=torch.bfloat16), op=hvd.Sum).float(),
                       torch.full((3,), float(n)))
    c = hvd.allreduce(torch.ones(3), compression=hvd.Compression.fp16, op=hvd.Sum)
    assert c.dtype == torch.float32 and torch.equal(c, torch.full((3,), float(n)))
    # non-contiguous input and a grad-requiring tensor
    nc = torch.ones(4, 4)[:, 1]
    assert torch.equal(hvd.allreduce(nc, op=hvd.Sum), torch.full((4,), float(n)))
    p = torch.ones(2, requires_grad=True)
    assert torch.equal(hvd.allreduce(p, op=hvd.Sum), torch.full((2,), float(n)))


def test_allreduce_of_host_tensors_by_pointer():
    """Contiguous CPU tensors go to the engine as raw pointers: every dtype, a slice that starts
    inside its storage (its neighbours untouched), a distinct output, and an input nobody else
    holds while the operation runs."""
    import gc
    n, r = hvd.size(), hvd.rank()
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
                  torch.int16, torch.int32, torch.int64, torch.uint8):
        t = torch.full((5,), r + 1, dtype=dtype)
        got = hvd.allreduce(t, op=hvd.Sum)
        assert got.dtype == dtype and torch.equal(got, torch.full((5,), n * (n + 1) // 2,
                                                                  dtype=dtype)), (dtype, got)
        assert torch.equal(t, torch.full((5,), r + 1, dtype=dtype))
    b = hvd.allreduce(torch.tensor([r == 0, False]), op=hvd.Sum)
    assert b.dtype == torch.bool and b.tolist() == [True, False]
    base = torch.arange(10, dtype=torch.float32)
    view = base[3:7]
    hvd.allreduce_(view, op=hvd.Sum)
    assert base[:3].tolist() == [0.0, 1.0, 2.0] and base[7:].tolist() == [7.0, 8.0, 9.0]
    assert view.tolist() == [3.0 * n, 4.0 * n, 5.0 * n, 6.0 * n]
    out = torch.zeros(2, 3)
    src = torch.full((2, 3), float(r))
    assert hvd.synchronize(T._allreduce_into(src, out, "pointer.out", hvd.Sum, 1.0, 1.0,
                                             hvd.global_process_set)) is out
    assert torch.equal(out, torch.full((2, 3), float(n * (n - 1) // 2)))
    assert torch.equal(src, torch.full((2, 3), float(r)))
    h = hvd.allreduce_async(torch.full((1 << 16,), 2.0), name="pointer.alone", op=hvd.Sum)
    gc.collect()
    garbage = [torch.full((1 << 16,), -1.0) for _ in range(8)]  # would reuse freed memory
    assert torch.equal(hvd.synchronize(h), torch.full((1 << 16,), 2.0 * n))
    del garbage
    empty = hvd.allreduce(torch.ones(0, 3), op=hvd.Sum)
    assert empty.shape == (0, 3)
    # grouped: new outputs, in place, and one dtype only (the engine's rule, said the same way)
    group = [torch.full((2, 3), float(r)), torch.full((7,), 1.0), torch.full((), 2.0)]
    outs = hvd.grouped_allreduce(group, op=hvd.Sum)
    assert [o.shape for o in outs] == [(2, 3), (7,), ()]
    assert torch.equal(outs[0], torch.full((2, 3), float(n * (n - 1) // 2)))
    assert torch.equal(outs[1], torch.full((7,), float(n))) and outs[2].item() == 2.0 * n
    assert group[0][0, 0].item() == float(r)
    hvd.grouped_allreduce_(group, op=hvd.Sum)
    assert torch.equal(group[1], torch.full((7,), float(n)))
    try:
        hvd.grouped_allreduce([torch.ones(2), torch.ones(2, dtype=torch.float64)])
        raise AssertionError("grouped_allreduce of two dtypes did not fail")
    except ValueError as e:
        assert "one dtype" in str(e), e


def test_autograd():
    n, r = hvd.size(), hvd.rank()
    x = torch.full((3,), float(r + 1), requires_grad=True)
    hvd.allreduce(x, op=hvd.Sum).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), float(n)))
    x.grad = None
    (hvd.allreduce(x) * 2).sum().backward()  # average: mean of the output gradients
    assert torch.allclose(x.grad, torch.full((3,), 2.0))
    g = torch.ones(r + 1, 2, requires_grad=True)
    out = hvd.allgather(g)
    assert out.shape == (n * (n + 1) // 2, 2)
    (out * torch.arange(out.shape[0]).unsqueeze(1)).sum().backward()
    # Horovod averages the output gradients of allgather and broadcast.
    offset = r * (r + 1) // 2
    expected = torch.arange(offset, offset + r + 1, dtype=torch.float32).unsqueeze(1)
    assert torch.equal(g.grad, expected.expand(r + 1, 2)), g.grad
    b = torch.ones(2, requires_grad=True)
    hvd.broadcast(b, 0).sum().backward()
    assert torch.equal(b.grad, torch.full((2,), 1.0 if r == 0 else 0.0))


def test_grouped():
    n = hvd.size()
    a, b = torch.ones(3), torch.full((2, 2), 2.0)
    out = hvd.grouped_allreduce([a, b], op=hvd.Sum)
    assert torch.equal(out[0], torch.full((3,), float(n))) and torch.equal(out[1], b * n)
    hvd.grouped_allreduce_([a, b], op=hvd.Sum)
    assert torch.equal(a, torch.full((3,), float(n)))
    h = hvd.grouped_allreduce_async([torch.ones(1), torch.ones(2)], op=hvd.Average)
    assert all(torch.equal(o, torch.ones_like(o)) for o in hvd.synchronize(h))


def test_allgather_and_broadcast():
    n, r = hvd.size(), hvd.rank()
    g = hvd.allgather(torch.full((r + 1, 3), float(r)))
    assert g.shape == (n * (n + 1) // 2, 3) and g[-1, 0] == n - 1
    gb = hvd.allgather(torch.ones(2, dtype=torch.bfloat16))
    assert gb.dtype == torch.bfloat16 and gb.shape == (2 * n,)
    b = torch.full((2,), float(r))
    assert torch.equal(hvd.broadcast(b, 0), torch.zeros(2)) and b[0] == r
    hvd.broadcast_(b, n - 1)
    assert torch.equal(b, torch.full((2,), float(n - 1)))


def test_parameters_optimizer_state_objects():
    torch.manual_seed(hvd.rank())
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * (hvd.rank() + 1), momentum=0.9)
    model(torch.ones(1, 4)).sum().backward()
    opt.step()
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    weights = hvd.allgather_object([p.detach().clone() for p in model.parameters()])
    for w in weights:
        assert all(torch.equal(a, b) for a, b in zip(w, weights[0]))
    assert opt.param_groups[0]["lr"] == 0.1
    momenta = hvd.allgather_object(opt.state_dict()["state"][0]["momentum_buffer"])
    assert all(torch.equal(m, momenta[0]) for m in momenta)
    hvd.broadcast_parameters(list(model.named_parameters()), root_rank=0)
    assert hvd.broadcast_object("x" * hvd.rank(), root_rank=hvd.size() - 1) == "x" * (hvd.size() - 1)


def _train(optimizer_factory, steps=3):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    opt = optimizer_factory(model)
    for step in range(steps):
        x = torch.full((2, 3), float(hvd.rank() + step))
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()
    return model


def test_distributed_optimizer_averages_gradients():
    n = hvd.size()
    # Reference: gradient of the mean over all ranks' batches, computed locally.
    torch.manual_seed(0)
    ref = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(3):
        ref_opt.zero_grad()
        loss = sum(ref(torch.full((2, 3), float(r + step))).sum() for r in range(n)) / n
        loss.backward()
        ref_opt.step()
    for kwargs in ({}, {"compression": hvd.Compression.fp16},
                   {"gradient_predivide_factor": 2.0}):
        model = _train(lambda m: hvd.DistributedOptimizer(
            torch.optim.SGD(m.parameters(), lr=0.1), named_parameters=m.named_parameters(),
            **kwargs))
        tol = 1e-2 if kwargs.get("compression") else 1e-5
        for a, b in zip(model.parameters(), ref.parameters()):
            assert torch.allclose(a, b, atol=tol), (kwargs, a, b)


def test_distributed_optimizer_sum_and_passes():
    n = hvd.size()
    model = torch.nn.Linear(2, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(), op=hvd.Sum,
                                   backward_passes_per_step=2)
    for _ in range(2):  # two local passes, one allreduce
        model(torch.ones(1, 2)).sum().backward()
    opt.step()
    assert torch.equal(model.weight.detach(), torch.full((1, 2), -2.0 * n))
    opt.zero_grad()
    # synchronize + skip_synchronize (clipping)
    model(torch.ones(1, 2)).sum().backward()
    model(torch.ones(1, 2)).sum().backward()
    opt.synchronize()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9)
    with opt.skip_synchronize():
        opt.step()
    assert torch.equal(model.weight.detach(), torch.full((1, 2), -4.0 * n))


def test_distributed_optimizer_keeps_the_wrapped_state():
    model = torch.nn.Linear(2, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(1, 2)).sum().backward()
    opt.step()
    momentum = opt.state[model.weight]["momentum_buffer"].clone()
    dist = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    assert isinstance(dist, torch.optim.SGD)
    assert torch.equal(dist.state[model.weight]["momentum_buffer"], momentum)


def test_distributed_optimizer_errors():
    model = torch.nn.Linear(2, 1)
    check.raises(ValueError, hvd.DistributedOptimizer, torch.optim.SGD(model.parameters(), lr=1),
                 named_parameters=[("w", model.weight)], match="misses")
    check.raises(ValueError, hvd.DistributedOptimizer, torch.optim.SGD(model.parameters(), lr=1),
                 op=hvd.Max, match="op=Average, Sum or Adasum")
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1),
                                   named_parameters=model.named_parameters())
    model(torch.ones(1, 2)).sum().backward()
    check.raises(AssertionError, model(torch.ones(1, 2)).sum().backward,
                 match="backward_passes_per_step")
    opt.synchronize()
    check.raises(ValueError, hvd.DistributedOptimizer, torch.optim.SGD(model.parameters(), lr=1),
                 named_parameters=[("w", model.weight), ("w", model.bias)], match="unique")


def test_engine_errors_are_exceptions():
    check.raises(hvd.RisemlError, hvd.broadcast, torch.ones(1), -1, match="root rank")
    check.raises(TypeError, hvd.allreduce, torch.ones(2, dtype=torch.complex64))
    if hvd.size() > 1:
        x = torch.ones(2 if hvd.rank() == 0 else 3)
        check.raises(hvd.RisemlError, hvd.allreduce, x, name="torch.bad",
                     match="mismatched shapes for allreduce 'torch.bad'")


def test_join_and_barrier():
    hvd.barrier()
    if hvd.rank() == 0:
        assert hvd.join() == (hvd.size() - 1 if hvd.size() > 1 else 0)
    else:
        x = hvd.allreduce(torch.ones(2), op=hvd.Sum)  # rank 0 contributes zeros
        assert torch.equal(x, torch.full((2,), float(hvd.size() - 1)))
        import time
        time.sleep(0.05 * hvd.rank())
        assert hvd.join() == hvd.size() - 1


def test_cuda_tensors():
    """CUDA tensors stay on the GPU (NCCL) when this build and process can use one; otherwise
    they go through host memory with one warning naming the reason."""
    built, usable, status = hvd.gpu_status()
    assert isinstance(built, bool) and isinstance(usable, bool) and status
    import riseml.torch as rt
    if not (built and usable and torch.cuda.is_available()):
        print("cuda tensors: the GPU path is not exercised here:", status,
              "; torch.cuda.is_available() =", torch.cuda.is_available())
        stand_in = type("T", (), {"device": torch.device("cuda", 0)})()
        import warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rt._warned_host_copy = False
            assert rt._on_gpu(stand_in) is False
            assert rt._on_gpu(stand_in) is False  # warned once only
        assert len(caught) == 1 and status in str(caught[0].message), caught
        assert rt._on_gpu(torch.ones(1)) is False
        return
    if torch.cuda.device_count() < hvd.local_size() and \
            os.environ.get("RISEML_GPU_ALGORITHM") != "hierarchical":
        print("cuda tensors: skipped: %d ranks on this host share %d GPU(s) (NCCL needs one "
              "each; RISEML_GPU_ALGORITHM=hierarchical with one rank per host works)"
              % (hvd.local_size(), torch.cuda.device_count()))
        return
    n, r = hvd.size(), hvd.rank()
    dev = torch.device("cuda", hvd.local_rank() % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    t = torch.full((1000, 3), float(r + 1), device=dev)
    out = hvd.allreduce(t, op=hvd.Sum)
    assert out.device == dev and torch.equal(out, torch.full_like(t, n * (n + 1) / 2))
    ptr = t.data_ptr()
    hvd.allreduce_(t, op=hvd.Average)
    assert t.data_ptr() == ptr and torch.allclose(t, torch.full_like(t, (n + 1) / 2))
    a, b = torch.ones(7, device=dev), torch.ones(3, 3, device=dev, dtype=torch.float16)
    hvd.grouped_allreduce_([a, torch.ones(5, device=dev)], op=hvd.Sum)
    assert torch.equal(a, torch.full((7,), float(n), device=dev))
    assert torch.equal(hvd.allreduce(b, op=hvd.Sum), torch.full_like(b, float(n)))
    x = torch.ones(4, device=dev)
    hvd.synchronize(hvd.allreduce_async_(x, op=hvd.Sum, prescale_factor=0.5,
                                         postscale_factor=4.0))
    assert torch.equal(x, torch.full((4,), 2.0 * n, device=dev))
    g = hvd.allgather(torch.full((r + 1, 2), float(r), device=dev))
    assert g.device == dev and g.shape == (n * (n + 1) // 2, 2) and g[-1, 0] == n - 1
    c = torch.full((3,), float(r), device=dev)
    hvd.broadcast_(c, n - 1)
    assert torch.equal(c, torch.full((3,), float(n - 1), device=dev))
    # DistributedOptimizer on a CUDA model: the same weights everywhere after a step.
    torch.manual_seed(r)
    model = torch.nn.Linear(4, 2).to(dev)
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    model(torch.full((2, 4), float(r), device=dev)).sum().backward()
    opt.step()
    weights = hvd.allgather_object([p.detach().cpu() for p in model.parameters()])
    assert all(torch.equal(w[0], weights[0][0]) for w in weights)
    print("cuda tensors: checked on", dev, "with", n, "ranks")


if __name__ == "__main__":
    check.run(globals(), hvd.init, hvd.rank)
