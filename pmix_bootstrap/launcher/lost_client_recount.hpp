// libpmix 4.2 takes a client whose connection closed without PMIx_Finalize for a dead process:
// it lowers its nspace's count of local processes, and fences of the whole job then complete
// without one rank's data, or never. That is wrong when the rank's process lives on and only a
// forked child of it had connected: `pytest --forked` forks one child per test, which
// initialises, runs the test and leaves with _exit. This gives the count back when the rank's
// process is alive and not exiting; when it is dying or dead, PMIx's lower count stands (the
// survivors' fences rely on it). "The rank's process" is the one riseml-launch started: under
// a wrapper (a shell script running python), a crashed python whose wrapper lives on is
// counted back too; the job then ends with the wrapper, or fences only among the survivors.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <string>
#include <vector>

namespace riseml::launch {

class LostClientRecount {
 public:
  // Watches the clients of `nspace`, registered with `local_processes` local processes, for
  // lost connections. Needs the PmixHostServer running; one at a time. Throws
  // std::runtime_error when PMIx refuses the event handler.
  LostClientRecount(std::string nspace, int local_processes);
  LostClientRecount(const LostClientRecount&) = delete;
  LostClientRecount& operator=(const LostClientRecount&) = delete;
  ~LostClientRecount();

  // The process riseml-launch started as `rank`.
  void set_process(int rank, pid_t pid);

  const std::string& nspace() const { return nspace_; }

  // On PMIx's thread: `rank`'s client lost its connection without PMIx_Finalize.
  void lost(int rank);

  // The count to give PMIx after a loss (public for the tests): `count`, what PMIx counted
  // before it, lowered as PMIx lowered it when the rank's process is dead or dying, kept when
  // it lives on. Given back every time, so that with losses of live and dead ranks in any
  // order PMIx ends at the right count.
  static int count_after_loss(int& count, bool process_alive);

  // Whether `pid`, a child of this process, is running and not exiting.
  static bool process_alive(pid_t pid);

 private:
  void restore_count(int count);

  std::string nspace_;
  std::mutex mutex_;
  int count_;                // what PMIx counts now, as far as this can tell
  std::vector<pid_t> pids_;  // by rank; 0: not started
};

}  // namespace riseml::launch
