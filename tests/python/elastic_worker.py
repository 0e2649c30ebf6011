"""A training loop under hvd.elastic (riseml-launch --elastic): at step 12 the last rank is
killed (`kill`) or stopped (`stop`, alive but silent); the survivors restore the commit of
step 10, re-form the world without it and train to step 20. Every survivor checks that it ends
in the smaller world with the weights the committed state implies (the same on every rank),
and prints how long the fault cost: from the fault to the first step completed after it.

    riseml-launch --elastic -n 3 python3 elastic_worker.py kill|stop FAULT_TIME_FILE [FINAL_SIZE]

FINAL_SIZE (default: one less than at the start): under riseml-elastic the victim's whole host
leaves (its other workers too), as in Horovod.
"""
import os
import signal
import sys
import time

import torch

import riseml.torch as hvd

fault, fault_file = sys.argv[1], sys.argv[2]
hvd.init()
start_size = hvd.size()
final_size = int(sys.argv[3]) if len(sys.argv) > 3 else start_size - 1
victim = start_size - 1
model = torch.nn.Linear(4, 1, bias=False)
torch.nn.init.constant_(model.weight, float(hvd.rank()))  # rank 0's wins at the first sync
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
state = hvd.elastic.TorchState(model, optimizer, step=0)
resets = []
state.register_reset_callbacks([lambda: resets.append(hvd.size())])
recovered = []


@hvd.elastic.run
def train(state):
    while state.step < 20:
        x = torch.ones(2, 4) * (state.step + 1)
        optimizer.zero_grad()
        model(x).sum().backward()
        for p in model.parameters():
            p.grad = hvd.allreduce(p.grad, name="grad")  # the average of equal gradients
        optimizer.step()
        state.step += 1
        if resets and not recovered:
            recovered.append(time.time())
        if state.step % 5 == 0:
            state.commit()
        if state.step == 12 and hvd.rank() == victim and hvd.size() == start_size:
            with open(fault_file, "w") as f:
                f.write(repr(time.time()))
            os.kill(os.getpid(), signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
    return state.step


steps = train(state)
weights = hvd.allgather(model.weight.detach().reshape(1, -1))
# w = -lr * sum over steps s of the gradient 2 (s + 1) per element, steps 1..20 once each
# (the ones after the commit of step 10 were undone and trained again).
expected = -0.1 * sum(2 * (s + 1) for s in range(20))
problems = []
if hvd.size() != final_size:
    problems.append("size %d, want %d" % (hvd.size(), final_size))
if resets != [final_size]:
    problems.append("reset callbacks saw sizes %s" % resets)
if steps != 20:
    problems.append("%d steps" % steps)
if not torch.all(weights == weights[0]):
    problems.append("the ranks' weights differ: %s" % weights)
if abs(model.weight.view(-1)[0].item() - expected) > 1e-3:
    problems.append("weight %r, want %r" % (model.weight.view(-1)[0].item(), expected))
with open(fault_file) as f:
    fault_at = float(f.read())
print("rank %d of %d: %d steps, weight %.4f, from the %s to the first step after it: %.2f s%s"
      % (hvd.rank(), hvd.size(), steps, model.weight.view(-1)[0].item(), fault,
         recovered[0] - fault_at, "; FAIL: " + "; ".join(problems) if problems else ""),
      flush=True)
sys.exit(1 if problems else 0)
