/* A PMIx client for the testbed's end-to-end tests: each rank Puts its host name, Fences with
 * data collection, then Gets every peer's. Across two node namespaces this only succeeds when
 * Slurm's pmix plugin exchanges data between the slurmd of both nodes.
 * Prints one line: "pmix_fence rank=R size=N host=H peers=H0,H1,..."; exits 1 on any failure. */
#define _GNU_SOURCE /* pmix.h uses strdup, setenv, strncasecmp */
#include <pmix.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fail(const char *what, pmix_status_t rc) {
  fprintf(stderr, "pmix_fence: %s failed: %s\n", what, PMIx_Error_string(rc));
  return 1;
}

int main(void) {
  pmix_proc_t me, wildcard, peer;
  pmix_value_t value, *got = NULL;
  pmix_info_t collect;
  pmix_status_t rc;
  char host[256] = {0};
  char peers[4096] = {0};
  uint32_t size;
  bool yes = true;

  if ((rc = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS) return fail("PMIx_Init", rc);
  PMIX_PROC_CONSTRUCT(&wildcard);
  PMIX_LOAD_PROCID(&wildcard, me.nspace, PMIX_RANK_WILDCARD);
  if ((rc = PMIx_Get(&wildcard, PMIX_JOB_SIZE, NULL, 0, &got)) != PMIX_SUCCESS)
    return fail("PMIx_Get(PMIX_JOB_SIZE)", rc);
  size = got->data.uint32;
  PMIX_VALUE_RELEASE(got);

  gethostname(host, sizeof host - 1);
  PMIX_VALUE_CONSTRUCT(&value);
  value.type = PMIX_STRING;
  value.data.string = host;
  if ((rc = PMIx_Put(PMIX_GLOBAL, "riseml.e2e.host", &value)) != PMIX_SUCCESS) return fail("PMIx_Put", rc);
  if ((rc = PMIx_Commit()) != PMIX_SUCCESS) return fail("PMIx_Commit", rc);
  PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
  if ((rc = PMIx_Fence(&wildcard, 1, &collect, 1)) != PMIX_SUCCESS) return fail("PMIx_Fence", rc);

  for (uint32_t r = 0; r < size; ++r) {
    PMIX_LOAD_PROCID(&peer, me.nspace, r);
    if ((rc = PMIx_Get(&peer, "riseml.e2e.host", NULL, 0, &got)) != PMIX_SUCCESS) return fail("PMIx_Get(peer)", rc);
    if (got->type != PMIX_STRING) {
      fprintf(stderr, "pmix_fence: rank %u's value is not a string\n", r);
      return 1;
    }
    if (r > 0) strncat(peers, ",", sizeof peers - strlen(peers) - 1);
    strncat(peers, got->data.string, sizeof peers - strlen(peers) - 1);
    PMIX_VALUE_RELEASE(got);
  }
  printf("pmix_fence rank=%u size=%u host=%s peers=%s\n", me.rank, size, host, peers);
  fflush(stdout);
  if ((rc = PMIx_Finalize(NULL, 0)) != PMIX_SUCCESS) return fail("PMIx_Finalize", rc);
  return 0;
}
