# rmax-node: single-node kernels, one sub-command per file (its RMX_SUBCMD line registers it).
# Every .c file here is part of rmax-node, so that a new kernel's file needs no line here; the glob
# is checked again at each build (CONFIGURE_DEPENDS). Linked as objects, not through a static library,
# which would leave out a kernel's file since nothing references it.
file(GLOB RMAX_NODE_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
add_executable(rmax-node ${RMAX_NODE_SOURCES})
target_link_libraries(rmax-node PRIVATE rmx_common ${RMAX_BLAS_LIBRARY})
# Scalar replays must round like the vector kernels they check: no contraction into FMA.
set_source_files_properties(node/peakflops.c node/peakflops_kernels.c PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
# Measured loops run at full vector width (clones per ISA, picked at run time).
set_source_files_properties(node/cpurate_kernels.c PROPERTIES COMPILE_OPTIONS "-O3")
# STREAM's loops stay loops (no memcpy/memset substitution, whose stores may differ).
set_source_files_properties(node/stream_kernels.c PROPERTIES COMPILE_OPTIONS "-O3;-fno-tree-loop-distribute-patterns")
list(APPEND RMAX_EXECUTABLES rmax-node)
