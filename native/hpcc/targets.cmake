# rmax-hpcc: HPC Challenge's RandomAccess, PTRANS and FFT, one sub-command per cmd_*.c file (its
# RMX_SUBCMD line registers it). Every .c file here is part of rmax-hpcc, linked as objects (see
# node/targets.cmake).
# FFT goes through FFTW and its MPI interface (Debian: libfftw3-dev, libfftw3-mpi-dev).
find_path(RMAX_FFTW_INCLUDE fftw3-mpi.h)
find_library(RMAX_FFTW_LIBRARY fftw3)
find_library(RMAX_FFTW_MPI_LIBRARY fftw3_mpi)
if(NOT RMAX_FFTW_INCLUDE OR NOT RMAX_FFTW_LIBRARY OR NOT RMAX_FFTW_MPI_LIBRARY)
    message(FATAL_ERROR "rmax-hpcc needs FFTW and its MPI interface: run scripts/install-system.sh "
                        "(Debian: apt-get install libfftw3-dev libfftw3-mpi-dev)")
endif()
file(GLOB RMAX_HPCC_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*.c)
add_executable(rmax-hpcc ${RMAX_HPCC_SOURCES})
target_include_directories(rmax-hpcc PRIVATE ${RMAX_FFTW_INCLUDE})
target_link_libraries(rmax-hpcc PRIVATE rmx_mpi rmx_common MPI::MPI_C ${RMAX_FFTW_MPI_LIBRARY} ${RMAX_FFTW_LIBRARY} m)
list(APPEND RMAX_EXECUTABLES rmax-hpcc)
