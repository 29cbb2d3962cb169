# rmax-net: network and MPI microbenchmarks, one sub-command per cmd_*.c file (its RMX_SUBCMD line
# registers it). Every .c file here is part of rmax-net, linked as objects (see node/targets.cmake).
file(GLOB RMAX_NET_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
# Once per MPI build (rmax-net, rmax-net.mpich, ...: native/mpi/builds.cmake).
rmax_mpi_executable(rmax-net SOURCES ${RMAX_NET_SOURCES} LIBRARIES rmx_mpi rmx_common m)
