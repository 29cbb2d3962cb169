# The MPI builds: every MPI executable (rmax-ranks, rmax-net, rmax-hpl, rmax-hpcc) is built once per
# MPI found, side by side; the node kernels, which have no MPI, once (docs/MPI.md).
#
#   openmpi  mpicc.openmpi (Debian's Open MPI)     rmax-net, ...: the plain names
#   mpich    mpicc.mpich   (Debian's MPICH)        rmax-net.mpich, ...
#   site     $RMAX_MPICC   (the site's own wrapper: Intel MPI, Cray, MVAPICH2, a module's mpicc)
#                                                  rmax-net.site, ...
# Without either Debian wrapper, the `mpicc` on PATH is the one build, under the plain names. The
# first build keeps the plain names, so that a machine with one MPI looks as it always did; each
# other one's executables end in .NAME. Every build's rmax-ranks knows its name and wrapper
# (`rmax-ranks --mpi-build`, read by src/rmax/native.py).
#
# A build's compile and link flags are its wrapper's own (`-showme` for Open MPI, `-show` for the
# MPICH family), as FindMPI reads them, but for several wrappers at once (FindMPI caches one).

# rmax_mpi_interface(NAME WRAPPER): the INTERFACE library rmx_mpi_flags_NAME with WRAPPER's flags;
# RMAX_MPI_LIBS_NAME: the -l libraries it names (which MPI library the build links).
function(rmax_mpi_interface name wrapper)
    execute_process(COMMAND ${wrapper} -showme OUTPUT_VARIABLE line RESULT_VARIABLE rc ERROR_QUIET
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(compile_opts "")
    if(NOT rc EQUAL 0 OR line STREQUAL "")
        execute_process(COMMAND ${wrapper} -show OUTPUT_VARIABLE line RESULT_VARIABLE rc ERROR_QUIET
                        OUTPUT_STRIP_TRAILING_WHITESPACE)
        # MPICH's MPI_STATUSES_IGNORE is the address 1 cast to MPI_Status *, which gcc 12 takes for
        # an empty array passed to MPI_Waitall (-Wstringop-overflow, a false alarm at every call).
        set(compile_opts -Wno-stringop-overflow)
    endif()
    if(NOT rc EQUAL 0 OR line STREQUAL "")
        message(FATAL_ERROR "${wrapper} answers neither -showme (Open MPI) nor -show (MPICH and its kin): "
                            "rmax cannot read the MPI build '${name}' flags from it")
    endif()
    separate_arguments(words UNIX_COMMAND "${line}")
    list(POP_FRONT words)   # the compiler the wrapper calls: rmax builds with its own
    set(includes "")
    set(defines "")
    set(dirs "")
    set(libs "")
    set(link_opts "")
    foreach(w IN LISTS words)
        if(w MATCHES "^-I(.+)")
            list(APPEND includes "${CMAKE_MATCH_1}")
        elseif(w MATCHES "^-D(.+)")
            list(APPEND defines "${CMAKE_MATCH_1}")
        elseif(w MATCHES "^-L(.+)")
            list(APPEND dirs "${CMAKE_MATCH_1}")
        elseif(w MATCHES "^-l(.+)")
            list(APPEND libs "${CMAKE_MATCH_1}")
        elseif(w MATCHES "^-Wl," OR w MATCHES "\\.(so|a)(\\.[0-9]+)*$")
            list(APPEND link_opts "${w}")
        elseif(w STREQUAL "-pthread")
            list(APPEND compile_opts "${w}")
            list(APPEND link_opts "${w}")
        else()
            list(APPEND compile_opts "${w}")
        endif()
    endforeach()
    if(NOT libs AND NOT link_opts)
        message(FATAL_ERROR "${wrapper} names no MPI library to link ('${line}')")
    endif()
    add_library(rmx_mpi_flags_${name} INTERFACE)
    target_include_directories(rmx_mpi_flags_${name} INTERFACE ${includes})
    target_compile_definitions(rmx_mpi_flags_${name} INTERFACE ${defines})
    target_compile_options(rmx_mpi_flags_${name} INTERFACE ${compile_opts})
    target_link_directories(rmx_mpi_flags_${name} INTERFACE ${dirs})
    target_link_libraries(rmx_mpi_flags_${name} INTERFACE ${libs} ${link_opts})
    set(RMAX_MPI_LIBS_${name} "${libs}" PARENT_SCOPE)
    message(STATUS "rmax MPI build '${name}': ${wrapper}")
endfunction()

set(RMAX_MPI_BUILDS "")
if(DEFINED ENV{RMAX_MPICC} AND NOT "$ENV{RMAX_MPICC}" STREQUAL "")
    find_program(RMAX_SITE_MPICC NAMES "$ENV{RMAX_MPICC}" NO_CACHE)
    if(NOT RMAX_SITE_MPICC)
        message(FATAL_ERROR "RMAX_MPICC=$ENV{RMAX_MPICC}: no such MPI compiler wrapper")
    endif()
endif()
foreach(build_wrapper openmpi=mpicc.openmpi mpich=mpicc.mpich)
    string(REPLACE "=" ";" pair "${build_wrapper}")
    list(GET pair 0 name)
    list(GET pair 1 wrapper)
    find_program(RMAX_MPICC_${name} NAMES ${wrapper} NO_CACHE)
    if(RMAX_MPICC_${name})
        list(APPEND RMAX_MPI_BUILDS ${name})
        set(RMAX_MPI_WRAPPER_${name} "${RMAX_MPICC_${name}}")
    endif()
endforeach()
if(NOT RMAX_MPI_BUILDS)
    find_program(RMAX_MPICC_default NAMES mpicc NO_CACHE)
    if(RMAX_MPICC_default)
        list(APPEND RMAX_MPI_BUILDS default)
        set(RMAX_MPI_WRAPPER_default "${RMAX_MPICC_default}")
    elseif(NOT RMAX_SITE_MPICC)
        message(FATAL_ERROR "no MPI compiler wrapper (mpicc.openmpi, mpicc.mpich or mpicc on PATH; or "
                            "RMAX_MPICC=/path/to/mpicc): run scripts/install-system.sh")
    endif()
endif()
if(RMAX_SITE_MPICC)
    list(APPEND RMAX_MPI_BUILDS site)
    set(RMAX_MPI_WRAPPER_site "${RMAX_SITE_MPICC}")
endif()
list(GET RMAX_MPI_BUILDS 0 RMAX_MPI_FIRST)
foreach(name IN LISTS RMAX_MPI_BUILDS)
    rmax_mpi_interface(${name} "${RMAX_MPI_WRAPPER_${name}}")
    if(name STREQUAL RMAX_MPI_FIRST)
        set(RMAX_MPI_SUFFIX_${name} "")
    else()
        set(RMAX_MPI_SUFFIX_${name} ".${name}")
    endif()
    # What every MPI kernel does around its measurements (rmx_mpirun.h), once per build.
    add_library(rmx_mpi_${name} STATIC ${CMAKE_CURRENT_LIST_DIR}/rmx_mpirun.c)
    target_include_directories(rmx_mpi_${name} PUBLIC ${CMAKE_CURRENT_LIST_DIR})
    target_link_libraries(rmx_mpi_${name} PUBLIC rmx_common rmx_mpi_flags_${name})
endforeach()

# rmax_mpi_executable(BASE SOURCES src... LIBRARIES lib...): BASE once per MPI build (BASE,
# BASE.mpich, ...), linked with LIBRARIES, in which `rmx_mpi` stands for that build's rmx_mpi_NAME,
# and with the build's MPI; RMX_MPI_BUILD and RMX_MPI_WRAPPER name the build in its code. Each
# target is appended to RMAX_EXECUTABLES.
function(rmax_mpi_executable base)
    cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;LIBRARIES")
    set(made "")
    foreach(name IN LISTS RMAX_MPI_BUILDS)
        set(target ${base}${RMAX_MPI_SUFFIX_${name}})
        add_executable(${target} ${arg_SOURCES})
        list(TRANSFORM arg_LIBRARIES REPLACE "^rmx_mpi$" "rmx_mpi_${name}" OUTPUT_VARIABLE libs)
        target_link_libraries(${target} PRIVATE ${libs} rmx_mpi_flags_${name})
        target_compile_definitions(${target} PRIVATE RMX_MPI_BUILD="${name}"
                                   RMX_MPI_WRAPPER="${RMAX_MPI_WRAPPER_${name}}")
        list(APPEND made ${target})
    endforeach()
    set(RMAX_EXECUTABLES ${RMAX_EXECUTABLES} ${made} PARENT_SCOPE)
endfunction()

# rmax_mpi_links(NAME LIBRARY OUT): OUT true when the shared LIBRARY (built against some MPI, as
# FFTW's MPI interface is) loads the same MPI library file as build NAME links: a library built
# for another MPI would load both MPIs into one process.
function(rmax_mpi_links name library out)
    set(${out} FALSE PARENT_SCOPE)
    list(GET RMAX_MPI_LIBS_${name} 0 mpilib)
    get_target_property(dirs rmx_mpi_flags_${name} INTERFACE_LINK_DIRECTORIES)
    find_library(mine NAMES ${mpilib} HINTS ${dirs} NO_CACHE)
    execute_process(COMMAND ldd ${library} OUTPUT_VARIABLE deps RESULT_VARIABLE rc ERROR_QUIET)
    if(NOT mine OR NOT rc EQUAL 0)
        return()
    endif()
    file(REAL_PATH "${mine}" mine)
    string(REGEX MATCHALL "=> (/[^ ]+)" paths "${deps}")
    foreach(p IN LISTS paths)
        string(REGEX REPLACE "^=> " "" p "${p}")
        file(REAL_PATH "${p}" p)
        if(p STREQUAL mine)
            set(${out} TRUE PARENT_SCOPE)
            return()
        endif()
    endforeach()
endfunction()
