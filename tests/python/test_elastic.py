"""hvd.elastic under riseml-launch: TorchState commit/restore/sync (model, optimizer, sampler,
plain attributes), host updates raised on every rank at the same commit, the run wrapper's
restore-reset-sync loop and reset callbacks, and ElasticSampler's partitions (every sample once
per epoch, and after a partial epoch the rest once, among the ranks there are)."""
import copy

import check  # noqa: E402  (tests/python)

import torch  # noqa: E402

import riseml.torch as hvd  # noqa: E402
from riseml.elastic import HostUpdateResult, notify_hosts_updated  # noqa: E402


def rank_valued_model():
    model = torch.nn.Linear(3, 2)
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float(hvd.rank() + 1))
    return model


def test_sync_takes_rank_0s_state():
    model = rank_valued_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, optimizer, epoch=hvd.rank() + 5, note=["r", hvd.rank()])
    state.sync()
    for p in model.parameters():
        assert torch.all(p == 1.0), p
    assert state.epoch == 5 and state.note == ["r", 0], (state.epoch, state.note)


def test_restore_goes_back_to_the_last_commit():
    model = rank_valued_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    state = hvd.elastic.TorchState(model, optimizer, batch=0)
    committed = copy.deepcopy(model.state_dict())
    # A step: parameters and the optimizer's momentum change, then are undone.
    model(torch.ones(4, 3)).sum().backward()
    optimizer.step()
    state.batch = 7
    assert not torch.equal(model.weight, committed["weight"])
    state.restore()
    assert torch.equal(model.weight, committed["weight"]) and state.batch == 0
    assert optimizer.state_dict()["state"] == {}, "the momentum taken after the commit is kept"
    # Commit, change, restore: back to the commit.
    optimizer.step()
    state.batch = 8
    state.commit()
    after_commit = copy.deepcopy(model.state_dict())
    with torch.no_grad():
        model.weight.add_(1)
    state.batch = 9
    state.restore()
    assert torch.equal(model.weight, after_commit["weight"]) and state.batch == 8


def test_assigning_a_new_model_commits_it():
    state = hvd.elastic.TorchState(rank_valued_model(), None)
    replacement = torch.nn.Linear(3, 2)
    state.model = replacement
    with torch.no_grad():
        replacement.bias.zero_()
    state.restore()
    assert state.model is replacement and not torch.all(replacement.bias == 0)


def interrupt_of(commit):
    try:
        commit()
    except hvd.HostsUpdatedInterrupt as e:
        return e
    raise AssertionError("no HostsUpdatedInterrupt")


def test_a_host_update_seen_by_one_rank_interrupts_every_rank_at_the_same_commit():
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank,
                                    allgather_object=hvd.allgather_object, step=0)
    state.commit()  # nothing yet
    if hvd.rank() == hvd.size() - 1:
        state.on_hosts_updated(100, HostUpdateResult.removed)
    message = check.raises(hvd.HostsUpdatedInterrupt, state.commit)
    assert message == "hosts updated"
    state.commit()  # seen: no second interrupt
    # Removed only: skip the sync; added: not.
    state.on_hosts_updated(101, HostUpdateResult.added)
    assert interrupt_of(state.commit).skip_sync is False
    if hvd.rank() == 0:
        state.on_hosts_updated(102, HostUpdateResult.removed)
    assert interrupt_of(state.commit).skip_sync is True


def test_run_restores_resets_syncs_and_calls_the_reset_callbacks():
    model = rank_valued_model()
    state = hvd.elastic.TorchState(model, None, batch=0, attempts=0)
    resets = []
    state.register_reset_callbacks([lambda: resets.append(hvd.size())])
    seen = []

    @hvd.elastic.run
    def train(state, batches):
        state.attempts += 1  # committed with batch 3, so the second attempt counts 2
        seen.append((state.batch, state.attempts))
        while state.batch < batches:
            state.batch += 1
            with torch.no_grad():
                model.weight.add_(1)
            if state.batch == 3:
                state.commit()
            if state.batch == 5 and len(seen) == 1:
                raise hvd.HorovodInternalError("a peer failed (simulated)")
        return state.batch

    assert train(state, 6) == 6
    assert seen == [(0, 1), (3, 2)], seen
    assert resets == [hvd.size()], resets
    # Weight: rank 0's after sync (1), + 3 to the commit, restored, + 3 more.
    assert torch.all(model.weight == 7.0), model.weight


def test_run_goes_on_after_a_host_update_without_restoring():
    state = hvd.elastic.ObjectState(hvd.broadcast_object, hvd.rank,
                                    allgather_object=hvd.allgather_object, batch=0)
    calls = []

    @hvd.elastic.run
    def train(state):
        calls.append(state.batch)
        while state.batch < 4:
            state.batch += 1
            if state.batch == 2 and len(calls) == 1:
                notify_hosts_updated(200, HostUpdateResult.added)
            state.commit()
        return "done"

    assert train(state) == "done"
    assert calls == [0, 2], calls


def epoch_indices(sampler):
    return hvd.allgather_object(list(iter(sampler)))


def test_sampler_partitions_every_sample_once_per_epoch():
    dataset = list(range(10 * hvd.size() + 3))
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=4)
    for epoch in range(2):
        sampler.set_epoch(epoch)
        parts = epoch_indices(sampler)
        assert len({len(p) for p in parts}) == 1, "every rank the same number"
        flat = [i for p in parts for i in p]
        assert set(flat) == set(dataset), "every sample"
        padding = len(flat) - len(dataset)
        assert 0 <= padding < hvd.size()


def test_sampler_after_a_partial_epoch_covers_the_rest_once():
    dataset = list(range(12 * hvd.size()))
    sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True)
    state = hvd.elastic.TorchState(sampler=sampler)
    state.sync()
    mine = list(iter(sampler))
    batch = 2
    done = mine[:2 * batch]
    sampler.record_batch(0, batch)
    sampler.record_batch(1, batch)
    state.commit()
    sampler.record_batch(2, batch)  # lost: not committed
    state.restore()
    assert sampler.processed_num == 2 * batch
    state.sync()
    assert sampler.processed_num == 2 * batch * hvd.size()
    processed = {i for p in hvd.allgather_object(done) for i in p}
    rest = [i for p in epoch_indices(sampler) for i in p]
    assert processed.isdisjoint(rest), "a processed sample comes again"
    assert processed | set(rest) == set(dataset), "a sample is lost"


check.run(globals(), hvd.init, hvd.rank)
