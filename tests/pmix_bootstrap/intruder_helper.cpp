// A PMIx client for the refused-connection test: started as another user with the PMIx
// environment of one of a job's ranks, it tries to join that job as that rank. Prints "refused"
// when PMIx_Init fails (the server must not let another user in) and "accepted" otherwise.
#include <pmix.h>

#include <cstdio>

int main() {
  pmix_proc_t self;
  if (PMIx_Init(&self, nullptr, 0) != PMIX_SUCCESS) {
    std::printf("refused\n");
    return 0;
  }
  std::printf("accepted\n");
  PMIx_Finalize(nullptr, 0);
  return 0;
}
