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
list(REMOVE_ITEM RMAX_HPCC_SOURCES ${CMAKE_CURRENT_LIST_DIR}/cmd_fft.c)
# Once per MPI build (rmax-hpcc, rmax-hpcc.mpich, ...: native/mpi/builds.cmake); fft only in a build
# that has an FFTW MPI interface built for its MPI (Debian's is Open MPI's, so Debian's MPICH build
# has none): RMAX_FFTW_MPI_LIBRARY_<build> names one, else the system's is used where it fits.
rmax_mpi_executable(rmax-hpcc SOURCES ${RMAX_HPCC_SOURCES} LIBRARIES rmx_mpi rmx_common m)
foreach(name IN LISTS RMAX_MPI_BUILDS)
    set(fftw_mpi "${RMAX_FFTW_MPI_LIBRARY_${name}}")
    if(NOT fftw_mpi)
        rmax_mpi_links(${name} ${RMAX_FFTW_MPI_LIBRARY} fits)
        if(fits)
            set(fftw_mpi ${RMAX_FFTW_MPI_LIBRARY})
        endif()
    endif()
    if(fftw_mpi)
        target_sources(rmax-hpcc${RMAX_MPI_SUFFIX_${name}} PRIVATE ${CMAKE_CURRENT_LIST_DIR}/cmd_fft.c)
        target_include_directories(rmax-hpcc${RMAX_MPI_SUFFIX_${name}} PRIVATE ${RMAX_FFTW_INCLUDE})
        target_link_libraries(rmax-hpcc${RMAX_MPI_SUFFIX_${name}} PRIVATE ${fftw_mpi} ${RMAX_FFTW_LIBRARY})
    else()
        message(STATUS "rmax-hpcc${RMAX_MPI_SUFFIX_${name}}: no fft (${RMAX_FFTW_MPI_LIBRARY} is built for "
                       "another MPI; RMAX_FFTW_MPI_LIBRARY_${name} may name one built for ${name})")
    endif()
endforeach()
