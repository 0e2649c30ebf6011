"""riseml.torch on a real CUDA device (run under riseml-launch by tests/gpu/run.sh device):

1. correctness on CUDA tensors of every dtype riseml.torch takes (allreduce sum and average,
   allgather, broadcast; one line per dtype, a failure does not hide the others), 50 fused async
   allreduces, fp16 compression;
2. the time of one small hvd.allreduce_ on a CUDA tensor, 4 B to 16 MiB, beside a device copy
   of the same bytes;
3. a ResNet-50 training step (batch 64, fp32, channels_last): the plain optimizer, with
   hvd.DistributedOptimizer, and with torch's DistributedDataParallel over NCCL (one rank),
   with the ratios. torchvision's model when it is installed, else the same network built here.

Prints one `torch_gpu_check:` line per number; exit 1 when a correctness check failed.
Environment: SKIP_DDP=1 leaves DDP out; RESNET_STEPS (default 20) timed steps each.
"""
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import riseml.torch as hvd

hvd.init()
n = hvd.size()
dev = torch.device("cuda", hvd.local_rank() % max(1, torch.cuda.device_count()))
torch.cuda.set_device(dev)
print(f"torch_gpu_check: torch {torch.__version__} cuda {torch.version.cuda} "
      f"{torch.cuda.get_device_name(dev)}, rank {hvd.rank()} of {n}, riseml gpu_status "
      f"{hvd.gpu_status() if hasattr(hvd, 'gpu_status') else '?'}", flush=True)
failures = []


def check(what, fn):
    try:
        fn()
        print(f"torch_gpu_check: ok   {what}", flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported, the rest still run
        failures.append(what)
        print(f"torch_gpu_check: FAIL {what}: {type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}",
              flush=True)


DTYPES = [torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.uint8, torch.int8,
          torch.int16, torch.int32, torch.int64, torch.bool]


def dtype_checks(dt):
    def run():
        name = str(dt).replace("torch.", "")
        if dt == torch.bool:
            t = torch.tensor([True, False, True] * 333 + [False], device=dev)
            r = hvd.allreduce(t, op=hvd.Sum, name=f"sum.{name}")
            assert r.dtype == dt and r.device == dev and torch.equal(r, t), "sum (logical or)"
        else:
            t = torch.ones(1001, dtype=dt, device=dev)
            r = hvd.allreduce(t, op=hvd.Sum, name=f"sum.{name}")
            assert r.dtype == dt and r.device == dev, (r.dtype, r.device)
            assert torch.equal(r, t * n), "sum"
            a = hvd.allreduce(torch.full((7,), 3, dtype=dt, device=dev), op=hvd.Average, name=f"avg.{name}")
            assert torch.equal(a, torch.full((7,), 3, dtype=dt, device=dev)), f"average {a}"
            i = torch.full((5,), 2, dtype=dt, device=dev)
            hvd.allreduce_(i, op=hvd.Sum, name=f"inplace.{name}")
            assert torch.equal(i, torch.full((5,), 2 * n, dtype=dt, device=dev)), "in place"
        g = hvd.allgather(torch.ones(3, 2, device=dev).to(dt), name=f"gather.{name}")
        assert g.shape == (3 * n, 2) and g.dtype == dt and g.device == dev, "allgather"
        b = torch.ones(9, device=dev).to(dt)
        hvd.broadcast_(b, root_rank=0, name=f"bcast.{name}")
        assert torch.equal(b, torch.ones(9, device=dev).to(dt)), "broadcast"
    return run


for dt in DTYPES:
    check(f"{str(dt).replace('torch.', '')} on {dev}: allreduce sum/average/in place, allgather, broadcast",
          dtype_checks(dt))


def fused():
    h = [hvd.allreduce_async(torch.full((100 + i,), float(i), device=dev), op=hvd.Sum, name=f"f{i}")
         for i in range(50)]
    for i, hh in enumerate(h):
        assert torch.equal(hvd.synchronize(hh), torch.full((100 + i,), float(i) * n, device=dev)), i


def compressed():
    c = hvd.allreduce(torch.full((33,), 1.5, device=dev), compression=hvd.Compression.fp16, op=hvd.Sum)
    assert c.dtype == torch.float32 and torch.equal(c, torch.full((33,), 1.5 * n, device=dev))


def grouped_allgather():
    # rank q gives q + 1 rows of the first, q rows (none on rank 0) of the second: one NCCL
    # allgather, each output that tensor's rows in rank order, on the inputs' device
    r = hvd.rank()
    got = hvd.grouped_allgather([torch.full((r + 1, 2), float(r), device=dev),
                                 torch.full((r, 3), float(10 + r), device=dev)])
    want = [torch.cat([torch.full((q + 1, 2), float(q)) for q in range(n)]),
            torch.cat([torch.full((q, 3), float(10 + q)) for q in range(n)])]
    for g, w in zip(got, want):
        assert g.device == dev and torch.equal(g.cpu(), w), (g, w)


check("50 async allreduces (fused)", fused)
check("fp16 compression", compressed)
check("grouped allgather on the GPU", grouped_allgather)
print(f"torch_gpu_check: correctness: {len(DTYPES) + 3 - len(failures)} of {len(DTYPES) + 3} ok"
      + (f"; FAILED: {', '.join(failures)}" if failures else ""), flush=True)


def per_call(fn, reps):
    torch.cuda.synchronize()
    s = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - s) / reps


try:
    for nbytes in (4, 64, 1 << 10, 16 << 10, 256 << 10, 1 << 20, 16 << 20):
        t = torch.ones(nbytes // 4, device=dev)
        out = torch.empty_like(t)
        for _ in range(5):
            hvd.allreduce_(t, op=hvd.Average, name="small")
        reps = 50 if nbytes <= (1 << 20) else 20
        ar = per_call(lambda: hvd.allreduce_(t, op=hvd.Average, name="small"), reps)
        cp = per_call(lambda: out.copy_(t), reps)
        print(f"torch_gpu_check: allreduce_ {nbytes} B on the GPU: {ar * 1e6:.1f} us per call; "
              f"device copy {cp * 1e6:.1f} us", flush=True)
except Exception as e:  # noqa: BLE001
    failures.append("small-call timing")
    print(f"torch_gpu_check: FAIL small-call timing: {type(e).__name__}: {e}", flush=True)


# ResNet-50 (torchvision's, or the same layers built here when torchvision is missing).
class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        idt = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + idt)


class ResNet50(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._layer(64, 3)
        self.layer2 = self._layer(128, 4, 2)
        self.layer3 = self._layer(256, 6, 2)
        self.layer4 = self._layer(512, 3, 2)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(2048, num_classes)

    def _layer(self, planes, blocks, stride=1):
        down = None
        if stride != 1 or self.inplanes != planes * 4:
            down = nn.Sequential(nn.Conv2d(self.inplanes, planes * 4, 1, stride=stride, bias=False),
                                 nn.BatchNorm2d(planes * 4))
        layers = [Bottleneck(self.inplanes, planes, stride, down)]
        self.inplanes = planes * 4
        layers += [Bottleneck(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet50():
    try:
        import torchvision
        return torchvision.models.resnet50(), f"torchvision {torchvision.__version__}"
    except ImportError:
        return ResNet50(), "built here (no torchvision)"


steps = int(os.environ.get("RESNET_STEPS", "20"))
torch.manual_seed(0)
model, source = resnet50()
model = model.to(dev).to(memory_format=torch.channels_last)
data = torch.randn(64, 3, 224, 224, device=dev).to(memory_format=torch.channels_last)
target = torch.randint(0, 1000, (64,), device=dev)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)


def step(o, m):
    o.zero_grad()
    loss = F.cross_entropy(m(data), target)
    loss.backward()
    o.step()
    return loss


def timed(o, m):
    for _ in range(5):
        step(o, m)
    ts = []
    for _ in range(steps):
        torch.cuda.synchronize()
        s = time.perf_counter()
        step(o, m)
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - s)
    return statistics.median(ts), min(ts), max(ts)


def ms(t):
    return f"{t[0] * 1e3:.2f} ms (min {t[1] * 1e3:.2f}, max {t[2] * 1e3:.2f})"


print(f"torch_gpu_check: resnet50 ({source}) batch 64 fp32 channels_last, median of {steps} steps",
      flush=True)
plain = timed(opt, model)
print(f"torch_gpu_check: resnet50 plain step {ms(plain)}", flush=True)
dopt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
ours = timed(dopt, model)
l0 = step(dopt, model).item()
for _ in range(10):
    last = step(dopt, model).item()
print(f"torch_gpu_check: resnet50 hvd.DistributedOptimizer step {ms(ours)}; plain/ours "
      f"{plain[0] / ours[0]:.3f}; loss {l0:.3f} -> {last:.3f}", flush=True)


def breakdown(o, m):
    """Where a step of ours spends its CPU time: up to the end of backward(), in synchronize()
    (waiting for the last gradients to be queued), the optimizer; and the whole step."""
    parts = {"backward": [], "synchronize": [], "step": [], "total": []}
    for _ in range(steps):
        torch.cuda.synchronize()
        s = time.perf_counter()
        o.zero_grad()
        F.cross_entropy(m(data), target).backward()
        b = time.perf_counter()
        o.synchronize()
        y = time.perf_counter()
        with o.skip_synchronize():
            o.step()
        e = time.perf_counter()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for k, v in (("backward", b - s), ("synchronize", y - b), ("step", e - y), ("total", t - s)):
            parts[k].append(v)
    return ", ".join(f"{k} {statistics.median(v) * 1e3:.2f} ms" for k, v in parts.items())


print(f"torch_gpu_check: resnet50 ours, CPU time per part (median): {breakdown(dopt, model)}",
      flush=True)
# The same with a 0.1 ms cycle (RISEML_CYCLE_TIME_MS, read at init): a fresh model and engine.
hvd.shutdown()
os.environ["RISEML_CYCLE_TIME_MS"] = "0.1"
hvd.init()
torch.manual_seed(0)
m3, _ = resnet50()
m3 = m3.to(dev).to(memory_format=torch.channels_last)
o3 = hvd.DistributedOptimizer(torch.optim.SGD(m3.parameters(), lr=0.01, momentum=0.9),
                              named_parameters=m3.named_parameters())
fast = timed(o3, m3)
print(f"torch_gpu_check: resnet50 hvd.DistributedOptimizer, cycle 0.1 ms: step {ms(fast)}; "
      f"plain/ours {plain[0] / fast[0]:.3f}", flush=True)
del os.environ["RISEML_CYCLE_TIME_MS"]
if n == 1 and os.environ.get("SKIP_DDP") != "1":
    try:
        import torch.distributed as dist
        port = 29500 + os.getpid() % 1000
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}", world_size=1, rank=0)
        torch.manual_seed(0)
        m2, _ = resnet50()
        m2 = m2.to(dev).to(memory_format=torch.channels_last)
        ddp = torch.nn.parallel.DistributedDataParallel(m2, device_ids=[dev.index])
        o2 = torch.optim.SGD(ddp.parameters(), lr=0.01, momentum=0.9)
        dt = timed(o2, ddp)
        print(f"torch_gpu_check: resnet50 torch DDP over NCCL step {ms(dt)}; plain/ddp "
              f"{plain[0] / dt[0]:.3f}; ddp/ours {dt[0] / ours[0]:.3f}", flush=True)
        dist.destroy_process_group()
    except Exception as e:  # noqa: BLE001
        print(f"torch_gpu_check: DDP not measured: {type(e).__name__}: {e}", flush=True)
hvd.shutdown()
print(f"torch_gpu_check: done, {len(failures)} failure(s)" + (f": {', '.join(failures)}" if failures else ""),
      flush=True)
sys.exit(1 if failures else 0)
