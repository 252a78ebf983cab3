#pragma once
// GCNPART_HD marks functions usable from host and device code; plain inline under g++.
#if defined(__CUDACC__)
#define GCNPART_HD __host__ __device__ __forceinline__
#else
#define GCNPART_HD inline
#endif
