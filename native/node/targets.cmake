# rmax-node: single-node kernels, one sub-command per file (see node/main.c).
add_executable(rmax-node node/main.c node/measure.c node/node_util.c node/peakflops.c node/peakflops_kernels.c
    node/cpurate.c node/cpurate_kernels.c
    node/dgemm.c node/stream.c node/stream_kernels.c node/memlat.c node/memcopy.c
    node/oslat.c node/oslat_proc.c node/oslat_ipc.c node/oslat_cacheline.c)
target_link_libraries(rmax-node PRIVATE rmx_common ${RMAX_BLAS_LIBRARY})
# Scalar replays must round like the vector kernels they check: no contraction into FMA.
set_source_files_properties(node/peakflops.c node/peakflops_kernels.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
# Measured loops run at full vector width (clones per ISA, picked at run time).
set_source_files_properties(node/cpurate_kernels.c PROPERTIES COMPILE_OPTIONS "-O3")
# STREAM's loops stay loops (no memcpy/memset substitution, whose stores may differ).
set_source_files_properties(node/stream_kernels.c PROPERTIES COMPILE_OPTIONS "-O3;-fno-tree-loop-distribute-patterns")
list(APPEND RMAX_EXECUTABLES rmax-node)
