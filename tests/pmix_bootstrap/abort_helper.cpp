// A PMIx client for the PMIx_Abort test: the rank given as argv[1] calls PMIx_Abort(7, ...),
// the others wait to be stopped. The bootstrap API has no abort, so this speaks PMIx directly.
#include <pmix.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  pmix_proc_t self;
  if (PMIx_Init(&self, nullptr, 0) != PMIX_SUCCESS) {
    std::fprintf(stderr, "abort_helper: PMIx_Init failed\n");
    return 1;
  }
  int aborting_rank = argc > 1 ? std::atoi(argv[1]) : 0;
  std::printf("helper rank=%u ready\n", self.rank);
  std::fflush(stdout);
  if (static_cast<int>(self.rank) == aborting_rank) {
    PMIx_Abort(7, "helper gives up", nullptr, 0);
  }
  while (true) pause();
}
