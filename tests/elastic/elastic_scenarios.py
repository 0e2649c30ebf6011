"""Elastic scenarios on one machine, the way Horovod's elastic integration tests run theirs, with
riseml-elastic --launcher local and scenario_worker.py: hosts added and removed by a discovery
script, one rank failing (its host leaves), a fixed host list, every rank failing, every host
blacklisted, too few workers for too long, the reset limit, a blacklisted host's cooldown.

    python3 elastic_scenarios.py RISEML_ELASTIC [unittest arguments, e.g. Scenarios.test_reset_limit]

The hosts are names (localhost, 127.0.0.1): every worker runs here. The discovery script lists
the hosts of the epoch the log file has reached (one line per finished epoch).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

DRIVER = None
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'scenario_worker.py')


def discovery_script(path, log, schedule):
    """schedule: [(epoch, hosts), ..., (None, hosts)]: the hosts while the log has `epoch`
    lines; the last entry's at every other epoch."""
    lines = ['#!/bin/bash', 'epoch=0',
             'if [ -f %s ]; then epoch=$(wc -l < %s); fi' % (log, log), 'case "$epoch" in']
    for epoch, hosts in schedule:
        lines.append('  %s) %s ;;' % ('*' if epoch is None else epoch,
                                       '; '.join('echo %s' % h for h in hosts)))
    lines.append('esac')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    os.chmod(path, 0o755)


class Scenarios(unittest.TestCase):

    def run_job(self, schedule=None, hosts=None, exits=None, exit_mode='exception', min_np=2,
                max_np=4, reset_limit=None, cooldown=None, elastic_timeout=None, epochs=3,
                epoch_wait=0.0):
        work = tempfile.mkdtemp(prefix='riseml-elastic-scenario-')
        log = os.path.join(work, 'log.jsonl')
        command = [DRIVER, '--launcher', 'local', '--min-np', str(min_np), '--max-np', str(max_np),
                   '--grace', '10', '--stop-grace', '2']
        by_epoch = {}
        if schedule:
            script = os.path.join(work, 'discover.sh')
            discovery_script(script, log, schedule)
            command += ['--host-discovery-script', script, '--discovery-interval', '0.1']
            by_epoch = {('default' if e is None else str(e)): h for e, h in schedule}
        else:
            command += ['--hosts', ','.join(hosts)]
        if reset_limit is not None:
            command += ['--reset-limit', str(reset_limit)]
        if cooldown:
            command += ['--blacklist-cooldown-range', str(cooldown[0]), str(cooldown[1])]
        if elastic_timeout is not None:
            command += ['--elastic-timeout', str(elastic_timeout)]
        command += ['--', sys.executable, WORKER, '--log', log, '--epochs', str(epochs),
                    '--epoch-wait', str(epoch_wait), '--hosts-by-epoch', json.dumps(by_epoch),
                    '--exit', json.dumps(exits or {}), '--exit-mode', exit_mode]
        try:
            done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=200)
        except subprocess.TimeoutExpired as e:
            out = e.output.decode() if isinstance(e.output, bytes) else (e.output or '')
            self.fail('riseml-elastic ran past 200 s:\n' + out)
        results = []
        if os.path.exists(log):
            with open(log) as f:
                results = [json.loads(line) for line in f]
        print('$ ' + ' '.join(command) + '\n' + done.stdout + '\nexit status %d\nlog:\n%s'
              % (done.returncode, '\n'.join(map(str, results))), flush=True)
        shutil.rmtree(work, ignore_errors=True)  # what it held is printed above
        return done.returncode, done.stdout, results

    def check(self, result, **want):
        for key, value in want.items():
            self.assertEqual(result[key], value, '%s of %s' % (key, result))

    def test_hosts_added_and_removed(self):
        for slots, min_np, max_np in [(2, 2, 4), (1, 1, 2)]:
            a, b = 'localhost:%d' % slots, '127.0.0.1:%d' % slots
            status, _, results = self.run_job(schedule=[(0, [a]), (1, [a, b]), (None, [b])],
                                              min_np=min_np, max_np=max_np)
            self.assertEqual(status, 0)
            self.assertEqual(len(results), 3)
            self.check(results[0], start_rank=0, size=slots, host='localhost', rendezvous=1)
            self.check(results[1], start_rank=0, size=2 * slots, host='localhost', rendezvous=2)
            self.check(results[2], start_rank=slots, size=slots, host='127.0.0.1', rendezvous=3)

    def single_failure(self, **hosts):
        for mode in ['exception', 'kill']:
            status, out, results = self.run_job(exits={'1,0': [0]}, exit_mode=mode, **hosts)
            self.assertEqual(status, 0)
            self.assertEqual(len(results), 3)
            self.check(results[0], start_rank=0, size=4, rendezvous=1)
            self.check(results[1], start_rank=2, size=2, rendezvous=2)
            self.check(results[2], start_rank=2, size=2, rendezvous=2)
            # By its exit, or by a survivor's report that blames it, whichever comes first.
            self.assertRegex(out, r'node localhost is blacklisted \(rank (0 failed|\d blamed rank 0 )')

    def test_single_rank_failure(self):
        self.single_failure(schedule=[(None, ['localhost:2', '127.0.0.1:2'])])

    def test_fault_tolerance_without_scaling(self):
        self.single_failure(hosts=['localhost:2', '127.0.0.1:2'])

    def test_all_ranks_failure(self):
        status, out, _ = self.run_job(schedule=[(None, ['localhost:2', '127.0.0.1:2'])],
                                      exits={'1,0': [0, 1, 2, 3]})
        self.assertNotEqual(status, 0)
        self.assertIn('ending the job: no worker is left', out)

    def test_all_hosts_blacklisted(self):
        status, out, _ = self.run_job(schedule=[(None, ['localhost:2', '127.0.0.1:2'])],
                                      exits={'1,0': [0, 2]})
        self.assertNotEqual(status, 0)
        self.assertIn('node localhost is blacklisted', out)
        self.assertIn('node 127.0.0.1 is blacklisted', out)
        self.assertIn('ending the job:', out)

    def test_min_hosts_timeout(self):
        status, out, _ = self.run_job(schedule=[(None, ['localhost:2', '127.0.0.1:2'])],
                                      exits={'1,0': [0]}, min_np=4, max_np=4, elastic_timeout=1)
        self.assertNotEqual(status, 0)
        self.assertIn('fewer than the minimum of 4 workers (2) for 1.0 s (--elastic-timeout)', out)

    def test_reset_limit(self):
        schedule = [(0, ['localhost:2']), (1, ['localhost:2', '127.0.0.1:2']),
                    (None, ['127.0.0.1:2'])]
        status, out, _ = self.run_job(schedule=schedule, reset_limit=1)
        self.assertNotEqual(status, 0)
        self.assertIn('more than the reset limit of 1 (--reset-limit)', out)
        status, _, results = self.run_job(schedule=schedule, reset_limit=2)
        self.assertEqual(status, 0)
        self.assertEqual(len(results), 3)

    def test_blacklisted_host_comes_back_after_its_cooldown(self):
        # Start rank 3 fails in epoch 1: 127.0.0.1 is out for 2 s (the first cooldown of the
        # range [1, 2]); the job goes on with localhost's 2 workers, then 127.0.0.1 is back with
        # new ranks (4 and 5): the last epochs run on 4 workers again.
        status, out, results = self.run_job(
            schedule=[(None, ['localhost:2', '127.0.0.1:2'])], exits={'1,0': [3]},
            cooldown=(1, 2), epochs=12, epoch_wait=0.5)
        self.assertEqual(status, 0)
        self.assertEqual(len(results), 12)
        self.check(results[0], start_rank=0, size=4, rendezvous=1)
        self.check(results[1], start_rank=0, size=2, rendezvous=2)
        self.assertIn('node 127.0.0.1 is back after its cooldown', out)
        self.check(results[-1], start_rank=0, size=4, rendezvous=3)


if __name__ == '__main__':
    DRIVER = sys.argv.pop(1)
    unittest.main(verbosity=2)
