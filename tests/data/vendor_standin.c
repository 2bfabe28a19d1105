/* Stand-in for libcublas / libcudnn where the real one is not installed: it exports the entry
 * symbol the planted kernels call, so linking and the NEEDED/symbol checks are exercised as with
 * the real library. Built by tests/test_binary_check.py with -DSTANDIN_CUBLAS or -DSTANDIN_CUDNN. */
#ifdef STANDIN_CUBLAS
int cublasCreate_v2(void** handle) { *handle = 0; return 0; }
#endif
#ifdef STANDIN_CUDNN
int cudnnCreate(void** handle) { *handle = 0; return 0; }
#endif
