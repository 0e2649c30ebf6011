"""FSDP2 (torch 2.x's fully_shard) on CPU over a backend: three SGD steps of a small sharded MLP,
each rank on its slice of the batch, end at the parameters of the same model trained in one
process on the whole batch.

    riseml-launch -n N python fsdp2_check.py [riseml|gloo]
"""
import copy
import sys

import torch
import torch.distributed as dist

import riseml.torch.distributed  # noqa: F401  registers "riseml"

try:
    from torch.distributed.fsdp import fully_shard
except ImportError:
    print("skipped: torch %s has no fully_shard (FSDP2 is torch >= 2.6)" % torch.__version__)
    sys.exit(0)

backend = sys.argv[1] if len(sys.argv) > 1 else "riseml"
dist.init_process_group(backend)
rank, size = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 5))
reference = copy.deepcopy(model)
for layer in model:
    if isinstance(layer, torch.nn.Linear):
        fully_shard(layer)
fully_shard(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
for step in range(3):
    torch.manual_seed(100 + step)
    x = torch.randn(size * 4, 16)
    model(x[rank * 4:(rank + 1) * 4]).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
    reference(x).pow(2).mean().backward()
    ref_opt.step()
    ref_opt.zero_grad()
full = {k: v.full_tensor() for k, v in model.state_dict().items()}
worst = max((full[k] - v).abs().max().item() for k, v in reference.state_dict().items())
dist.destroy_process_group()
if worst > 1e-5:
    print("rank %d: FSDP2 over %s drifts from one process by %g" % (rank, backend, worst))
    sys.exit(1)
print("rank %d: FSDP2 over %s matches one process (max difference %g)" % (rank, backend, worst))
