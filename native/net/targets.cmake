# rmax-net: network and MPI microbenchmarks, one sub-command per cmd_*.c file (its RMX_SUBCMD line
# registers it). Every .c file here is part of rmax-net, linked as objects (see node/targets.cmake).
file(GLOB RMAX_NET_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
add_executable(rmax-net ${RMAX_NET_SOURCES})
target_link_libraries(rmax-net PRIVATE rmx_mpi rmx_common MPI::MPI_C m)
list(APPEND RMAX_EXECUTABLES rmax-net)
