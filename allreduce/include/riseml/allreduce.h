/* The collectives core's C interface. Every function returns a riseml_status; none lets a C++
 * exception through. After a failure riseml_last_error() (per thread) says what happened and
 * riseml_last_error_rank() names the rank at fault, or -1. */
#ifndef RISEML_ALLREDUCE_H
#define RISEML_ALLREDUCE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  RISEML_OK = 0,
  RISEML_ERR_INVALID_ARGUMENT = 1,
  RISEML_ERR_MISMATCH = 2,
  RISEML_ERR_PEER_FAILED = 3,
  RISEML_ERR_TIMEOUT = 4,
  RISEML_ERR_AUTHENTICATION = 5,
  RISEML_ERR_SETUP = 6,
  RISEML_ERR_SYSTEM = 7,
  RISEML_ERR_ABORTED = 8,
  RISEML_ERR_INTERNAL = 9
} riseml_status;

typedef enum {
  RISEML_FLOAT32 = 0,
  RISEML_FLOAT64 = 1,
  RISEML_FLOAT16 = 2,
  RISEML_BFLOAT16 = 3,
  RISEML_INT32 = 4,
  RISEML_INT64 = 5,
  RISEML_UINT8 = 6,
  RISEML_INT8 = 7,
  RISEML_INT16 = 8,
  RISEML_BOOL = 9 /* one byte, 0 or 1: sum/max are logical or, product/min logical and */
} riseml_datatype;

typedef enum {
  RISEML_SUM = 0,
  RISEML_AVERAGE = 1,
  RISEML_MIN = 2,
  RISEML_MAX = 3,
  RISEML_PRODUCT = 4
} riseml_reduce_op;

/* A rendezvous supplied by the caller (the bootstrap): functions return 0 on success. */
typedef struct riseml_rendezvous {
  void* user;
  int rank;
  int size;
  int (*put)(void* user, const char* key, const void* value, size_t len);
  int (*fence)(void* user, long timeout_ms);
  /* Writes at most `capacity` bytes to `value` and the full length to `*len`. */
  int (*get)(void* user, int rank, const char* key, void* value, size_t capacity, size_t* len,
             long timeout_ms);
  int (*job_secret)(void* user, void* value, size_t capacity, size_t* len);
} riseml_rendezvous;

typedef struct riseml_comm riseml_comm;

/* Collective. Options come from the RISEML_* environment variables. */
riseml_status riseml_comm_create(const riseml_rendezvous* rendezvous, riseml_comm** comm);
void riseml_comm_destroy(riseml_comm* comm);
int riseml_comm_rank(const riseml_comm* comm);
int riseml_comm_size(const riseml_comm* comm);

riseml_status riseml_allreduce(riseml_comm* comm, const void* in, void* out, size_t count,
                               riseml_datatype type, riseml_reduce_op op);
riseml_status riseml_broadcast(riseml_comm* comm, void* buffer, size_t count,
                               riseml_datatype type, int root);
riseml_status riseml_allgather(riseml_comm* comm, const void* in, void* out, size_t count,
                               riseml_datatype type);
riseml_status riseml_allgatherv(riseml_comm* comm, const void* in, void* out,
                                const size_t* counts, riseml_datatype type);
riseml_status riseml_reduce_scatter(riseml_comm* comm, const void* in, void* out, size_t count,
                                    riseml_datatype type, riseml_reduce_op op);
/* counts[r] elements for rank r; `in` holds sum(counts) elements, the blocks in rank order. */
riseml_status riseml_reduce_scatterv(riseml_comm* comm, const void* in, void* out,
                                     const size_t* counts, riseml_datatype type,
                                     riseml_reduce_op op);
/* `count` elements to and from every rank, blocks in rank order. */
riseml_status riseml_alltoall(riseml_comm* comm, const void* in, void* out, size_t count,
                              riseml_datatype type);
/* send_counts[r] elements to rank r, recv_counts[r] from it (one entry per rank each);
 * recv_counts[r] must equal send_counts[this rank] on rank r, else RISEML_ERR_MISMATCH. */
riseml_status riseml_alltoallv(riseml_comm* comm, const void* in, const size_t* send_counts,
                               void* out, const size_t* recv_counts, riseml_datatype type);
/* Adasum (adaptive summation, Horovod's op=Adasum) of `tensors` floating point tensors laid
 * out back to back, tensor_counts[i] elements each; see Communicator::adasum_allreduce.
 * Integer types: RISEML_ERR_INVALID_ARGUMENT. */
riseml_status riseml_adasum_allreduce(riseml_comm* comm, const void* in, void* out,
                                      const size_t* tensor_counts, size_t tensors,
                                      riseml_datatype type);
riseml_status riseml_barrier(riseml_comm* comm);

const char* riseml_last_error(void);
int riseml_last_error_rank(void);
const char* riseml_status_name(riseml_status status);

#ifdef __cplusplus
}
#endif

#endif /* RISEML_ALLREDUCE_H */
