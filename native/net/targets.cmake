# rmax-net: network and MPI microbenchmarks, one sub-command per cmd_*.c file.
add_executable(rmax-net net/main.c net/repeat.c net/payload.c net/schedule.c net/output.c
    net/p2p.c net/netaddr.c net/sockets.c net/cmd_p2p.c net/coll_ops.c net/cmd_coll.c net/cmd_ring.c net/cmd_bisect.c net/cmd_matrix.c net/matrix_rounds.c net/matrix_suspects.c net/cmd_mbw.c
    net/cmd_mlat.c net/cmd_rma.c net/cmd_nbc.c
    net/groups.c net/colocate.c)
target_link_libraries(rmax-net PRIVATE rmx_mpi rmx_common MPI::MPI_C m)
list(APPEND RMAX_EXECUTABLES rmax-net)
