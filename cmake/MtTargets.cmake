# The only place that decides how plugins, tools and tests are built.
#
#   mt_add_plugin(KIND NAME SOURCES ... ENTRY plugin.cpp [LIBS ...])
#     -> mt_<kind>_<name>_impl : static library (PIC) that unit tests link directly
#     -> mt_<kind>_<name>      : MODULE libmt_<kind>_<name>.so in lib/mt/plugins, holding the C entry
#   mt_add_tool(NAME SOURCES ... [LIBS ...])   -> bin/megatron-<name>
#   mt_add_test(NAME SOURCES ... [LIBS ...] [LABELS ...] [ENV VAR=VALUE])
#     -> GoogleTest executable registered with ctest (ENV: one variable set for its tests)

include(GNUInstallDirs)

function(mt_add_plugin kind name)
    cmake_parse_arguments(P "" "ENTRY" "SOURCES;LIBS" ${ARGN})
    set(impl mt_${kind}_${name}_impl)
    add_library(${impl} STATIC ${P_SOURCES})
    target_link_libraries(${impl} PUBLIC mt_core ${P_LIBS})
    target_include_directories(${impl} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})

    set(mod mt_${kind}_${name})
    add_library(${mod} MODULE ${P_ENTRY})
    target_link_libraries(${mod} PRIVATE ${impl})
    set_target_properties(${mod} PROPERTIES
        OUTPUT_NAME mt_${kind}_${name}
        PREFIX lib
        LIBRARY_OUTPUT_DIRECTORY ${MT_PLUGIN_OUTPUT_DIR}
        BUILD_RPATH "$ORIGIN/../.."
        INSTALL_RPATH "$ORIGIN/../..")
    # Only mt_plugin_entry leaves the .so (libstdc++ would otherwise export weak template
    # instantiations that could bind across plugins).
    target_link_options(${mod} PRIVATE -Wl,--no-undefined
        -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/plugin_exports.map)
    set_property(TARGET ${mod} APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/plugin_exports.map)
    install(TARGETS ${mod} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/mt/plugins)
    set_property(GLOBAL APPEND PROPERTY MT_PLUGIN_TARGETS ${mod})
endfunction()

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
    gtest_discover_tests(${name}
        DISCOVERY_MODE PRE_TEST
        PROPERTIES LABELS "${T_LABELS}" ENVIRONMENT "${T_ENV}")
endfunction()
