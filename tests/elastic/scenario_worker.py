"""A worker for the elastic scenarios (elastic_scenarios.py): trains a small model under
hvd.elastic.run for some epochs, and rank 0 appends one JSON line per epoch to the log file: the
epoch, the world's size, its own start rank (HOROVOD_RANK) and host (HOROVOD_HOSTNAME), and how
many times training (re)started (`rendezvous`, kept in the elastic state).

When the scenario's host list changes after an epoch, rank 0 waits for the driver's host message
before it commits, so that the change lands at that commit. `--exit` makes some start ranks fail
at an (epoch, batch): with an exception, or killed by SIGKILL.
"""
import argparse
import json
import os
import signal
import time

import torch

import riseml.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument('--log', required=True)
parser.add_argument('--epochs', type=int, default=3)
parser.add_argument('--batches', type=int, default=5)
parser.add_argument('--epoch-wait', type=float, default=0.0)
parser.add_argument('--hosts-by-epoch', default='{}',
                    help='JSON {epoch: host list} of the scenario; "default": the list after')
parser.add_argument('--exit', default='{}', help='JSON {"epoch,batch": [start ranks]}')
parser.add_argument('--exit-mode', default='exception', choices=['exception', 'kill'])
args = parser.parse_args()

hvd.init()
start_rank = int(os.environ['HOROVOD_RANK'])
host = os.environ['HOROVOD_HOSTNAME']
hosts_by_epoch = json.loads(args.hosts_by_epoch)
exits = json.loads(args.exit)

model = torch.nn.Linear(2, 2)
optimizer = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size()),
                                     named_parameters=model.named_parameters())
data, target = torch.randn(16, 2), torch.randint(0, 2, (16,))


def hosts_at(epoch):
    return hosts_by_epoch.get(str(epoch), hosts_by_epoch.get('default'))


@hvd.elastic.run
def train(state):
    state.rendezvous += 1
    while state.epoch < args.epochs:
        while state.batch < args.batches:
            if start_rank in exits.get('%d,%d' % (state.epoch, state.batch), []):
                if args.exit_mode == 'kill':
                    os.kill(os.getpid(), signal.SIGKILL)
                raise RuntimeError('start rank %d fails at epoch %d batch %d as scheduled'
                                   % (start_rank, state.epoch, state.batch))
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(data), target).backward()
            optimizer.step()
            state.batch += 1
            state.commit()
        if hvd.rank() == 0:
            with open(args.log, 'a') as f:
                f.write(json.dumps({'epoch': state.epoch, 'size': hvd.size(), 'rank': hvd.rank(),
                                    'start_rank': start_rank, 'host': host,
                                    'rendezvous': state.rendezvous}) + '\n')
            if hosts_at(state.epoch) != hosts_at(state.epoch + 1):
                state._last_updated_timestamp = 0
                deadline = time.time() + 20
                while state._host_messages.empty():
                    if time.time() > deadline:
                        raise TimeoutError('no host message from riseml-elastic within 20 s')
                    time.sleep(0.05)
        time.sleep(args.epoch_wait)
        state.epoch += 1
        state.batch = 0
        state.commit()


def rescale():
    for group in optimizer.param_groups:
        group['lr'] = 0.01 * hvd.size()


state = hvd.elastic.TorchState(model, optimizer, epoch=0, batch=0, rendezvous=0)
state.register_reset_callbacks([rescale])
train(state)
