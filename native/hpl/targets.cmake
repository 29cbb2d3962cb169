# rmax-hpl: the HPL-compatible LU benchmark (one concern per source file).
# OpenMP: a threaded rank's team (update_team.c).
find_package(OpenMP REQUIRED COMPONENTS C)
# Once per MPI build (rmax-hpl, rmax-hpl.mpich, ...: native/mpi/builds.cmake).
rmax_mpi_executable(rmax-hpl SOURCES
    hpl/main.c hpl/memory.c hpl/input.c hpl/grid.c hpl/matgen.c
    hpl/pfact.c hpl/pfact_left.c hpl/pfact_crout.c hpl/pfact_right.c
    hpl/bcast.c hpl/bcast_1ring.c hpl/bcast_1ringm.c hpl/bcast_2ring.c hpl/bcast_2ringm.c
    hpl/bcast_long.c hpl/bcast_longm.c
    hpl/swap.c hpl/update.c hpl/update_team.c hpl/blas_threads.c hpl/lu.c hpl/solve.c hpl/check.c hpl/output.c
    LIBRARIES rmx_common OpenMP::OpenMP_C ${RMAX_BLAS_LIBRARY} m ${CMAKE_DL_LIBS})

# Unit tests of the plans (broadcast, row swaps) and the memory model, run as data without MPI_Init.
if(RMAX_BUILD_TESTS)
    add_executable(test-hpl tests/test_hpl.c
        hpl/bcast.c hpl/bcast_1ring.c hpl/bcast_1ringm.c hpl/bcast_2ring.c hpl/bcast_2ringm.c
        hpl/bcast_long.c hpl/bcast_longm.c hpl/swap.c hpl/memory.c)
    target_include_directories(test-hpl PRIVATE hpl)
    target_link_libraries(test-hpl PRIVATE rmx_common rmx_mpi_flags_${RMAX_MPI_FIRST})
endif()
