# The only place that decides how plugins, tools and tests are built.
#
#   mt_add_plugin(KIND NAME SOURCES ... ENTRY plugin.cpp [LIBS ...])   (MtPlugin.cmake, which
#     is also installed for out-of-tree plugins)
#     -> mt_<kind>_<name>_impl : static library (PIC) that unit tests link directly
#     -> mt_<kind>_<name>      : MODULE libmt_<kind>_<name>.so in lib/mt/plugins, holding the C entry
#   mt_add_tool(NAME SOURCES ... [LIBS ...])   -> bin/megatron-<name>
#   mt_add_test(NAME SOURCES ... [LIBS ...] [LABELS label] [ENV VAR=VALUE])
#     -> GoogleTest executable registered with ctest (ENV: one variable set for its tests)
#   mt_add_mpi_test(NAME SOURCES ... [LIBS ...] RANKS 2 4 ...) -> the same under mpiexec, NAME_npN

include(GNUInstallDirs)
include(MtPlugin)

function(mt_add_tool name)
    cmake_parse_arguments(T "" "" "SOURCES;LIBS" ${ARGN})
    set(exe megatron-${name})
    add_executable(${exe} ${T_SOURCES})
    target_link_libraries(${exe} PRIVATE mt_core ${T_LIBS})
    install(TARGETS ${exe} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
    # A tool is only usable with its plugins next to it.
    get_property(plugins GLOBAL PROPERTY MT_PLUGIN_TARGETS)
    if(plugins)
        add_dependencies(${exe} ${plugins})
    endif()
endfunction()

function(mt_add_test name)
    cmake_parse_arguments(T "" "ENV" "SOURCES;LIBS;LABELS" ${ARGN})
    add_executable(${name} ${T_SOURCES})
    target_link_libraries(${name} PRIVATE mt_core mt_test_support ${T_LIBS})
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    # One label: CMake 3.25's gtest_discover_tests splits a list of them into property names.
    # Listing the tests runs the program: 60 s, not 5, for sanitized builds on a busy machine.
    gtest_discover_tests(${name}
        DISCOVERY_MODE PRE_TEST
        DISCOVERY_TIMEOUT 60
        PROPERTIES LABELS "${T_LABELS}" ENVIRONMENT "${T_ENV}")
endfunction()

# mt_add_mpi_test(NAME SOURCES ... [LIBS ...] RANKS 2 4 ... [LABELS ...] [TIMEOUT seconds])
#   -> one GoogleTest executable (linked as mt_add_test's) and, for each N in RANKS, a ctest
#      NAME_npN that runs it under `mpiexec -n N` with OMP_NUM_THREADS=1, labelled "mpi".
#      gtest runs on every rank; mpiexec fails when any rank does. Without MPI: nothing.
# mt_mpiexec_flags(OUT): the flags mpiexec needs here: Open MPI's mpirun refuses more ranks than
# cores, and root, unless told (other mpiexecs do not know these flags).
function(mt_mpiexec_flags out)
    if(NOT DEFINED MT_MPIEXEC_FLAGS)
        set(flags "")
        execute_process(COMMAND ${MPIEXEC_EXECUTABLE} --version OUTPUT_VARIABLE version
                        ERROR_VARIABLE version)
        if(version MATCHES "Open MPI|OpenRTE|open-mpi")
            list(APPEND flags --oversubscribe)
            execute_process(COMMAND id -u OUTPUT_VARIABLE uid OUTPUT_STRIP_TRAILING_WHITESPACE
                            ERROR_QUIET)
            if(uid STREQUAL "0")
                list(APPEND flags --allow-run-as-root)
            endif()
        endif()
        set(MT_MPIEXEC_FLAGS "${flags}" CACHE INTERNAL "mt: flags mt_add_mpi_test gives mpiexec")
    endif()
    set(${out} ${MT_MPIEXEC_FLAGS} PARENT_SCOPE)
endfunction()

function(mt_add_mpi_test name)
    cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;RANKS;LABELS" ${ARGN})
    if(NOT MT_MPI_ENABLED)
        get_property(said GLOBAL PROPERTY MT_MPI_TESTS_SKIPPED_SAID)
        if(NOT said)
            message(STATUS "mt: MPI is off; the multi-rank tests (mt_add_mpi_test) are not built")
            set_property(GLOBAL PROPERTY MT_MPI_TESTS_SKIPPED_SAID ON)
        endif()
        return()
    endif()
    if(NOT T_RANKS)
        message(FATAL_ERROR "mt_add_mpi_test(${name}): RANKS is required")
    endif()
    if(NOT T_TIMEOUT)
        set(T_TIMEOUT 300)  # a rank that fails mid-collective leaves the others waiting
    endif()
    if(MT_SANITIZE_ADDRESS OR MT_SANITIZE_UNDEFINED OR MT_SANITIZE_THREAD)
        math(EXPR T_TIMEOUT "${T_TIMEOUT} * 4")  # sanitized ranks run several times slower
    endif()
    add_executable(${name} ${T_SOURCES})
    target_link_libraries(${name} PRIVATE mt_core mt_test_support ${T_LIBS})
    set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
    # Ranks get their world through make_world_communicator, which loads the mpi plugin.
    if(TARGET mt_comm_mpi)
        add_dependencies(${name} mt_comm_mpi)
    endif()
    mt_mpiexec_flags(flags)
    foreach(n ${T_RANKS})
        add_test(NAME ${name}_np${n}
            COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${n} ${flags}
                    ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${name}> ${MPIEXEC_POSTFLAGS})
        # A $TMPDIR of its own: Open MPI's mpirun makes its session directory there and races
        # another mpirun starting at the same moment (open-mpi/ompi#8510), as under ctest -j.
        set(session_parent ${CMAKE_BINARY_DIR}/mpiexec-tmp/${name}_np${n})
        file(MAKE_DIRECTORY ${session_parent})
        set_tests_properties(${name}_np${n} PROPERTIES
            ENVIRONMENT "OMP_NUM_THREADS=1;TMPDIR=${session_parent}"
            LABELS "mpi;${T_LABELS}"
            PROCESSORS ${n}
            TIMEOUT ${T_TIMEOUT})
    endforeach()
endfunction()
